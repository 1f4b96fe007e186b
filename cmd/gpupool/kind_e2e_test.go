//go:build e2e && kind

// End-to-end tests that need a kind cluster (a real kubelet): run by
// `make test-kind` (go test -tags 'e2e kind' ./cmd/gpupool).
package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/reports"
)

// --simulate-pools with --kwok-image and --fakegpu-image runs the
// simulated stack inside the cluster, as a cluster far bigger than this
// machine needs: here a kind cluster 'gpupool up' made with only CPU
// nodes, whose node already holds the images (elsewhere they are pulled).
// The reference fleet joins, looked after by a kwok and a fakegpu
// controller running as Deployments in a namespace of the run's; every
// check passes, the disruptive ones included; nothing of the run's runs on
// this machine; afterwards the cluster has exactly the objects it had. A
// scale run of 200 nodes does the same.
func TestSimulatedStackRunsInTheCluster(t *testing.T) {
	dir, state, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	fleetFile := cpuOnlyFleet(t, dir)
	images := map[string]string{}
	b, err := os.ReadFile(harness.KindImagesFile())
	require.NoError(t, err, "make build-kind writes the images")
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			images[k] = v
		}
	}
	require.NotEmpty(t, images["kwok"])
	require.NotEmpty(t, images["fakegpu-controller"])

	env := append(os.Environ(), "GPUPOOL_STATE="+state, "TMPDIR="+tmp)
	kubeconfig, stopUp := upCluster(t, gpupoolBin, repoRoot, env, "--provider", "kind", "--fleet", fleetFile)
	before := clusterObjects(t, kubeconfig)

	r := invoke(t, gpupoolBin, repoRoot, env, state, "run", "--kubeconfig", kubeconfig, "--simulate-pools",
		"--kwok-image", images["kwok"], "--fakegpu-image", images["fakegpu-controller"], "--explore-budget", "20/10s")
	require.Equal(t, 0, r.exit)
	s, err := reports.ReadSummary(r.out)
	require.NoError(t, err)
	assert.Equal(t, "pass", s.Result)
	for _, c := range s.Checks {
		assert.Equal(t, "pass", c.Result, c.ID)
	}
	assert.Regexp(t, `simulated stack: kwok and fakegpu controllers running in .* \(namespace gpupool-sim-[0-9a-f]+\)`, r.stderr)
	assert.Contains(t, r.stderr, "simulated nodes joined")
	assert.Regexp(t, `removed the [1-9][0-9]* objects run`, r.stderr)
	assert.Equal(t, before, clusterObjects(t, kubeconfig), "the run left objects behind, or removed some")
	assertNoKwokOf(t, "") // none ran here

	// A scale run the same way: nodes looked after from inside the
	// cluster, the contract held in bulk, nothing left behind. A fifth of
	// scale-200 and of the correctness workload: the in-cluster wiring is
	// what this proves (200 nodes took 3.5 min here, 1,000 pods bound at
	// kind's scheduler pace); 200 nodes in bulk are make test-scale's.
	fleet, workload := fifthOfScale200(t, dir)
	sr := invoke(t, gpupoolBin, repoRoot, env, state, "scale", "--kubeconfig", kubeconfig,
		"--kwok-image", images["kwok"], "--fakegpu-image", images["fakegpu-controller"],
		"--fleets", fleet, "--workload", workload, "--out", t.TempDir())
	require.Equal(t, 0, sr.exit)
	assert.Contains(t, sr.stderr, "simulated stack: kwok and fakegpu controllers running in")
	assert.Contains(t, sr.stderr, "40 simulated nodes joined")
	assert.Regexp(t, `phase burst: .* 0 contract violations`, sr.stderr)
	assert.Equal(t, before, clusterObjects(t, kubeconfig), "the scale run left objects behind, or removed some")
	assertNoKwokOf(t, "")

	stopUp()
	assertNothingLeft(t, state, "")
}

// fifthOfScale200 writes the built-in fleet scale-200 with a fifth of its
// nodes (40) and the correctness workload with a fifth of its burst and
// churn, and returns their paths.
func fifthOfScale200(t *testing.T, dir string) (fleet, workload string) {
	t.Helper()
	fifth := func(src, dst string, field *regexp.Regexp) string {
		name := strings.TrimSuffix(dst, ".yaml")
		b, err := os.ReadFile(filepath.Join(repoRoot, "manifests", src))
		require.NoError(t, err)
		n := 0
		out := field.ReplaceAllStringFunc(string(b), func(m string) string {
			sub := field.FindStringSubmatch(m)
			v, err := strconv.Atoi(sub[2])
			require.NoError(t, err)
			require.Zero(t, v%5, "%s: %s is not a multiple of 5", src, m)
			n++
			return sub[1] + strconv.Itoa(v/5) + sub[3]
		})
		require.NotZero(t, n, "%s: nothing matched %s", src, field)
		out = regexp.MustCompile(`(?m)^(  name: ).*$`).ReplaceAllString(out, "${1}"+name) // metadata.name
		p := filepath.Join(dir, dst)
		require.NoError(t, os.WriteFile(p, []byte(out), 0o644))
		return p
	}
	fleet = fifth("fleets/scale-200.yaml", "scale-40.yaml", regexp.MustCompile(`(\bnodes: )(\d+)()`))
	workload = fifth("workloads/correctness.yaml", "correctness-fifth.yaml", regexp.MustCompile(`(\b(?:pods|duration): )(\d+)(s?\n)`))
	return fleet, workload
}
