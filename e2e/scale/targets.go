// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"fmt"
	"strconv"
	"strings"
)

// Figure is one measured value next to what it is held against. Targets
// are printed, never asserted: speed belongs to benchmarks, and a test
// that fails on a slow machine teaches nothing.
type Figure struct {
	Run    string  `json:"run"`
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Target string  `json:"target,omitempty"`
	Met    *bool   `json:"met,omitempty"`
	// Anchor is the upstream figure for the same work (docs/anchors).
	Anchor string `json:"anchor,omitempty"`
}

// describe says the scope in a target's words: " at 10,000+ nodes".
func describe(s Scope) string {
	var parts []string
	switch {
	case s.MinNodes > 0 && s.MaxNodes == s.MinNodes:
		parts = append(parts, thousands(s.MinNodes)+" nodes")
	case s.MinNodes > 0 && s.MaxNodes > 0:
		parts = append(parts, thousands(s.MinNodes)+"–"+thousands(s.MaxNodes)+" nodes")
	case s.MinNodes > 0:
		parts = append(parts, thousands(s.MinNodes)+"+ nodes")
	case s.MaxNodes > 0:
		parts = append(parts, "up to "+thousands(s.MaxNodes)+" nodes")
	}
	if s.MinPods > 0 {
		parts = append(parts, thousands(s.MinPods)+"+ pods")
	}
	if len(parts) == 0 {
		return ""
	}
	return " at " + strings.Join(parts, ", ")
}

// held is a threshold that applies to a run of this size.
type held struct {
	target string
	met    func(float64) bool
}

// The ...At functions return nil when the threshold is unset or the run
// is outside its scope: the figure is then printed without a target.

func latencyAt(t *LatencyThreshold, nodes, pods int) *held {
	if t == nil || !t.Covers(nodes, pods) {
		return nil
	}
	lim := t.Max.Seconds()
	return &held{"≤ " + num(lim) + " s" + describe(t.Scope), atMost(lim)}
}

func throughputAt(t *ThroughputThreshold, nodes, pods int) *held {
	if t == nil || !t.Covers(nodes, pods) {
		return nil
	}
	return &held{"≥ " + num(t.Min) + " pods/s" + describe(t.Scope), atLeast(t.Min)}
}

// memoryAt holds a figure in GiB, the unit the figure is printed in.
func memoryAt(t *MemoryThreshold, nodes, pods int) *held {
	if t == nil || !t.Covers(nodes, pods) {
		return nil
	}
	lim := float64(t.Max.Value()) / (1 << 30)
	return &held{"≤ " + num(lim) + " GiB" + describe(t.Scope), atMost(lim)}
}

// countAt's zero says what a maximum of 0 means ("" : nothing more).
func countAt(t *CountThreshold, nodes, pods int, zero string) *held {
	if t == nil || t.Max == nil || !t.Covers(nodes, pods) {
		return nil
	}
	target := "≤ " + strconv.Itoa(*t.Max) + describe(t.Scope)
	if *t.Max == 0 && zero != "" {
		target = "0 (" + zero + ")" + describe(t.Scope)
	}
	return &held{target, atMost(float64(*t.Max))}
}

// missed is h for a figure that stands for something that never happened
// (no node came, a pod was never scheduled): whatever its value, the
// target is not met.
func missed(h *held) *held {
	if h == nil {
		return nil
	}
	return &held{h.target, func(float64) bool { return false }}
}

func atMost(limit float64) func(float64) bool  { return func(v float64) bool { return v <= limit } }
func atLeast(limit float64) func(float64) bool { return func(v float64) bool { return v >= limit } }

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// thousands writes 10000 as 10,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// anchorClaimTemplate is the upstream figure a burst of claim pods is set
// beside (dra-facts §5: K test/integration/scheduler_perf/dra/performance-config.yaml).
const anchorClaimTemplate = "upstream CI, not this machine: scheduler_perf v1.37.2 SchedulingWithResourceClaimTemplate/5000pods_500nodes, threshold 56 pods/s, typically above 70"

// anchorExtendedResource is the in-process figure a burst is set beside,
// with where and when it was taken: not this run's machine or day, and
// machines of this kind differ 2× from day to day (docs/scale.md#anchors).
const anchorExtendedResource = "not measured in this run: upstream scheduler_perf v1.37.2 in-process, SchedulingWithExtendedResource 5000pods_5000nodes, 50 pods/s on a 2-core machine of this kind before 2026-12-03 and 31.2 pods/s on another on 2026-12-03 (docs/scale.md#anchors)"

// anchorClaimAllocation is what claim allocation latency is set beside
// (dra-facts §5: ClusterLoader2's ResourceClaimAllocationLatency, default
// threshold 5 min; one local kind run of its churn, perf-tests#3438).
const anchorClaimAllocation = "ClusterLoader2 ResourceClaimAllocationLatency: threshold 5 min; one kind run p50/p90/p99 0.652/0.811/0.931 s"

// Figures lists a run's headline numbers, each held against the
// workload's threshold for it when the run is of the size it names.
func Figures(label string, r *Result) []Figure {
	var out []Figure
	add := func(name string, v float64, unit string, h *held, anchor string) {
		f := Figure{Run: label, Name: name, Value: v, Unit: unit, Anchor: anchor}
		if h != nil {
			met := h.met(v)
			f.Target, f.Met = h.target, &met
		}
		out = append(out, f)
	}
	wt := r.Threshold
	if wt == nil {
		wt = &WorkloadThreshold{}
	}
	// Whole-run thresholds are scoped by the most pods the run held.
	nodes, pods := r.Nodes, r.PeakLivePods
	add("nodes created and Ready", r.NodeBringUp.ReadySeconds, "s", latencyAt(wt.NodesReady, nodes, pods), "KWOK CI: 5,000 nodes in 60 s")
	add("node bring-up rate", r.NodeBringUp.NodesPerSecond, "nodes/s", nil, "")
	add("most nodes NotReady at once after bring-up", float64(r.NodesNotReadyMax), "nodes", countAt(wt.NodesNotReady, nodes, pods, "held Ready"), "")
	for _, ph := range r.Phases {
		t := ph.Threshold
		if t == nil {
			t = &PhaseThreshold{}
		}
		// A phase's thresholds are scoped by the pods it created.
		created := ph.Created
		switch ph.Kind {
		case KindFill:
			add(ph.Name+" pods placed by the harness", float64(ph.Created), "pods", nil, "bypassing the scheduler, for memory at size")
			add(ph.Name+" pods created per second", float64(ph.Created)/max(ph.Seconds, 1e-9), "pods/s", nil, "apiserver, admission and kwok, no scheduler")
		case KindBurst:
			anchor := anchorExtendedResource
			if r.ClaimsOnly {
				anchor = anchorClaimTemplate
			}
			add(ph.Name+" SchedulingThroughput Average", ph.SchedulingThroughput.Average, "pods/s", throughputAt(t.SchedulingThroughput, nodes, created), anchor)
			add(ph.Name+" SchedulingThroughput Perc50", ph.SchedulingThroughput.Perc50, "pods/s", nil, "")
			add(ph.Name+" SchedulingThroughput Perc90", ph.SchedulingThroughput.Perc90, "pods/s", nil, "")
			add(ph.Name+" SchedulingThroughput Perc99", ph.SchedulingThroughput.Perc99, "pods/s", nil, "")
			add(ph.Name+" create→scheduled Perc99", ph.CreateToScheduled.Perc99, "s", latencyAt(t.CreateToScheduledP99, nodes, created), "SLO pod startup p99 ≤ 5 s")
		case KindAutoscale:
			a := ph.Autoscale
			if a == nil {
				a = &AutoscaleResult{}
			}
			first, all := latencyAt(t.FirstNode, nodes, created), latencyAt(t.AllScheduled, nodes, created)
			if a.NodesCreated == 0 {
				first = missed(first)
			}
			if a.Unscheduled > 0 {
				all = missed(all)
			}
			var perPool []string
			for _, p := range a.Pools {
				perPool = append(perPool, fmt.Sprintf("%s %d of %d", p.NodePool, p.NodesCreated, p.NodesNeeded))
			}
			add(ph.Name+" time to first node", a.FirstNodeSeconds, "s", first, "from the first Pending pod to the first node the autoscaler made")
			add(ph.Name+" time until every pod scheduled", a.AllScheduledSeconds, "s", all, fmt.Sprintf("%d of %d pods scheduled", created-a.Unscheduled, created))
			add(ph.Name+" nodes created", float64(a.NodesCreated), "nodes", nil, fmt.Sprintf("%d needed (%s)", a.NodesNeeded, strings.Join(perPool, ", ")))
			add(ph.Name+" nodes beyond those needed", float64(a.NodesOverNeeded), "nodes", countAt(t.NodesOverNeeded, nodes, created, ""), "per NodePool, each pool's nodes filled to its design")
			add(ph.Name+" create→scheduled Perc99", ph.CreateToScheduled.Perc99, "s", latencyAt(t.CreateToScheduledP99, nodes, created), "")
		default:
			add(ph.Name+" create→scheduled Perc99", ph.CreateToScheduled.Perc99, "s", latencyAt(t.CreateToScheduledP99, nodes, created), "SLO pod startup p99 ≤ 5 s")
			add(ph.Name+" create→scheduled Perc50", ph.CreateToScheduled.Perc50, "s", nil, "")
		}
		if c := ph.ClaimAllocation; c != nil {
			add(ph.Name+" claim allocation Perc50", c.Perc50, "s", nil, "")
			add(ph.Name+" claim allocation Perc90", c.Perc90, "s", nil, "")
			add(ph.Name+" claim allocation Perc99", c.Perc99, "s", nil, anchorClaimAllocation)
		}
		add(ph.Name+" mutating API Perc99", ph.APIMutating.Perc99, "s", latencyAt(t.MutatingP99, nodes, created), "SLO: mutating calls p99 ≤ 1 s")
	}
	add("whole run mutating API Perc99", r.APIMutating.Perc99, "s", latencyAt(wt.MutatingP99, nodes, pods), "SLO: mutating calls p99 ≤ 1 s")
	// A control plane that is not this machine's (--kubeconfig) has no
	// processes here to measure: no figure rather than a zero.
	if r.ControlPlanePeakRSS > 0 {
		add("control plane peak RSS", float64(r.ControlPlanePeakRSS)/(1<<30), "GiB", memoryAt(wt.ControlPlaneRSS, nodes, pods), fmt.Sprintf("at most %d live pods, %d at the end", r.PeakLivePods, r.LivePods))
	}
	for _, m := range r.Memory {
		add("peak RSS "+m.Name, float64(m.PeakRSS)/(1<<20), "MiB", nil, fmt.Sprintf("%.0f CPU seconds", m.CPUSeconds))
	}
	return out
}
