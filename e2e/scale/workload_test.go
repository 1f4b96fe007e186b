// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/fakegpu"
)

func TestPickKeepsTheMixInEveryStretch(t *testing.T) {
	mix := []MixEntry{{Pool: "a", Weight: 3}, {Pool: "b", Weight: 1}}
	c := cycleOf(mix, func(int) bool { return true })
	pick := func(i int) int { return c[i%len(c)] }
	counts := map[int]int{}
	for i := 0; i < 8; i++ {
		counts[pick(i)]++
	}
	assert.Equal(t, map[int]int{0: 6, 1: 2}, counts)
	assert.Equal(t, []int{0, 0, 1, 0}, []int{pick(0), pick(1), pick(2), pick(3)}, "interleaved by weight")
}

func TestWorkloadsInTheRepoLoad(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "manifests", "workloads", "*.yaml"))
	require.NotEmpty(t, files)
	for _, f := range files {
		_, err := LoadWorkload(f)
		assert.NoError(t, err, f)
	}
}

func TestGoodWorkloadParses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: gpupool.dev/v1alpha1
kind: Workload
metadata: {name: w}
spec:
  mix: [{pool: a, weight: 1}]
  threshold:
    nodesReady: {max: 60s, minNodes: 10000}
    nodesNotReady: {max: 0}
    controlPlaneRSS: {max: 6Gi, minNodes: 10000, minPods: 50000}
  phases:
    - {opcode: burst, name: b, pods: 10, rate: 5, threshold: {schedulingThroughput: {min: 300, minNodes: 5000, maxNodes: 9999}}}
    - {opcode: churn, name: c, rate: 2, duration: 5s, deletePending: true, threshold: {createToScheduledP99: {max: 5s}}}
    - {opcode: fill, name: f, livePodsPerNode: 2, threshold: {mutatingP99: {max: 1s}}}
`), 0o644))
	w, err := LoadWorkload(path)
	require.NoError(t, err)
	ph := w.Spec.Phases
	assert.Equal(t, []string{KindBurst, KindChurn, KindFill}, []string{ph[0].Kind(), ph[1].Kind(), ph[2].Kind()})
	assert.True(t, ph[1].Churn())
	assert.True(t, ph[2].Fill())
	assert.Equal(t, 300.0, ph[0].Threshold.SchedulingThroughput.Min)
	assert.Equal(t, Scope{MinNodes: 5000, MaxNodes: 9999}, ph[0].Threshold.SchedulingThroughput.Scope)
	assert.Equal(t, 5*time.Second, ph[1].Threshold.CreateToScheduledP99.Max.Duration)
	assert.Equal(t, int64(6<<30), w.Spec.Threshold.ControlPlaneRSS.Max.Value())
	assert.Equal(t, 0, *w.Spec.Threshold.NodesNotReady.Max)
}

func TestBadWorkloadsNameTheField(t *testing.T) {
	dir := t.TempDir()
	const head = "apiVersion: gpupool.dev/v1alpha1\nkind: Workload\nmetadata: {name: w}\n"
	for _, tc := range []struct{ name, body, want string }{
		{"unknown field", head + "spec: {mix: [{pool: a, weight: 1, gpus: 2}], phases: [{opcode: burst, name: b, pods: 1}]}\n", "gpus"},
		{"unknown shape", head + "spec: {mix: [{pool: a, weight: 1, shape: huge}], phases: [{opcode: burst, name: b, pods: 1}]}\n", `spec.mix[0].shape: unknown shape "huge"`},
		{"zero weight", head + "spec: {mix: [{pool: a}], phases: [{opcode: burst, name: b, pods: 1}]}\n", "spec.mix[0].weight: must be >= 1"},
		{"missing opcode", head + "spec: {mix: [{pool: a, weight: 1}], phases: [{name: b, pods: 1}]}\n", "spec.phases[0] (b).opcode: required (one of burst, churn, fill, autoscale)"},
		{"unknown opcode", head + "spec: {mix: [{pool: a, weight: 1}], phases: [{opcode: blast, name: b, pods: 1}]}\n", `spec.phases[0] (b).opcode: unknown opcode "blast" (known: burst, churn, fill, autoscale)`},
		{"bypassScheduler is gone", head + "spec: {mix: [{pool: a, weight: 1}], phases: [{opcode: burst, name: b, pods: 1, bypassScheduler: true}]}\n", "bypassScheduler"},
		{"churn without rate", head + "spec: {mix: [{pool: a, weight: 1}], phases: [{opcode: churn, name: c, duration: 60s}]}\n", "spec.phases[0] (c).rate: a churn phase needs a rate > 0"},
		{"churn without duration", head + "spec: {mix: [{pool: a, weight: 1}], phases: [{opcode: churn, name: c, rate: 1}]}\n", "spec.phases[0] (c).duration: a churn phase needs a duration > 0"},
		{"bad duration", head + "spec: {mix: [{pool: a, weight: 1}], phases: [{opcode: churn, name: c, rate: 1, duration: soon}]}\n", "want a duration like 60s"},
		{"empty burst", head + "spec: {mix: [{pool: a, weight: 1}], phases: [{opcode: burst, name: b}]}\n", "spec.phases[0] (b).pods: a burst phase needs pods >= 1"},
		{"pods in churn", head + "spec: {mix: [{pool: a, weight: 1}], phases: [{opcode: churn, name: c, rate: 1, duration: 5s, pods: 3}]}\n", "spec.phases[0] (c).pods: not a field of opcode churn (it takes rate, duration)"},
		{"duration in burst", head + "spec: {mix: [{pool: a, weight: 1}], phases: [{opcode: burst, name: b, pods: 3, duration: 5s}]}\n", "spec.phases[0] (b).duration: not a field of opcode burst"},
		{"livePodsPerNode in churn", head + "spec: {mix: [{pool: a, weight: 1}], phases: [{opcode: churn, name: c, rate: 1, duration: 5s, livePodsPerNode: 5}]}\n", "spec.phases[0] (c).livePodsPerNode: not a field of opcode churn"},
		{"both sizes", head + "spec: {mix: [{pool: a, weight: 1}], phases: [{opcode: burst, name: f, pods: 5, livePodsPerNode: 5}]}\n", "spec.phases[0] (f): set pods or livePodsPerNode, not both"},
		{"fill with nothing to place", head + "spec: {mix: [{pool: a, weight: 1, shape: untolerated}], phases: [{opcode: fill, name: f, pods: 5}]}\n", "spec.phases[0] (f).opcode: fill binds only well-formed pods"},
		{"fill with claim pods", head + "spec: {mix: [{pool: a, weight: 1}, {pool: d, weight: 1, shape: claim}], phases: [{opcode: burst, name: b, pods: 5}, {opcode: fill, name: f, pods: 5}]}\n", "spec.phases[1] (f).opcode: fill binds pods by nodeName, which leaves a ResourceClaim unallocated (only the scheduler allocates claims), and spec.mix[1].shape is claim"},
		{"throughput threshold on churn", head + "spec: {mix: [{pool: a, weight: 1}], phases: [{opcode: churn, name: c, rate: 1, duration: 5s, threshold: {schedulingThroughput: {min: 300}}}]}\n", "spec.phases[0] (c).threshold.schedulingThroughput: not a threshold of opcode churn (it takes createToScheduledP99, mutatingP99)"},
		{"latency threshold on fill", head + "spec: {mix: [{pool: a, weight: 1}], phases: [{opcode: fill, name: f, pods: 1, threshold: {createToScheduledP99: {max: 5s}}}]}\n", "spec.phases[0] (f).threshold.createToScheduledP99: not a threshold of opcode fill"},
		{"threshold without its limit", head + "spec: {mix: [{pool: a, weight: 1}], phases: [{opcode: burst, name: b, pods: 1, threshold: {schedulingThroughput: {minNodes: 5000}}}]}\n", "spec.phases[0] (b).threshold.schedulingThroughput.min: required"},
		{"threshold with a foreign limit", head + "spec: {mix: [{pool: a, weight: 1}], phases: [{opcode: burst, name: b, pods: 1, threshold: {schedulingThroughput: {max: 300}}}]}\n", "max"},
		{"threshold scope upside down", head + "spec: {mix: [{pool: a, weight: 1}], threshold: {nodesReady: {max: 60s, minNodes: 10000, maxNodes: 5000}}, phases: [{opcode: burst, name: b, pods: 1}]}\n", "spec.threshold.nodesReady.maxNodes: 5000 is below minNodes 10000"},
		{"negative scope", head + "spec: {mix: [{pool: a, weight: 1}], threshold: {controlPlaneRSS: {max: 6Gi, minPods: -1}}, phases: [{opcode: burst, name: b, pods: 1}]}\n", "spec.threshold.controlPlaneRSS.minPods: must be >= 0"},
		{"count threshold without max", head + "spec: {mix: [{pool: a, weight: 1}], threshold: {nodesNotReady: {}}, phases: [{opcode: burst, name: b, pods: 1}]}\n", "spec.threshold.nodesNotReady.max: required"},
		{"bad threshold duration", head + "spec: {mix: [{pool: a, weight: 1}], threshold: {mutatingP99: {max: fast}}, phases: [{opcode: burst, name: b, pods: 1}]}\n", "want a duration like 60s"},
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

// CheckPools holds the mix to the fleet: a claim entry only on a pool
// whose GPUs DRA serves, and no fill with entries on such a pool (a pod
// bound by nodeName gets no claim allocated). Each error names the file
// and the field.
func TestCheckPoolsHoldsShapesToTheirPools(t *testing.T) {
	pools := map[string]PoolInfo{
		"dra":  {GPU: true, Resource: "nvidia.com/gpu", DRA: true},
		"h100": {GPU: true, Resource: "nvidia.com/gpu"},
		"mig":  {GPU: true, Resource: "nvidia.com/mig-1g.5gb"},
		"cpu":  {},
	}
	burst := []Phase{{Opcode: KindBurst, Name: "b", Pods: 1}}
	fill := []Phase{burst[0], {Opcode: KindFill, Name: "f", LivePodsPerNode: 1}}
	for _, tc := range []struct {
		name   string
		mix    []MixEntry
		phases []Phase
		want   string // "" : valid
	}{
		{"claim on a DRA pool", []MixEntry{{Pool: "dra", Weight: 1, Shape: ShapeClaim}}, burst, ""},
		{"well-formed on a DRA pool, no fill", []MixEntry{{Pool: "dra", Weight: 1}}, burst, ""},
		{"fill on a device-plugin pool", []MixEntry{{Pool: "h100", Weight: 1}}, fill, ""},
		{"claim on a device-plugin pool", []MixEntry{{Pool: "h100", Weight: 1}, {Pool: "h100", Weight: 1, Shape: ShapeClaim}}, burst,
			"workload w.yaml: spec.mix[1].shape: claim needs a pool whose GPUs DRA serves; pool h100 has no dra: in the fleet"},
		{"claim on a CPU pool", []MixEntry{{Pool: "cpu", Weight: 1, Shape: ShapeClaim}}, burst,
			"workload w.yaml: spec.mix[0].shape: claim needs a pool whose GPUs DRA serves; pool cpu has no dra: in the fleet"},
		{"claim on a pool the fleet lacks", []MixEntry{{Pool: "nope", Weight: 1, Shape: ShapeClaim}}, burst,
			`workload w.yaml: spec.mix[0].pool: the fleet has no pool "nope"`},
		{"fill with a well-formed entry on a DRA pool", []MixEntry{{Pool: "h100", Weight: 1}, {Pool: "dra", Weight: 1}}, fill,
			"workload w.yaml: spec.mix[1].pool: dra's GPUs are served by DRA, which only the scheduler allocates, and spec.phases[1] (f) is a fill"},
		{"whole-gpu still needs another resource", []MixEntry{{Pool: "dra", Weight: 1, Shape: ShapeWholeGPU}}, burst,
			"workload w.yaml: spec.mix[0].shape: whole-gpu needs a pool that advertises something other than nvidia.com/gpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &Workload{File: "w.yaml", Spec: WorkloadSpec{Mix: tc.mix, Phases: tc.phases}}
			err := CheckPools(w, pools)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// dra-claims on scale-dra-500: every claim pod must find a GPU (the
// contract wants each placed), so the bursts add up to at most the
// pool's GPUs; upstream's half-then-full is kept.
func TestDRAWorkloadFitsItsFleet(t *testing.T) {
	fl, err := fleet.Load(filepath.Join("..", "..", "manifests", "fleets", "scale-dra-500.yaml"))
	require.NoError(t, err)
	w, err := LoadWorkload(filepath.Join("..", "..", "manifests", "workloads", "dra-claims.yaml"))
	require.NoError(t, err)
	infos := map[string]PoolInfo{}
	for _, p := range fl.Spec.Pools {
		infos[p.Name] = PoolInfo{GPU: p.GPU(), DRA: p.GPU() && p.DRA != nil, Resource: fakegpu.ResourceGPU}
	}
	require.NoError(t, CheckPools(w, infos))
	pool, ok := fl.Pool("gpu-h100-dra")
	require.True(t, ok)
	assert.Equal(t, 500, pool.Nodes, "scheduler_perf's 500 nodes")
	gpus := pool.Nodes * pool.GPUsPerNode
	pods := 0
	for _, ph := range w.Spec.Phases {
		pods += ph.Pods
	}
	assert.Equal(t, gpus, pods, "the bursts fill the pool's GPUs exactly, as upstream's fill its devices")
	assert.Equal(t, gpus/2, w.Spec.Phases[0].Pods, "the first burst fills half")
}
