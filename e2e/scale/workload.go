// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package scale puts a GPU fleet under scheduler pressure and measures it
// the way kube-scheduler's scheduler_perf does: workloads as data (a mix of
// pod shapes, then phases of bursts and churn), SchedulingThroughput
// sampled every second, create→scheduled latency percentiles, the
// apiserver's mutating-call latency from its own histograms, and the peak
// memory of every process. After each phase it checks the pool contract in
// bulk over every pod.
package scale

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpupool/gpupool/e2e/apis"
	"github.com/gpupool/gpupool/e2e/input"
	"github.com/gpupool/gpupool/fakegpu"
)

const (
	APIVersion = apis.APIVersion
	Kind       = apis.KindWorkload
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

// Workload is a scale workload file.
type Workload struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            WorkloadSpec      `json:"spec"`

	File string `json:"-"`

	once  sync.Once
	cycle []int
}

// WorkloadSpec is the mix of pods, the phases that create them, and the
// targets the whole run's figures are held against.
type WorkloadSpec struct {
	Mix    []MixEntry `json:"mix"`
	Phases []Phase    `json:"phases"`
	// Threshold: targets for figures of the whole run (none if unset).
	Threshold *WorkloadThreshold `json:"threshold,omitempty"`
}

// MixEntry is one kind of pod and its share of every phase.
type MixEntry struct {
	Pool   string `json:"pool"`
	Weight int    `json:"weight"`
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
// does, and which of the other fields it reads (opcodeFields).
type Phase struct {
	// Opcode: burst, churn or fill. Required.
	Opcode string `json:"opcode"`
	Name   string `json:"name"`
	// Pods: burst and fill, how many pods to create.
	Pods int `json:"pods,omitempty"`
	// Rate: pods/s; a churn's pace (required), a burst's or fill's cap
	// (default: as fast as the workers go).
	Rate float64 `json:"rate,omitempty"`
	// Duration: churn, how long Rate pods/s are created and as many of the
	// phase's oldest deleted.
	Duration Duration `json:"duration,omitempty"`
	// Timeout bounds the wait for the phase's schedulable pods to be
	// placed (default: 5 min).
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

// Opcodes, which results also name phases by.
const (
	// KindBurst creates Pods pods for the scheduler, as fast as the
	// workers go (or at Rate).
	KindBurst = "burst"
	// KindChurn creates Rate pods/s for Duration and deletes each about
	// ten seconds later.
	KindChurn = "churn"
	// KindFill is a burst whose pods the harness binds itself (first fit,
	// spec.nodeName), only the mix's well-formed shapes: the state a burst
	// reaches, at a size the scheduler would take too long to place here,
	// for memory at fleet scale. Its throughput is the apiserver's and
	// kwok's, not the scheduler's. A mix with claim entries, or with
	// entries on a DRA pool, cannot take one (Validate, CheckPools).
	KindFill = "fill"
)

var opcodes = []string{KindBurst, KindChurn, KindFill}

// opcodeFields lists the fields each opcode reads besides opcode, name,
// timeout, deletePending and threshold; any other set field is an error,
// so a phase never silently ignores what its author wrote.
var opcodeFields = map[string][]string{
	KindBurst: {"pods", "livePodsPerNode", "rate"},
	KindFill:  {"pods", "livePodsPerNode", "rate"},
	KindChurn: {"rate", "duration"},
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
func (p Phase) Churn() bool { return p.Opcode == KindChurn }

// Fill reports whether the harness binds the phase's pods itself.
func (p Phase) Fill() bool { return p.Opcode == KindFill }

// Duration reads "60s"-style durations.
type Duration struct{ time.Duration }

func (d *Duration) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration like 60s, got %s", b)
	}
	d.Duration = v
	return nil
}

func (d Duration) MarshalJSON() ([]byte, error) { return []byte(`"` + d.String() + `"`), nil }

// Bounds of a phase, checked before any cluster: ten times the largest
// built-in run (20,000 pods, 5 live pods a node), far below what would
// exhaust the machine before the plan's own checks.
const (
	MaxPhasePods       = 200000
	MaxLivePodsPerNode = 250
	MaxRate            = 10000
)

// LoadWorkload reads and validates a workload file.
func LoadWorkload(path string) (*Workload, error) {
	data, err := input.ReadFile(path, input.MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	w, err := ParseWorkload(data)
	if err != nil {
		return nil, fmt.Errorf("workload %s: %w", path, err)
	}
	w.File = path
	return w, nil
}

// ParseWorkload decodes and validates a workload document. Unknown fields
// are errors.
func ParseWorkload(data []byte) (*Workload, error) {
	var w Workload
	if err := apis.Decode(data, Kind, &w); err != nil {
		return nil, err
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return &w, nil
}

// Validate checks the file on its own; pools are checked against the fleet
// by CheckPools.
func (w *Workload) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	errs = append(errs, apis.CheckMeta(w.TypeMeta, w.Metadata, Kind)...)
	if len(w.Spec.Mix) == 0 {
		add("spec.mix: at least one entry is required")
	}
	for i, m := range w.Spec.Mix {
		if m.Pool == "" {
			add("spec.mix[%d].pool: required", i)
		}
		if m.Weight < 1 {
			add("spec.mix[%d].weight: must be >= 1, got %d", i, m.Weight)
		}
		if m.Shape != "" && !contains(shapes, m.Shape) {
			add("spec.mix[%d].shape: unknown shape %q (known: %s)", i, m.Shape, strings.Join(shapes, ", "))
		}
	}
	if len(w.Spec.Phases) == 0 {
		add("spec.phases: at least one phase is required")
	}
	for i, p := range w.Spec.Phases {
		at := fmt.Sprintf("spec.phases[%d] (%s)", i, p.Name)
		if p.Name == "" {
			add("spec.phases[%d].name: required", i)
		}
		allowed, ok := opcodeFields[p.Opcode]
		switch {
		case p.Opcode == "":
			add("%s.opcode: required (one of %s)", at, strings.Join(opcodes, ", "))
			continue
		case !ok:
			add("%s.opcode: unknown opcode %q (known: %s)", at, p.Opcode, strings.Join(opcodes, ", "))
			continue
		}
		foreign := false
		for _, f := range p.setFields() {
			if !slices.Contains(allowed, f) {
				add("%s.%s: not a field of opcode %s (it takes %s)", at, f, p.Opcode, strings.Join(allowed, ", "))
				foreign = true
			}
		}
		errs = append(errs, p.Threshold.validate(at+".threshold", p.Opcode)...)
		if foreign {
			continue
		}
		switch {
		case p.Rate < 0 || p.Rate > MaxRate:
			add("%s.rate: must be 0 to %g pods/s", at, float64(MaxRate))
		case p.Pods < 0 || p.Pods > MaxPhasePods:
			add("%s.pods: must be 0 to %d", at, MaxPhasePods)
		case p.LivePodsPerNode < 0 || p.LivePodsPerNode > MaxLivePodsPerNode:
			add("%s.livePodsPerNode: must be 0 to %d", at, MaxLivePodsPerNode)
		case p.Churn() && p.Rate <= 0:
			add("%s.rate: a churn phase needs a rate > 0", at)
		case p.Churn() && p.Duration.Duration <= 0:
			add("%s.duration: a churn phase needs a duration > 0", at)
		case !p.Churn() && p.Pods < 1 && p.LivePodsPerNode < 1:
			add("%s.pods: a %s phase needs pods >= 1 or livePodsPerNode >= 1", at, p.Opcode)
		case p.Pods > 0 && p.LivePodsPerNode > 0:
			add("%s: set pods or livePodsPerNode, not both", at)
		case p.Fill() && slices.ContainsFunc(w.Spec.Mix, MixEntry.Claim):
			// Refused rather than skipped: a phase never silently leaves
			// out what its author wrote, and a claim bound by nodeName
			// stays unallocated (only the scheduler allocates claims).
			j := slices.IndexFunc(w.Spec.Mix, MixEntry.Claim)
			add("%s.opcode: fill binds pods by nodeName, which leaves a ResourceClaim unallocated (only the scheduler allocates claims), and spec.mix[%d].shape is claim: use a burst", at, j)
		case p.Fill() && !slices.ContainsFunc(w.Spec.Mix, MixEntry.Schedulable):
			add("%s.opcode: fill binds only well-formed pods, and spec.mix has none", at)
		}
	}
	errs = append(errs, w.Spec.Threshold.validate("spec.threshold")...)
	return errors.Join(errs...)
}

// CheckPools reports mix entries naming pools the fleet does not have, or
// shapes a pool's design cannot take. An untolerated pod for a pool whose
// taints a candidate removed is not an error: that it lands is the finding.
func (w *Workload) CheckPools(pools map[string]PoolInfo) error {
	var errs []error
	fill := slices.IndexFunc(w.Spec.Phases, Phase.Fill)
	for i, m := range w.Spec.Mix {
		info, ok := pools[m.Pool]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("workload %s: spec.mix[%d].pool: the fleet has no pool %q", w.File, i, m.Pool))
		case m.Shape == ShapeWholeGPU && (!info.GPU || info.Resource == fakegpu.ResourceGPU):
			errs = append(errs, fmt.Errorf("workload %s: spec.mix[%d].shape: whole-gpu needs a pool that advertises something other than %s; %s advertises %q", w.File, i, fakegpu.ResourceGPU, m.Pool, info.Resource))
		case m.Claim() && !info.DRA:
			errs = append(errs, fmt.Errorf("workload %s: spec.mix[%d].shape: claim needs a pool whose GPUs DRA serves; pool %s has no dra: in the fleet", w.File, i, m.Pool))
		case fill >= 0 && info.DRA && m.Schedulable():
			// Even a limit of the pool's resource is a claim there: the
			// scheduler makes one (dra-facts §3), and a pod bound by
			// nodeName gets none.
			errs = append(errs, fmt.Errorf("workload %s: spec.mix[%d].pool: %s's GPUs are served by DRA, which only the scheduler allocates, and spec.phases[%d] (%s) is a fill, which binds pods by nodeName", w.File, i, m.Pool, fill, w.Spec.Phases[fill].Name))
		}
	}
	return errors.Join(errs...)
}

// PoolInfo is what the workload needs to know of a pool.
type PoolInfo struct {
	GPU bool
	// Resource is what the pool's design advertises.
	Resource string
	// DRA: NVIDIA's DRA driver serves the pool's GPUs (dra: in the fleet).
	DRA bool
}

// Pick returns the mix entry for the i-th pod of a phase. Entries are
// interleaved by weight (smooth weighted round robin over one cycle of
// the total weight), so every stretch of a phase has the mix's proportions.
func (w *Workload) Pick(i int) int {
	w.once.Do(func() {
		total := 0
		for _, m := range w.Spec.Mix {
			total += m.Weight
		}
		counts := make([]int, len(w.Spec.Mix))
		for s := 0; s < total; s++ {
			best, bestGap := 0, -1.0
			for j, m := range w.Spec.Mix {
				if gap := float64(m.Weight)*float64(s+1)/float64(total) - float64(counts[j]); gap > bestGap {
					best, bestGap = j, gap
				}
			}
			counts[best]++
			w.cycle = append(w.cycle, best)
		}
	})
	return w.cycle[i%len(w.cycle)]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
