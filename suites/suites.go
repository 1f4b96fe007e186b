// Package suites lists every suite package, in the order a run takes them:
// the gpupool binary links them all.
package suites

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/suites/access"
	"github.com/gpupool/gpupool/suites/admission"
	"github.com/gpupool/gpupool/suites/dra"
	"github.com/gpupool/gpupool/suites/explore"
	"github.com/gpupool/gpupool/suites/health"
	"github.com/gpupool/gpupool/suites/kubelet"
	"github.com/gpupool/gpupool/suites/mig"
	"github.com/gpupool/gpupool/suites/pending"
	"github.com/gpupool/gpupool/suites/pool"
	"github.com/gpupool/gpupool/suites/runtimeclass"
	"github.com/gpupool/gpupool/suites/security"
	"github.com/gpupool/gpupool/suites/sharing"
)

// All is every suite, sorted by name (go test ./suites/... takes them in
// the same order).
var All = []*suite.Suite{
	access.Suite, admission.Suite, dra.Suite, explore.Suite, health.Suite, kubelet.Suite, mig.Suite,
	pending.Suite, pool.Suite, runtimeclass.Suite, security.Suite, sharing.Suite,
}

// Select returns the suites a comma-separated list names: suite names
// ("pool,kubelet"), or the package patterns earlier versions took
// ("./suites/...", "./suites/kubelet"). Empty selects all.
func Select(list string) ([]*suite.Suite, error) {
	if strings.TrimSpace(list) == "" {
		return All, nil
	}
	byName := map[string]*suite.Suite{}
	var names []string
	for _, s := range All {
		byName[s.Name] = s
		names = append(names, s.Name)
	}
	sort.Strings(names)
	seen := map[string]bool{}
	var out []*suite.Suite
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSuffix(strings.TrimSpace(item), "/")
		if item == "" {
			continue
		}
		if item == "./suites/..." || item == "suites/..." || item == "all" {
			return All, nil
		}
		s, ok := byName[path.Base(item)]
		if !ok {
			return nil, fmt.Errorf("--suites: no suite %q; the suites are %s", item, strings.Join(names, ", "))
		}
		if !seen[s.Name] {
			seen[s.Name] = true
			out = append(out, s)
		}
	}
	return out, nil
}
