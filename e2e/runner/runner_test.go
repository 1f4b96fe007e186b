package runner

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/reports"
)

// The suite binary gets the exploration settings as flags; a zero seed is
// left to the suite to draw, and the report directory is absolute, as the
// suite may run elsewhere.
func TestExplorationArgs(t *testing.T) {
	t.Chdir(t.TempDir())
	wd, _ := filepath.Abs(".")
	got := Exploration{}.args("out/counterexamples")
	want := []string{"--gpupool.report-dir", filepath.Join(wd, "out", "counterexamples")}
	if !slices.Equal(got, want) {
		t.Errorf("no settings: %v, want %v", got, want)
	}
	got = Exploration{Seed: 7, Budget: "10/5s"}.args("/r")
	want = []string{"--gpupool.report-dir", "/r", "--gpupool.explore-seed", "7", "--gpupool.explore-budget", "10/5s"}
	if !slices.Equal(got, want) {
		t.Errorf("seed and budget: %v, want %v", got, want)
	}
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
