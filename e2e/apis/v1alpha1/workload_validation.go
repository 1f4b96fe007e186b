// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gpupool/gpupool/e2e/apis"
)

// Bounds of a phase, checked before any cluster: ten times the largest
// built-in run (20,000 pods, 5 live pods a node), far below what would
// exhaust the machine before the plan's own checks.
const (
	MaxPhasePods       = 200000
	MaxLivePodsPerNode = 250
	MaxRate            = 10000
)

// Validate checks the file on its own; pools are checked against the fleet
// by scale.CheckPools.
func (w *Workload) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	errs = append(errs, apis.CheckMeta(w.TypeMeta, w.Metadata, apis.KindWorkload)...)
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
		if m.Shape != "" && !slices.Contains(shapes, m.Shape) {
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
		case p.Autoscale() && p.Pods < 1:
			add("%s.pods: an autoscale phase needs pods >= 1", at)
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

// phaseThresholds lists the thresholds each opcode has figures for: a fill
// phase's pods skip the scheduler, so only the API's latency is its own.
var phaseThresholds = map[string][]string{
	OpcodeBurst:     {"schedulingThroughput", "createToScheduledP99", "mutatingP99"},
	OpcodeChurn:     {"createToScheduledP99", "mutatingP99"},
	OpcodeFill:      {"mutatingP99"},
	OpcodeAutoscale: {"firstNode", "allScheduled", "nodesOverNeeded", "createToScheduledP99", "mutatingP99"},
}

func (t *PhaseThreshold) validate(at, opcode string) []error {
	if t == nil {
		return nil
	}
	var errs []error
	allowed := phaseThresholds[opcode]
	for _, c := range []struct {
		name string
		set  bool
		errs []error
	}{
		{"schedulingThroughput", t.SchedulingThroughput != nil, t.SchedulingThroughput.validate(at + ".schedulingThroughput")},
		{"createToScheduledP99", t.CreateToScheduledP99 != nil, t.CreateToScheduledP99.validate(at + ".createToScheduledP99")},
		{"mutatingP99", t.MutatingP99 != nil, t.MutatingP99.validate(at + ".mutatingP99")},
		{"firstNode", t.FirstNode != nil, t.FirstNode.validate(at + ".firstNode")},
		{"allScheduled", t.AllScheduled != nil, t.AllScheduled.validate(at + ".allScheduled")},
		{"nodesOverNeeded", t.NodesOverNeeded != nil, t.NodesOverNeeded.validate(at + ".nodesOverNeeded")},
	} {
		if c.set && !slices.Contains(allowed, c.name) {
			errs = append(errs, fmt.Errorf("%s.%s: not a threshold of opcode %s (it takes %s)", at, c.name, opcode, strings.Join(allowed, ", ")))
			continue
		}
		errs = append(errs, c.errs...)
	}
	return errs
}

func (t *WorkloadThreshold) validate(at string) []error {
	if t == nil {
		return nil
	}
	var errs []error
	errs = append(errs, t.NodesReady.validate(at+".nodesReady")...)
	errs = append(errs, t.NodesNotReady.validate(at+".nodesNotReady")...)
	errs = append(errs, t.MutatingP99.validate(at+".mutatingP99")...)
	errs = append(errs, t.ControlPlaneRSS.validate(at+".controlPlaneRSS")...)
	return errs
}

func (t *LatencyThreshold) validate(at string) []error {
	if t == nil {
		return nil
	}
	return t.Scope.validate(at, t.Max.Duration > 0, "max: required, a duration > 0 like 5s")
}

func (t *ThroughputThreshold) validate(at string) []error {
	if t == nil {
		return nil
	}
	return t.Scope.validate(at, t.Min > 0, "min: required, pods/s > 0")
}

func (t *MemoryThreshold) validate(at string) []error {
	if t == nil {
		return nil
	}
	return t.Scope.validate(at, t.Max.Sign() > 0, "max: required, a quantity > 0 like 6Gi")
}

func (t *CountThreshold) validate(at string) []error {
	if t == nil {
		return nil
	}
	return t.Scope.validate(at, t.Max != nil && *t.Max >= 0, "max: required, >= 0")
}

// validate checks the scope, and with limitOK the threshold's own limit.
func (s Scope) validate(at string, limitOK bool, limitErr string) []error {
	var errs []error
	if !limitOK {
		errs = append(errs, fmt.Errorf("%s.%s", at, limitErr))
	}
	for _, b := range []struct {
		name string
		v    int
	}{{"minNodes", s.MinNodes}, {"maxNodes", s.MaxNodes}, {"minPods", s.MinPods}} {
		if b.v < 0 {
			errs = append(errs, fmt.Errorf("%s.%s: must be >= 0, got %d", at, b.name, b.v))
		}
	}
	if s.MaxNodes > 0 && s.MaxNodes < s.MinNodes {
		errs = append(errs, fmt.Errorf("%s.maxNodes: %d is below minNodes %d", at, s.MaxNodes, s.MinNodes))
	}
	return errs
}
