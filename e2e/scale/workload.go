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

	"github.com/gpupool/gpupool/e2e/apis"
	"github.com/gpupool/gpupool/e2e/apis/v1alpha1"
	"github.com/gpupool/gpupool/e2e/input"
	"github.com/gpupool/gpupool/fakegpu"
)

const (
	APIVersion = apis.APIVersion
	Kind       = apis.KindWorkload
)

// Shapes of pods in a mix (v1alpha1's).
const (
	ShapeWellFormed  = v1alpha1.ShapeWellFormed
	ShapeWholeGPU    = v1alpha1.ShapeWholeGPU
	ShapeUntolerated = v1alpha1.ShapeUntolerated
	ShapeClaim       = v1alpha1.ShapeClaim
)

// Opcodes of a phase (v1alpha1's), which results also name phases by.
const (
	KindBurst     = v1alpha1.OpcodeBurst
	KindChurn     = v1alpha1.OpcodeChurn
	KindFill      = v1alpha1.OpcodeFill
	KindAutoscale = v1alpha1.OpcodeAutoscale
)

// Bounds of a phase (v1alpha1's).
const (
	MaxPhasePods       = v1alpha1.MaxPhasePods
	MaxLivePodsPerNode = v1alpha1.MaxLivePodsPerNode
	MaxRate            = v1alpha1.MaxRate
)

// The workload format's types, by their names here (v1alpha1 holds them).
type (
	Workload            = v1alpha1.Workload
	WorkloadSpec        = v1alpha1.WorkloadSpec
	MixEntry            = v1alpha1.MixEntry
	Phase               = v1alpha1.Phase
	Duration            = v1alpha1.Duration
	Scope               = v1alpha1.Scope
	LatencyThreshold    = v1alpha1.LatencyThreshold
	ThroughputThreshold = v1alpha1.ThroughputThreshold
	MemoryThreshold     = v1alpha1.MemoryThreshold
	CountThreshold      = v1alpha1.CountThreshold
	PhaseThreshold      = v1alpha1.PhaseThreshold
	WorkloadThreshold   = v1alpha1.WorkloadThreshold
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

// ParseWorkload decodes and validates a workload document
// (v1alpha1.DecodeWorkload). Unknown fields are errors.
func ParseWorkload(data []byte) (*Workload, error) { return v1alpha1.DecodeWorkload(data) }

// CheckPools reports the workload's mix entries naming pools the fleet
// does not have, or shapes a pool's design cannot take. An untolerated
// pod for a pool whose taints a candidate removed is not an error: that
// it lands is the finding.
//
// An entry on an autoscaled pool is for autoscale phases alone, and the
// other phases create pods for fixed pools alone: each phase needs
// entries of its kind, and each entry a phase that creates its pods.
func CheckPools(w *Workload, pools map[string]PoolInfo) error {
	var errs []error
	fill := slices.IndexFunc(w.Spec.Phases, Phase.Fill)
	autoscale := slices.IndexFunc(w.Spec.Phases, Phase.Autoscale)
	others := slices.ContainsFunc(w.Spec.Phases, func(p Phase) bool { return !p.Autoscale() })
	var fixed, autoscaled int
	for i, m := range w.Spec.Mix {
		info, ok := pools[m.Pool]
		if ok && info.Autoscaled {
			autoscaled++
		} else if ok {
			fixed++
		}
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("workload %s: spec.mix[%d].pool: the fleet has no pool %q, fixed or autoscaled", w.File, i, m.Pool))
		case info.Autoscaled && m.Shape != "" && m.Shape != ShapeWellFormed:
			errs = append(errs, fmt.Errorf("workload %s: spec.mix[%d].shape: %s on autoscaled pool %s: an autoscale phase measures scale-up for pods their pool is designed for, so its entries take only %s pods", w.File, i, m.Shape, m.Pool, ShapeWellFormed))
		case info.Autoscaled && autoscale < 0:
			errs = append(errs, fmt.Errorf("workload %s: spec.mix[%d].pool: %s is an autoscaled pool, whose pods only an autoscale phase creates, and spec.phases has none", w.File, i, m.Pool))
		case info.Autoscaled:
			// What follows is the fixed pools'.
		case !others:
			errs = append(errs, fmt.Errorf("workload %s: spec.mix[%d].pool: %s is a fixed pool, whose pods only burst, churn and fill phases create, and every phase is an autoscale", w.File, i, m.Pool))
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
	if _, err := autoscaleNeeds(w, pools); err != nil {
		errs = append(errs, err)
	}
	for i, ph := range w.Spec.Phases {
		switch {
		case ph.Autoscale() && autoscaled == 0:
			errs = append(errs, fmt.Errorf("workload %s: spec.phases[%d] (%s): an autoscale phase creates pods for the fleet's autoscaled pools, and no spec.mix entry names one", w.File, i, ph.Name))
		case !ph.Autoscale() && fixed == 0:
			errs = append(errs, fmt.Errorf("workload %s: spec.phases[%d] (%s): a %s phase creates pods for fixed pools, and every spec.mix entry names an autoscaled pool", w.File, i, ph.Name, ph.Opcode))
		}
	}
	return errors.Join(errs...)
}

// PoolInfo is what the workload needs to know of a pool.
type PoolInfo struct {
	// Autoscaled: one of the fleet's autoscaledPools, at zero nodes until
	// an autoscaler makes some.
	Autoscaled bool
	GPU        bool
	// Resource is what the pool's design advertises.
	Resource string
	// DRA: NVIDIA's DRA driver serves the pool's GPUs (dra: in the fleet).
	DRA bool
	// PerNode: an autoscaled pool's, the count of Resource one node of its
	// design advertises (the pods of one GPU each it takes).
	PerNode int64
	// Domains: an autoscaled pool's, where its pods go, in the fleet's
	// order of its trust domains (one, unnamed, without domains).
	Domains []PoolDomain
	// DesignErr says why Resource and PerNode could not be worked out
	// from the pool's design ("" when they were).
	DesignErr string
}
