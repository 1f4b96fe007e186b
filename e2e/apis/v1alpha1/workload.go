// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Shapes of pods in a mix: how a pod aims at its pool.
const (
	// ShapeWellFormed follows the contract: the pool's selector and
	// tolerations, RuntimeClass nvidia, one unit of the pool's resource.
	ShapeWellFormed = "well-formed"
	// ShapeWholeGPU asks nvidia.com/gpu of a pool that advertises another
	// resource (MIG, renamed time-slicing): it must stay Pending.
	ShapeWholeGPU = "whole-gpu"
	// ShapeUntolerated omits the pool's own taints: it must stay Pending.
	ShapeUntolerated = "untolerated"
	// ShapeClaim is the well-formed pod of a DRA pool that gets its GPU
	// through a ResourceClaim made from a ResourceClaimTemplate (one
	// device of the DeviceClass mapping the pool's resource) instead of a
	// limit: scheduler_perf's SchedulingWithResourceClaimTemplate pod.
	ShapeClaim = "claim"
)

var shapes = []string{ShapeWellFormed, ShapeWholeGPU, ShapeUntolerated, ShapeClaim}

// Workload is a scale workload file: pods of a mix of shapes, created in
// phases, and the targets their figures are held against.
type Workload struct {
	// TypeMeta is apiVersion gpupool.dev/v1alpha1 and kind Workload.
	metav1.TypeMeta `json:",inline"`
	// Metadata: name (required), labels and annotations; a workload file
	// is not a cluster object, so nothing else.
	Metadata metav1.ObjectMeta `json:"metadata"`
	// Spec is the mix, the phases and the whole run's targets.
	Spec WorkloadSpec `json:"spec"`

	// File is where the workload was read from (not part of the format).
	File string `json:"-"`
}

// WorkloadSpec is the mix of pods, the phases that create them, and the
// targets the whole run's figures are held against.
type WorkloadSpec struct {
	// Mix is the pods every phase creates, by pool, shape and share. At
	// least one entry.
	Mix []MixEntry `json:"mix"`
	// Phases run in order, each creating pods of the mix. At least one.
	Phases []Phase `json:"phases"`
	// Threshold: targets for figures of the whole run (none if unset).
	Threshold *WorkloadThreshold `json:"threshold,omitempty"`
}

// MixEntry is one kind of pod and its share of every phase.
type MixEntry struct {
	// Pool names the fleet pool the pod aims at. Required.
	Pool string `json:"pool"`
	// Weight is the entry's share of each phase's pods, against the other
	// entries' weights (>= 1).
	Weight int `json:"weight"`
	// Shape: well-formed (default), whole-gpu, untolerated or claim.
	Shape string `json:"shape,omitempty"`
}

// Schedulable reports whether the contract expects the pod to be placed.
func (m MixEntry) Schedulable() bool {
	return m.Shape == "" || m.Shape == ShapeWellFormed || m.Shape == ShapeClaim
}

// Claim reports whether the pod gets its GPU through a ResourceClaim.
func (m MixEntry) Claim() bool { return m.Shape == ShapeClaim }

// Phase creates pods; its Opcode says how, as scheduler_perf's opcode
// does, and which of the other fields it reads.
type Phase struct {
	// Opcode: burst, churn, fill or autoscale. Required.
	Opcode string `json:"opcode"`
	// Name names the phase in results and figures. Required.
	Name string `json:"name"`
	// Pods: burst, fill and autoscale, how many pods to create.
	Pods int `json:"pods,omitempty"`
	// Rate: pods/s; a churn's pace (required), a burst's or fill's cap
	// (default: as fast as the workers go).
	Rate float64 `json:"rate,omitempty"`
	// Duration: churn, how long Rate pods/s are created and as many of the
	// phase's oldest deleted.
	Duration Duration `json:"duration,omitempty"`
	// Timeout bounds the wait for the phase's schedulable pods to be
	// placed (default: 5m).
	Timeout Duration `json:"timeout,omitempty"`
	// DeletePending first deletes the run's Pending pods. The scheduler
	// retries them whenever a GPU pod goes away, each retry a scan of every
	// node: a churn phase with and without them shows what they cost.
	DeletePending bool `json:"deletePending,omitempty"`
	// LivePodsPerNode sizes a burst or fill by the fleet instead of Pods:
	// enough pods that the run holds this many per node afterwards.
	LivePodsPerNode int `json:"livePodsPerNode,omitempty"`
	// Threshold: targets for this phase's figures (none if unset).
	Threshold *PhaseThreshold `json:"threshold,omitempty"`
}

// DefaultPhaseTimeout bounds a phase's wait for its pods when it does not
// say.
const DefaultPhaseTimeout = 5 * time.Minute

// WaitTimeout is how long the phase waits for its schedulable pods to be
// placed, the default if unset. Read through here: workloads built in code
// are not decoded, and would otherwise wait for nothing.
func (p Phase) WaitTimeout() time.Duration {
	if p.Timeout.Duration == 0 {
		return DefaultPhaseTimeout
	}
	return p.Timeout.Duration
}

// Opcodes, which results also name phases by.
const (
	// OpcodeBurst creates Pods pods for the scheduler, as fast as the
	// workers go (or at Rate).
	OpcodeBurst = "burst"
	// OpcodeChurn creates Rate pods/s for Duration and deletes each about
	// ten seconds later.
	OpcodeChurn = "churn"
	// OpcodeFill is a burst whose pods the harness binds itself (first fit,
	// spec.nodeName), only the mix's well-formed shapes: the state a burst
	// reaches, at a size the scheduler would take too long to place here,
	// for memory at fleet scale. Its throughput is the apiserver's and
	// kwok's, not the scheduler's. A mix with claim entries, or with
	// entries on a DRA pool, cannot take one (Validate, scale.CheckPools).
	OpcodeFill = "fill"
	// OpcodeAutoscale creates Pods pods for the mix's autoscaled pools
	// alone, which start at zero nodes: the autoscaler must make the nodes
	// they need. Its figures are the time to the first node, the time
	// until every pod is scheduled, and the nodes made against the nodes
	// the pods need. The other opcodes create pods for fixed pools alone.
	OpcodeAutoscale = "autoscale"
)

var opcodes = []string{OpcodeBurst, OpcodeChurn, OpcodeFill, OpcodeAutoscale}

// opcodeFields lists the fields each opcode reads besides opcode, name,
// timeout, deletePending and threshold; any other set field is an error,
// so a phase never silently ignores what its author wrote.
var opcodeFields = map[string][]string{
	OpcodeBurst: {"pods", "livePodsPerNode", "rate"},
	OpcodeFill:  {"pods", "livePodsPerNode", "rate"},
	OpcodeChurn: {"rate", "duration"},
	// Its pods come as fast as the workers go: what the autoscaler sees is
	// a burst of Pending pods.
	OpcodeAutoscale: {"pods"},
}

// setFields names the phase's opcode-specific fields that are set.
func (p Phase) setFields() []string {
	var out []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"pods", p.Pods != 0}, {"livePodsPerNode", p.LivePodsPerNode != 0}, {"rate", p.Rate != 0}, {"duration", p.Duration.Duration != 0}} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

// Kind names what the phase does: its opcode.
func (p Phase) Kind() string { return p.Opcode }

// Churn reports whether the phase is a churn phase.
func (p Phase) Churn() bool { return p.Opcode == OpcodeChurn }

// Fill reports whether the harness binds the phase's pods itself.
func (p Phase) Fill() bool { return p.Opcode == OpcodeFill }

// Autoscale reports whether the phase is an autoscale.
func (p Phase) Autoscale() bool { return p.Opcode == OpcodeAutoscale }

// Duration reads "60s"-style durations.
type Duration struct {
	// Duration is the value, written as Go's time.ParseDuration reads it.
	time.Duration
}

// UnmarshalJSON reads "60s" (a number of nanoseconds is refused: the unit
// is what a reader of the file needs).
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration like 60s, got %s", b)
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration as UnmarshalJSON reads it.
func (d Duration) MarshalJSON() ([]byte, error) { return []byte(`"` + d.String() + `"`), nil }

// Thresholds are a workload's targets, as data beside the work they judge
// (scheduler_perf's `threshold:`). Each carries a Scope: a target is set
// for one fleet size, and a run of another size is not held against it.

// Scope says at which size of run a threshold applies. A bound left out
// (0) does not limit; all set bounds must hold.
type Scope struct {
	// MinNodes is the fewest fleet nodes the threshold applies at.
	MinNodes int `json:"minNodes,omitempty"`
	// MaxNodes is the most fleet nodes the threshold applies at.
	MaxNodes int `json:"maxNodes,omitempty"`
	// MinPods: in a phase's threshold, the pods the phase created; in the
	// workload's, the most pods of the run alive at a phase's end.
	MinPods int `json:"minPods,omitempty"`
}

// LatencyThreshold holds a figure in seconds to at most Max.
type LatencyThreshold struct {
	// Max is the longest the figure may be, a duration > 0 like 5s.
	Max Duration `json:"max"`
	// Scope is the size of run the threshold is set for.
	Scope
}

// ThroughputThreshold holds a figure in pods/s to at least Min.
type ThroughputThreshold struct {
	// Min is the fewest pods/s the figure may be (> 0).
	Min float64 `json:"min"`
	// Scope is the size of run the threshold is set for.
	Scope
}

// MemoryThreshold holds a figure in bytes to at most Max (e.g. 6Gi).
type MemoryThreshold struct {
	// Max is the most bytes, a quantity > 0 like 6Gi.
	Max resource.Quantity `json:"max"`
	// Scope is the size of run the threshold is set for.
	Scope
}

// CountThreshold holds a count to at most Max (a pointer: 0 is a target).
type CountThreshold struct {
	// Max is the highest the count may be (>= 0).
	Max *int `json:"max"`
	// Scope is the size of run the threshold is set for.
	Scope
}

// Covers reports whether a run of this many nodes and pods is of the
// size the scope says.
func (s Scope) Covers(nodes, pods int) bool {
	return nodes >= s.MinNodes && (s.MaxNodes == 0 || nodes <= s.MaxNodes) && pods >= s.MinPods
}

// PhaseThreshold is a phase's targets; which it may carry depends on its
// opcode.
type PhaseThreshold struct {
	// SchedulingThroughput: the Average, pods/s (burst).
	SchedulingThroughput *ThroughputThreshold `json:"schedulingThroughput,omitempty"`
	// CreateToScheduledP99: create→scheduled Perc99 (burst, churn,
	// autoscale).
	CreateToScheduledP99 *LatencyThreshold `json:"createToScheduledP99,omitempty"`
	// MutatingP99: the apiserver's mutating calls' Perc99 over the phase
	// (any opcode).
	MutatingP99 *LatencyThreshold `json:"mutatingP99,omitempty"`
	// FirstNode: autoscale, from the phase's first create to the first
	// node the autoscaler made for it.
	FirstNode *LatencyThreshold `json:"firstNode,omitempty"`
	// AllScheduled: autoscale, from the phase's first create until its
	// last pod is scheduled.
	AllScheduled *LatencyThreshold `json:"allScheduled,omitempty"`
	// NodesOverNeeded: autoscale, nodes made beyond those the phase's pods
	// need (each pool's nodes filled to its design, within its maxNodes).
	NodesOverNeeded *CountThreshold `json:"nodesOverNeeded,omitempty"`
}

// WorkloadThreshold is the targets of figures of the whole run.
type WorkloadThreshold struct {
	// NodesReady: fleet creation until every node is Ready.
	NodesReady *LatencyThreshold `json:"nodesReady,omitempty"`
	// NodesNotReady: the most nodes NotReady at once after bring-up.
	NodesNotReady *CountThreshold `json:"nodesNotReady,omitempty"`
	// MutatingP99: mutating calls' Perc99 over the whole run.
	MutatingP99 *LatencyThreshold `json:"mutatingP99,omitempty"`
	// ControlPlaneRSS: the summed peak RSS of the control plane's processes.
	ControlPlaneRSS *MemoryThreshold `json:"controlPlaneRSS,omitempty"`
}
