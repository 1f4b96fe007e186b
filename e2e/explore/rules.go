// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package explore

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Rule is one contract rule as exploration tries it: the part of the pod
// space that can break it, and its oracle.
type Rule struct {
	// Check is the id of the contract check the rule reports as.
	Check string
	Focus Focus
	// Place: the rule is about where pods land, so shapes are created
	// for real and judged once the scheduler has decided. Otherwise
	// admission's verdict is enough.
	Place bool
	// Admitted judges a pod admission let through ("" holds).
	Admitted func(p *corev1.Pod, c *Cluster) string
	// Placed judges a pod the scheduler bound to node n, beside the pods
	// already there.
	Placed func(ctx context.Context, p *corev1.Pod, n Node, onNode []*corev1.Pod, c *Cluster) string
	// Sight: Placed judges what the pod's containers see, so it waits for
	// the simulated kubelet to have recorded it (or refused the pod).
	Sight bool
}

// Violation is what an oracle saw go wrong.
type Violation struct {
	Message string
	// Neighbours are the pods a placement violation happened beside.
	Neighbours []*corev1.Pod
}

// Judge submits the shape and applies the rule's oracle to what the
// cluster did with it; nil when the rule held.
func (c *Cluster) Judge(ctx context.Context, r Rule, s Shape) (*Violation, error) {
	out, cleanup, err := c.Submit(ctx, s, r.Place)
	defer cleanup()
	if err != nil || out.Denied != "" {
		return nil, err
	}
	for _, p := range out.Pods {
		if r.Admitted != nil {
			if v := r.Admitted(p, c); v != "" {
				return &Violation{Message: via(s, p) + v}, nil
			}
		}
		if r.Placed == nil || p.Spec.NodeName == "" {
			continue
		}
		n, ok, err := c.Node(ctx, p.Spec.NodeName)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // not a node of the fleet
		}
		if r.Sight && !n.GPU {
			continue
		}
		// The node's kubelet has the last word: a pod bound by nodeName
		// skips the scheduler, and the kubelet may refuse it (its
		// selector, its fit; kubelet-facts §1). Judged once it has.
		if n.GPU {
			seen, err := c.awaitSight(ctx, p)
			if err != nil {
				return nil, err
			}
			if seen == nil {
				continue
			}
			p = seen
		}
		all, err := c.PodsOn(ctx, n.Name)
		if err != nil {
			return nil, err
		}
		// The shapes of the rules running beside this one come and go
		// on the same nodes: they are no tenant's workload, and a stray
		// one (bound by nodeName, say, before its kubelet refuses it)
		// is not what this shape landed beside.
		var onNode []*corev1.Pod
		for _, q := range all {
			if other := q.Labels[LabelRule]; other == "" || other == r.short() || q.UID == p.UID {
				onNode = append(onNode, q)
			}
		}
		if c.placed == nil {
			c.placed = map[string]int{}
		}
		c.placed[n.Pool]++
		if v := r.Placed(ctx, p, n, onNode, c); v != "" {
			var neighbours []*corev1.Pod
			for _, q := range onNode {
				if q.UID != p.UID && Live(q) && HoldsGPU(q) && q.Namespace != p.Namespace {
					neighbours = append(neighbours, q)
				}
			}
			return &Violation{Message: via(s, p) + v, Neighbours: neighbours}, nil
		}
	}
	return nil, nil
}

func via(s Shape, p *corev1.Pod) string {
	if s.Via == ViaPod {
		return ""
	}
	return fmt.Sprintf("%s %s/%s's controller created pod %s: ", s.Via, s.Pod.Namespace, s.Pod.Name, p.Name)
}

// The rules exploration tries. Each is reported as a check of its own
// (e2e/checks), so a mutant can be judged with and without exploration.
var (
	RuntimeClassRule = Rule{
		Check: "explore.gpu-pods-run-under-nvidia",
		Focus: Focus{Explore: []string{DimSlot, DimRuntime, DimVia, DimForm, DimAsk}},
		Admitted: func(p *corev1.Pod, _ *Cluster) string {
			return RuntimeClassViolation(p)
		},
	}
	SKUPoolRule = Rule{
		Check: "explore.gpu-pods-select-one-pool",
		Focus: Focus{Explore: []string{DimSlot, DimSelector, DimNodeName, DimVia, DimAsk}, NodeName: true},
		Admitted: func(p *corev1.Pod, c *Cluster) string {
			return SKUPoolViolation(p, c.Nodes)
		},
	}
	TrustRule = Rule{
		Check: "explore.no-cross-trust-timeslice",
		Focus: Focus{
			Pools: func(p PoolSpace) bool { return len(p.Domains) >= 2 },
			// Every pool split by trust, fixed or autoscaled, as often.
			Explore:  []string{DimPool, DimSlot, DimAim, DimHome, DimToleration, DimNodeName, DimVia, DimAfter},
			NodeName: true,
			After:    []string{AfterRetarget},
		},
		Place: true,
		Placed: func(ctx context.Context, p *corev1.Pod, n Node, onNode []*corev1.Pod, c *Cluster) string {
			return TrustViolation(p, n, onNode, c.DomainOf, func(q *corev1.Pod) bool { return c.holdsOnNode(ctx, q, n.Node) })
		},
	}
	ImagesPinnedRule = Rule{
		Check: "explore.gpu-images-pinned",
		Focus: Focus{Explore: []string{DimSlot, DimImage, DimExtra, DimVia, DimAsk, DimAfter}, After: []string{AfterImageTag}},
		Admitted: func(p *corev1.Pod, _ *Cluster) string {
			return ImagesPinnedViolation(p)
		},
	}
	SightRule = Rule{
		Check: "explore.no-gpu-without-allocation",
		Focus: Focus{
			// Every GPU pool, fixed or autoscaled, as often: what a
			// container sees is each node's stack's doing.
			Explore:  []string{DimPool, DimNoGPU, DimGPUEnv, DimEnvValue, DimPrivilege, DimRuntime, DimHome, DimAim, DimNodeName, DimVia, DimAfter},
			NodeName: true, Sight: true,
			After: []string{AfterImageCUDA, AfterEphemeralEnv, AfterEphemeralCUDA, AfterEphemeralPrivileged, AfterRetarget},
		},
		Place: true, Sight: true,
		Placed: func(_ context.Context, p *corev1.Pod, _ Node, _ []*corev1.Pod, _ *Cluster) string {
			return SightViolation(p)
		},
	}
	OwnServiceAccountRule = Rule{
		Check: "explore.gpu-pods-own-serviceaccount",
		Focus: Focus{Explore: []string{DimSlot, DimAccount, DimVia, DimAsk}},
		Admitted: func(p *corev1.Pod, _ *Cluster) string {
			return OwnServiceAccountViolation(p)
		},
	}
)

// Rules lists every rule, in report order.
var Rules = []Rule{RuntimeClassRule, SKUPoolRule, TrustRule, ImagesPinnedRule, OwnServiceAccountRule, SightRule}

// RuleFor returns the rule reported as check id.
func RuleFor(id string) (Rule, bool) {
	for _, r := range Rules {
		if r.Check == id {
			return r, true
		}
	}
	return Rule{}, false
}

// short is a rule's name without its area, for object and file names.
func (r Rule) short() string {
	return strings.TrimPrefix(r.Check, "explore.")
}
