// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var autoscalePools = map[string]PoolInfo{
	"h100": {GPU: true, Resource: "nvidia.com/gpu"},
	"h100-burst": {Autoscaled: true, GPU: true, Resource: "nvidia.com/gpu", PerNode: 8,
		Domains: []PoolDomain{{NodePool: "np-h100", MaxNodes: 2}}},
	"l4-burst": {Autoscaled: true, GPU: true, Resource: "nvidia.com/gpu.shared", PerNode: 4,
		Domains: []PoolDomain{{Name: "tenant-a", NodePool: "np-a", MaxNodes: 1}, {Name: "tenant-b", NodePool: "np-b", MaxNodes: 1}}},
}

// An autoscale phase draws the autoscaled pools' entries alone, the other
// phases the fixed pools' alone; each pool's pods need its nodes filled to
// its design, trust domains taking the pods in turn.
func TestAutoscaleNeedsFillEachPoolToItsDesign(t *testing.T) {
	w := &Workload{File: "w.yaml", Spec: WorkloadSpec{
		Mix:    []MixEntry{{Pool: "h100", Weight: 5}, {Pool: "h100-burst", Weight: 3}, {Pool: "l4-burst", Weight: 1}},
		Phases: []Phase{{Opcode: KindBurst, Name: "b", Pods: 10}, {Opcode: KindAutoscale, Name: "up", Pods: 12}},
	}}
	require.NoError(t, CheckPools(w, autoscalePools))
	needs, err := autoscaleNeeds(w, autoscalePools)
	require.NoError(t, err)
	assert.Equal(t, map[int][]AutoscaledPoolResult{1: {
		{NodePool: "np-h100", Pool: "h100-burst", Pods: 9, NodesNeeded: 2},
		{NodePool: "np-a", Pool: "l4-burst", TrustDomain: "tenant-a", Pods: 2, NodesNeeded: 1},
		{NodePool: "np-b", Pool: "l4-burst", TrustDomain: "tenant-b", Pods: 1, NodesNeeded: 1},
	}}, needs)

	assert.Equal(t, []int{0, 0, 0, 0, 0}, cycleOf(w.Spec.Mix, func(i int) bool { return i == 0 }))
	assert.Equal(t, []int{1, 1, 2, 1}, cycleOf(w.Spec.Mix, func(i int) bool { return i > 0 }), "interleaved by weight")
}

// Refused before any cluster, naming the file and the field: pods their
// pool could never hold at its maxNodes, phases without entries of their
// kind, entries no phase creates, shapes an autoscaled pool does not take.
func TestCheckPoolsHoldsAutoscalePhasesToTheFleet(t *testing.T) {
	burst := Phase{Opcode: KindBurst, Name: "b", Pods: 1}
	up := func(pods int) Phase { return Phase{Opcode: KindAutoscale, Name: "up", Pods: pods} }
	for _, tc := range []struct {
		name   string
		mix    []MixEntry
		phases []Phase
		want   string
	}{
		{"past maxNodes", []MixEntry{{Pool: "h100-burst", Weight: 1}}, []Phase{up(17)},
			"workload w.yaml: spec.phases[0] (up): 17 pods for pool h100-burst need 3 nodes of 8 pods each, and the fleet designs it to grow to maxNodes 2"},
		{"past a trust domain's maxNodes", []MixEntry{{Pool: "l4-burst", Weight: 1}}, []Phase{up(10)},
			"spec.phases[0] (up): 5 pods for pool l4-burst (trust domain tenant-a) need 2 nodes of 4 pods each, and the fleet designs it to grow to maxNodes 1"},
		{"autoscale without autoscaled entries", []MixEntry{{Pool: "h100", Weight: 1}}, []Phase{burst, up(1)},
			"workload w.yaml: spec.phases[1] (up): an autoscale phase creates pods for the fleet's autoscaled pools, and no spec.mix entry names one"},
		{"burst without fixed entries", []MixEntry{{Pool: "h100-burst", Weight: 1}}, []Phase{burst, up(1)},
			"workload w.yaml: spec.phases[0] (b): a burst phase creates pods for fixed pools, and every spec.mix entry names an autoscaled pool"},
		{"autoscaled entry and no autoscale", []MixEntry{{Pool: "h100", Weight: 1}, {Pool: "h100-burst", Weight: 1}}, []Phase{burst},
			"workload w.yaml: spec.mix[1].pool: h100-burst is an autoscaled pool, whose pods only an autoscale phase creates, and spec.phases has none"},
		{"a second phase on top of the first's pods", []MixEntry{{Pool: "h100-burst", Weight: 1}}, []Phase{up(10), up(7)},
			"workload w.yaml: spec.phases[1] (up): 17 pods (10 of them from earlier autoscale phases) for pool h100-burst need 3 nodes of 8 pods each"},
		{"fixed entry and only autoscale phases", []MixEntry{{Pool: "h100", Weight: 1}, {Pool: "h100-burst", Weight: 1}}, []Phase{up(1)},
			"workload w.yaml: spec.mix[0].pool: h100 is a fixed pool, whose pods only burst, churn and fill phases create, and every phase is an autoscale"},
		{"untolerated on an autoscaled pool", []MixEntry{{Pool: "h100-burst", Weight: 1, Shape: ShapeUntolerated}}, []Phase{up(1)},
			"workload w.yaml: spec.mix[0].shape: untolerated on autoscaled pool h100-burst"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckPools(&Workload{File: "w.yaml", Spec: WorkloadSpec{Mix: tc.mix, Phases: tc.phases}}, autoscalePools)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// The nodes a phase counts are those first seen once it began.
func TestMadeNodesCountFromThePhaseStart(t *testing.T) {
	var m madeNodes
	t0 := time.Now()
	m.seen("before", "np", t0.Add(-time.Second))
	m.seen("a", "np", t0.Add(2*time.Second))
	m.seen("b", "np", t0.Add(3*time.Second))
	m.seen("a", "np", t0.Add(9*time.Second)) // seen again: its first sight stands
	m.seen("c", "other", t0.Add(4*time.Second))
	made, first := m.since(t0)
	assert.Equal(t, map[string]int{"np": 2, "other": 1}, made)
	assert.Equal(t, 2*time.Second, first.Sub(t0))
}

// A later autoscale phase needs only the nodes its pods add to what the
// earlier ones' pods hold.
func TestAutoscaleNeedsCountEarlierPhases(t *testing.T) {
	w := &Workload{File: "w.yaml", Spec: WorkloadSpec{
		Mix:    []MixEntry{{Pool: "h100-burst", Weight: 1}},
		Phases: []Phase{{Opcode: KindAutoscale, Name: "one", Pods: 6}, {Opcode: KindAutoscale, Name: "two", Pods: 6}},
	}}
	needs, err := autoscaleNeeds(w, autoscalePools)
	require.NoError(t, err)
	assert.Equal(t, 1, needs[0][0].NodesNeeded)
	assert.Equal(t, 1, needs[1][0].NodesNeeded, "12 pods need 2 nodes, one already made")
}

// Nodes beyond those needed add up per NodePool: one pool's extra node is
// not offset by another pool's missing one.
func TestNodesOverNeededAddUpPerNodePool(t *testing.T) {
	start := time.Now()
	r := &Runner{times: newPodTimes(), needs: map[int][]AutoscaledPoolResult{0: {
		{NodePool: "np-h100", Pool: "h100-burst", Pods: 8, NodesNeeded: 1},
		{NodePool: "np-a", Pool: "l4-burst", Pods: 2, NodesNeeded: 1},
	}}}
	r.made.seen("h-1", "np-h100", start.Add(time.Second))
	r.made.seen("h-2", "np-h100", start.Add(2*time.Second))
	r.made.seen("x-1", "np-other", start.Add(3*time.Second))
	a := r.autoscaleResult(0, start, nil, 9)
	assert.Equal(t, 3, a.NodesCreated)
	assert.Equal(t, 2, a.NodesNeeded)
	assert.Equal(t, 2, a.NodesOverNeeded, "one extra H100 node and one of a NodePool nothing needed; np-a's missing node offsets neither")
	assert.Equal(t, time.Second, time.Duration(a.FirstNodeSeconds*float64(time.Second)))
}
