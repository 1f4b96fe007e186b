// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fleet

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxAutoscaledNodes bounds what one autoscaled pool may grow to in a run:
// each node is a kwok node and a simulated GPU stack's worth of objects.
const MaxAutoscaledNodes = 1000

// AutoscaledPool is a node group an autoscaler makes from zero: the
// hardware of its nodes (SKU, GPUs, CPU, memory) is the instance type the
// simulated cloud offers for it, and their labels, taints and limits are
// the candidate's NodePool's. Labels and Taints say what the pool is
// designed to carry, which the checks compare with what the NodePool
// gives its nodes.
type AutoscaledPool struct {
	Pool `json:",inline"`
	// NodePool names the candidate's Karpenter NodePool meant to scale
	// this pool.
	NodePool string `json:"nodePool"`
	// MaxNodes is the most nodes the pool is designed to grow to.
	MaxNodes int `json:"maxNodes"`
}

// Autoscaled lists the autoscaled pools' designs.
func (f *Fleet) Autoscaled() []AutoscaledPool { return f.Spec.AutoscaledPools }

// AutoscaledPoolFor returns the autoscaled pool a NodePool scales.
func (f *Fleet) AutoscaledPoolFor(nodePool string) (AutoscaledPool, bool) {
	for _, p := range f.Spec.AutoscaledPools {
		if p.NodePool == nodePool {
			return p, true
		}
	}
	return AutoscaledPool{}, false
}

func (p AutoscaledPool) validate() []error {
	errs := p.Pool.validate()
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if p.Nodes != 0 {
		add("nodes: an autoscaled pool starts at zero nodes (the autoscaler makes them), got %d", p.Nodes)
	}
	if !p.GPU() {
		add("sku: an autoscaled pool is a GPU pool: sku and gpusPerNode are required")
	}
	if len(p.TrustDomains) > 0 {
		add("trustDomains: not supported on an autoscaled pool yet; give each trust domain its own autoscaled pool and NodePool")
	}
	if msgs := validation.IsDNS1123Subdomain(p.NodePool); len(msgs) > 0 {
		add("nodePool: %q is not a NodePool name: %s", p.NodePool, strings.Join(msgs, "; "))
	}
	if p.MaxNodes < 1 || p.MaxNodes > MaxAutoscaledNodes {
		add("maxNodes: must be 1 to %d, got %d", MaxAutoscaledNodes, p.MaxNodes)
	}
	return errs
}

// validateAutoscaledNodePools refuses two pools scaled by one NodePool:
// the nodes it makes would belong to both.
func validateAutoscaledNodePools(pools []AutoscaledPool) []error {
	var errs []error
	by := map[string]string{}
	for i, p := range pools {
		if p.NodePool == "" {
			continue
		}
		if other, dup := by[p.NodePool]; dup {
			errs = append(errs, fmt.Errorf("spec.autoscaledPools[%d] (%s).nodePool: NodePool %q already scales pool %s", i, p.Name, p.NodePool, other))
			continue
		}
		by[p.NodePool] = p.Name
	}
	return errs
}
