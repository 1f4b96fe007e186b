package scale

import "fmt"

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

func atMost(limit float64) func(float64) bool  { return func(v float64) bool { return v <= limit } }
func atLeast(limit float64) func(float64) bool { return func(v float64) bool { return v >= limit } }

// Figures lists a run's headline numbers; targets apply at the fleet sizes
// the issue set them for (10,000 nodes for bring-up, churn and memory,
// 5,000 nodes and 20,000 pods for the burst).
func Figures(label string, r *Result) []Figure {
	var out []Figure
	add := func(name string, v float64, unit, target string, ok func(float64) bool, anchor string) {
		f := Figure{Run: label, Name: name, Value: v, Unit: unit, Anchor: anchor}
		if ok != nil {
			met := ok(v)
			f.Target, f.Met = target, &met
		}
		out = append(out, f)
	}
	big := r.Nodes >= 10000
	var ready func(float64) bool
	if big {
		ready = atMost(60)
	}
	add("nodes created and Ready", r.NodeBringUp.ReadySeconds, "s", "≤ 60 s at 10,000 nodes", ready, "KWOK CI: 5,000 nodes in 60 s")
	add("node bring-up rate", r.NodeBringUp.NodesPerSecond, "nodes/s", "", nil, "")
	add("most nodes NotReady at once after bring-up", float64(r.NodesNotReadyMax), "nodes", "0 (held Ready)", atMost(0), "")
	for _, ph := range r.Phases {
		switch ph.Kind {
		case KindFill:
			add(ph.Name+" pods placed by the harness", float64(ph.Created), "pods", "", nil, "bypassing the scheduler, for memory at size")
			add(ph.Name+" pods created per second", float64(ph.Created)/max(ph.Seconds, 1e-9), "pods/s", "", nil, "apiserver, admission and kwok, no scheduler")
		case KindBurst:
			var tp func(float64) bool
			if r.Nodes >= 5000 && r.Nodes < 10000 && ph.Created >= 20000 {
				tp = atLeast(300)
			}
			add(ph.Name+" SchedulingThroughput Average", ph.SchedulingThroughput.Average, "pods/s", "≥ 300 pods/s (20,000 pods, 5,000 nodes)", tp, "scheduler_perf here, in-process: 185 basic, 50 extended resources")
			add(ph.Name+" SchedulingThroughput Perc50", ph.SchedulingThroughput.Perc50, "pods/s", "", nil, "")
			add(ph.Name+" SchedulingThroughput Perc90", ph.SchedulingThroughput.Perc90, "pods/s", "", nil, "")
			add(ph.Name+" SchedulingThroughput Perc99", ph.SchedulingThroughput.Perc99, "pods/s", "", nil, "")
			add(ph.Name+" create→scheduled Perc99", ph.CreateToScheduled.Perc99, "s", "", nil, "SLO pod startup p99 ≤ 5 s")
		default:
			var p99 func(float64) bool
			if big {
				p99 = atMost(5)
			}
			add(ph.Name+" create→scheduled Perc99", ph.CreateToScheduled.Perc99, "s", "≤ 5 s during churn at 10,000 nodes", p99, "SLO pod startup p99 ≤ 5 s")
			add(ph.Name+" create→scheduled Perc50", ph.CreateToScheduled.Perc50, "s", "", nil, "")
		}
		add(ph.Name+" mutating API Perc99", ph.APIMutating.Perc99, "s", "≤ 1 s", atMost(1), "SLO: mutating calls p99 ≤ 1 s")
	}
	add("whole run mutating API Perc99", r.APIMutating.Perc99, "s", "≤ 1 s", atMost(1), "SLO: mutating calls p99 ≤ 1 s")
	// The memory target is set at 10,000 nodes and 50,000 pods; a run
	// that never held that many is not held against it.
	var rss func(float64) bool
	if big && r.PeakLivePods >= 50000 {
		rss = atMost(6)
	}
	// A control plane that is not this machine's (--kubeconfig) has no
	// processes here to measure: no figure rather than a zero.
	if r.ControlPlanePeakRSS > 0 {
		add("control plane peak RSS", float64(r.ControlPlanePeakRSS)/(1<<30), "GiB", "≤ 6 GiB at 10,000 nodes and 50,000 pods", rss, fmt.Sprintf("at most %d live pods, %d at the end", r.PeakLivePods, r.LivePods))
	}
	for _, m := range r.Memory {
		add("peak RSS "+m.Name, float64(m.PeakRSS)/(1<<20), "MiB", "", nil, fmt.Sprintf("%.0f CPU seconds", m.CPUSeconds))
	}
	return out
}
