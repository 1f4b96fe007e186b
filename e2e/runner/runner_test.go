// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/settings"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/reports"
)

// The suites get one settings file: the loaded copies, the run's id, the
// exploration settings with an absolute report directory (the suites run
// in their package directories), and what an existing cluster allows.
func TestSuiteSettings(t *testing.T) {
	t.Chdir(t.TempDir())
	wd, _ := filepath.Abs(".")
	l := loadedPlan{candidate: "/o/loaded/candidate", fleet: "/o/loaded/fleet.yaml", settings: filepath.Join(wd, "settings.json")}
	spec := Spec{ID: "gpupool-x", Out: "out", Explore: Exploration{Seed: 7, Budget: "10/5s"}, DisruptiveNodes: " a, b,", Existing: &cluster.Existing{}}
	want := settings.Settings{RunID: "gpupool-x", Fleet: l.fleet, Candidate: l.candidate, DisruptiveNodes: []string{"a", "b"},
		Explore: settings.Explore{Seed: 7, Budget: "10/5s", ReportDir: filepath.Join(wd, "out", "counterexamples")}}
	require.NoError(t, suiteSettings(spec, l).WriteFile(l.settings))
	got, err := settings.ReadFile(l.settings)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	require.NoError(t, os.WriteFile(l.settings, []byte(`{"runID": "x", "fleat": "f"}`), 0o644))
	_, err = settings.ReadFile(l.settings)
	assert.ErrorContains(t, err, `unknown field "fleat"`)
	assert.ErrorContains(t, err, l.settings)
}

// Checks leave their namespaces behind only in a cluster that goes when
// the run ends: never in one the run attached to, nor in one it keeps.
func TestOnlyAClusterThatGoesIsDisposable(t *testing.T) {
	l := loadedPlan{}
	assert.True(t, suiteSettings(Spec{Out: "out"}, l).Disposable, "a cluster the run made")
	assert.False(t, suiteSettings(Spec{Out: "out", Keep: true}, l).Disposable, "--keep-cluster")
	assert.False(t, suiteSettings(Spec{Out: "out", Existing: &cluster.Existing{}}, l).Disposable, "--kubeconfig")
}

// A check only another provider makes is not in the run's results: it was
// skipped by design, not hidden.
func TestOnProviderLeavesOutOtherProvidersChecks(t *testing.T) {
	cs := []reports.CheckResult{{ID: "kubelet.allocates-distinct-gpus"}, {ID: "pool.sku-isolation"}, {ID: "not-a-catalog-check"}}
	var ids []string
	for _, c := range onProvider(cs, "embedded") {
		ids = append(ids, c.ID)
	}
	if want := []string{"pool.sku-isolation", "not-a-catalog-check"}; !slices.Equal(ids, want) {
		t.Errorf("on embedded: %v, want %v", ids, want)
	}
	if got := onProvider(cs, "kind"); len(got) != 3 {
		t.Errorf("on kind: %v, want all three", got)
	}
	// On a cluster gpupool did not make, a check that needs the
	// autoscaler is left out when skipped (no Karpenter of the run's
	// there), and kept with its verdict when the run's Karpenter made it.
	cs = append(cs, reports.CheckResult{ID: "autoscaling.pool-limit-holds", Result: "skip"})
	for provider, want := range map[string]int{"embedded": 3, "kind": 4, "kubeconfig": 2} {
		if got := onProvider(cs, provider); len(got) != want {
			t.Errorf("on %s: %v, want %d", provider, got, want)
		}
	}
	cs[len(cs)-1].Result = "pass"
	if got := onProvider(cs, "kubeconfig"); len(got) != 3 {
		t.Errorf("on kubeconfig, made by the run's Karpenter: %v, want 3", got)
	}
}

// The suites of a phase run side by side, at most parallelism at once;
// phases in order; a suite in no phase alone, last; parallelism 1 keeps
// the order of a run that takes the suites one at a time.
func TestSchedule(t *testing.T) {
	s := func(name string, phase int) *suite.Suite { return &suite.Suite{Name: name, Phase: phase} }
	in := []*suite.Suite{s("stray", 0), s("c", 2), s("a", 1), s("d", 2), s("b", 1), s("e", 2)}
	names := func(phases [][]*suite.Suite) [][]string {
		var out [][]string
		for _, p := range phases {
			var n []string
			for _, s := range p {
				n = append(n, s.Name)
			}
			out = append(out, n)
		}
		return out
	}
	assert.Equal(t, [][]string{{"a", "b"}, {"c", "d", "e"}, {"stray"}}, names(schedule(in, 0)))
	assert.Equal(t, [][]string{{"a", "b"}, {"c", "d"}, {"e"}, {"stray"}}, names(schedule(in, 2)))
	assert.Equal(t, [][]string{{"a"}, {"b"}, {"c"}, {"d"}, {"e"}, {"stray"}}, names(schedule(in, 1)))
}
