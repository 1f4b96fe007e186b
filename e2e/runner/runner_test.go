package runner

import (
	"path/filepath"
	"slices"
	"testing"

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
