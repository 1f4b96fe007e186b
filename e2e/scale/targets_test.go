// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// figure finds one figure by name.
func figure(t *testing.T, figs []Figure, name string) Figure {
	t.Helper()
	for _, f := range figs {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no figure %q", name)
	return Figure{}
}

// The repo's gpu-burst thresholds hold a run only at the size each was set
// for: a 10,000-node run's bring-up against 60 s, a 200-node run's not at
// all (printed without a target rather than held to a 10,000-node one).
func TestThresholdsApplyAtTheirScope(t *testing.T) {
	w, err := LoadWorkload(filepath.Join("..", "..", "manifests", "workloads", "gpu-burst.yaml"))
	require.NoError(t, err)
	burst := w.Spec.Phases[0]
	require.Equal(t, KindBurst, burst.Kind())

	big := &Result{Nodes: 10000, PeakLivePods: 50000, Threshold: w.Spec.Threshold, ControlPlanePeakRSS: 7 << 30,
		NodeBringUp: BringUp{ReadySeconds: 47.4}}
	figs := Figures("10k", big)
	ready := figure(t, figs, "nodes created and Ready")
	require.NotNil(t, ready.Met)
	assert.True(t, *ready.Met)
	assert.Equal(t, "≤ 60 s at 10,000+ nodes", ready.Target)
	rss := figure(t, figs, "control plane peak RSS")
	require.NotNil(t, rss.Met)
	assert.False(t, *rss.Met, "7 GiB is over 6 GiB")
	assert.Equal(t, "≤ 6 GiB at 10,000+ nodes, 50,000+ pods", rss.Target)

	small := &Result{Nodes: 200, PeakLivePods: 1200, Threshold: w.Spec.Threshold, ControlPlanePeakRSS: 1 << 30,
		Phases: []PhaseResult{{Name: "burst", Kind: KindBurst, Created: 1000, Threshold: burst.Threshold,
			SchedulingThroughput: Percentiles{Average: 40}}}}
	figs = Figures("200", small)
	for _, name := range []string{"nodes created and Ready", "control plane peak RSS", "burst SchedulingThroughput Average"} {
		f := figure(t, figs, name)
		assert.Nil(t, f.Met, name)
		assert.Empty(t, f.Target, name)
	}
	// Thresholds without a scope hold at every size.
	notReady := figure(t, figs, "most nodes NotReady at once after bring-up")
	require.NotNil(t, notReady.Met)
	assert.Equal(t, "0 (held Ready)", notReady.Target)

	mid := &Result{Nodes: 5000, PeakLivePods: 20000, Threshold: w.Spec.Threshold,
		Phases: []PhaseResult{{Name: "burst", Kind: KindBurst, Created: 20000, Threshold: burst.Threshold,
			SchedulingThroughput: Percentiles{Average: 60}}}}
	tp := figure(t, Figures("5k", mid), "burst SchedulingThroughput Average")
	require.NotNil(t, tp.Met)
	assert.False(t, *tp.Met)
	assert.Equal(t, "≥ 300 pods/s at 5,000–9,999 nodes, 20,000+ pods", tp.Target)
}

// The DRA workload's measured burst is held to scheduler_perf's
// SchedulingWithResourceClaimTemplate threshold at 500 nodes and set
// beside it; its first burst, as upstream's initPods, is not held.
func TestClaimBurstIsSetBesideSchedulerPerf(t *testing.T) {
	w, err := LoadWorkload(filepath.Join("..", "..", "manifests", "workloads", "dra-claims.yaml"))
	require.NoError(t, err)
	require.Len(t, w.Spec.Phases, 2)
	for _, m := range w.Spec.Mix {
		assert.Equal(t, ShapeClaim, m.Shape)
	}
	phases := func() []PhaseResult {
		var out []PhaseResult
		for _, ph := range w.Spec.Phases {
			out = append(out, PhaseResult{Name: ph.Name, Kind: ph.Kind(), Created: ph.Pods, Threshold: ph.Threshold, SchedulingThroughput: Percentiles{Average: 50}})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		nodes  int
		target string // "" : printed without one
	}{
		{"scale-dra-500", 510, "≥ 56 pods/s at 500+ nodes"},
		{"a smaller fleet", 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			figs := Figures(tc.name, &Result{Nodes: tc.nodes, Threshold: w.Spec.Threshold, ClaimsOnly: true, Phases: phases()})
			init := figure(t, figs, "init SchedulingThroughput Average")
			assert.Empty(t, init.Target, "the first burst is not measured against the threshold")
			measure := figure(t, figs, "measure SchedulingThroughput Average")
			assert.Contains(t, measure.Anchor, "SchedulingWithResourceClaimTemplate/5000pods_500nodes, threshold 56 pods/s")
			assert.Contains(t, measure.Anchor, "not this machine", "an upstream figure says where it was measured")
			assert.Equal(t, tc.target, measure.Target)
			if tc.target != "" {
				require.NotNil(t, measure.Met)
				assert.False(t, *measure.Met, "50 < 56")
			}
		})
	}
	// A mix that is not all claims keeps the anchor of device-plugin bursts.
	other := figure(t, Figures("x", &Result{Nodes: 510, Phases: phases()}), "measure SchedulingThroughput Average")
	assert.NotContains(t, other.Anchor, "ResourceClaimTemplate")
}
