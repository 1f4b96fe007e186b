// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

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
	"github.com/gpupool/gpupool/suites/autoscaling"
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
	access.Suite, admission.Suite, autoscaling.Suite, dra.Suite, explore.Suite, health.Suite, kubelet.Suite, mig.Suite,
	pending.Suite, pool.Suite, runtimeclass.Suite, security.Suite, sharing.Suite,
}

// phases is the schedule of a run: each phase's suites run side by side
// on one cluster, as no check of one can change a verdict of another; the
// phases run in this order. What each suite's checks place, fill and
// change decides (an audit of every check, 2026-12-04):
var phases = [][]*suite.Suite{
	// No node written, a unit or two per pool: admission and security
	// mostly dry-run; pool, runtimeclass and access place one or two
	// well-formed pods per pool and nodeName pods that ask for no GPU.
	{admission.Suite, security.Suite, pool.Suite, runtimeclass.Suite, access.Suite},
	// Disjoint pools: health changes the H100 exclusive pool's plugin
	// and one node's health, mig relabels one A100 node.
	{health.Suite, mig.Suite},
	// Each fills whole pools or nodes, not the other's: sharing the first
	// H100 exclusive node and the time-sliced L4s, dra the DRA L4s and the
	// last two H100 exclusive nodes (one migrated, one keeps a pod).
	{sharing.Suite, dra.Suite},
	// A snapshot of every node, pod and claim explains its Pending pods.
	{pending.Suite},
	// kubelet (kind only) enlists the real node into pools and takes it
	// out again; autoscaling makes nodes and leaves Karpenter to remove
	// them (a minute or so), node writes that would reset every earlier
	// suite's wait for a scheduler verdict to stand (expect's finality:
	// seen in a mutant whose tenant pods stay Pending).
	{kubelet.Suite, autoscaling.Suite},
	// Last: pods on every GPU node, the autoscaled pools' too, aimed
	// anywhere a tenant can aim them. Its verdicts are the scheduler's
	// first word, which node writes do not reset, and its residents have
	// Karpenter make a node of each autoscaled pool, which the
	// autoscaling checks must find at zero.
	{explore.Suite},
}

func init() {
	for i, phase := range phases {
		for _, s := range phase {
			s.Phase = i + 1
		}
	}
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
