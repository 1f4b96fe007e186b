package scale

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPickKeepsTheMixInEveryStretch(t *testing.T) {
	w := &Workload{Spec: WorkloadSpec{Mix: []MixEntry{{Pool: "a", Weight: 3}, {Pool: "b", Weight: 1}}}}
	counts := map[int]int{}
	for i := 0; i < 8; i++ {
		counts[w.Pick(i)]++
	}
	assert.Equal(t, map[int]int{0: 6, 1: 2}, counts)
	assert.Equal(t, []int{0, 0, 1, 0}, []int{w.Pick(0), w.Pick(1), w.Pick(2), w.Pick(3)}, "interleaved by weight")
}

func TestWorkloadsInTheRepoLoad(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "manifests", "workloads", "*.yaml"))
	require.NotEmpty(t, files)
	for _, f := range files {
		_, err := LoadWorkload(f)
		assert.NoError(t, err, f)
	}
}

func TestBadWorkloadsNameTheField(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"unknown field", "apiVersion: gpupool.dev/v1alpha1\nkind: Workload\nmetadata: {name: w}\nspec: {mix: [{pool: a, weight: 1, gpus: 2}], phases: [{name: b, pods: 1}]}\n", "gpus"},
		{"unknown shape", "apiVersion: gpupool.dev/v1alpha1\nkind: Workload\nmetadata: {name: w}\nspec: {mix: [{pool: a, weight: 1, shape: huge}], phases: [{name: b, pods: 1}]}\n", `spec.mix[0].shape: unknown shape "huge"`},
		{"zero weight", "apiVersion: gpupool.dev/v1alpha1\nkind: Workload\nmetadata: {name: w}\nspec: {mix: [{pool: a}], phases: [{name: b, pods: 1}]}\n", "spec.mix[0].weight: must be >= 1"},
		{"churn without rate", "apiVersion: gpupool.dev/v1alpha1\nkind: Workload\nmetadata: {name: w}\nspec: {mix: [{pool: a, weight: 1}], phases: [{name: c, duration: 60s}]}\n", "spec.phases[0] (c).rate"},
		{"bad duration", "apiVersion: gpupool.dev/v1alpha1\nkind: Workload\nmetadata: {name: w}\nspec: {mix: [{pool: a, weight: 1}], phases: [{name: c, rate: 1, duration: soon}]}\n", "want a duration like 60s"},
		{"empty burst", "apiVersion: gpupool.dev/v1alpha1\nkind: Workload\nmetadata: {name: w}\nspec: {mix: [{pool: a, weight: 1}], phases: [{name: b}]}\n", "spec.phases[0] (b).pods"},
		{"fill in churn", "apiVersion: gpupool.dev/v1alpha1\nkind: Workload\nmetadata: {name: w}\nspec: {mix: [{pool: a, weight: 1}], phases: [{name: c, rate: 1, duration: 5s, bypassScheduler: true}]}\n", "spec.phases[0] (c): bypassScheduler and livePodsPerNode are for bursts"},
		{"both sizes", "apiVersion: gpupool.dev/v1alpha1\nkind: Workload\nmetadata: {name: w}\nspec: {mix: [{pool: a, weight: 1}], phases: [{name: f, pods: 5, livePodsPerNode: 5}]}\n", "spec.phases[0] (f): set pods or livePodsPerNode, not both"},
		{"fill with nothing to place", "apiVersion: gpupool.dev/v1alpha1\nkind: Workload\nmetadata: {name: w}\nspec: {mix: [{pool: a, weight: 1, shape: untolerated}], phases: [{name: f, pods: 5, bypassScheduler: true}]}\n", "spec.phases[0] (f).bypassScheduler: binds only well-formed pods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".yaml")
			require.NoError(t, os.WriteFile(path, []byte(tc.body), 0o644))
			_, err := LoadWorkload(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
