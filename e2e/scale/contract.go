package scale

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpupool/gpupool/e2e/explain"
	"github.com/gpupool/gpupool/e2e/fleet"
)

// Contract is the pool contract checked over every pod of a run at once:
// the placement assertions of the contract suites, in bulk.
type Contract struct {
	Pods      int `json:"podsChecked"`
	Scheduled int `json:"scheduled"`
	// Violations counts every broken rule; Examples keeps the first few.
	Violations int            `json:"violations"`
	Examples   []string       `json:"examples,omitempty"`
	ByRule     map[string]int `json:"byRule,omitempty"`
	// Pending counts Pending pods by the contract's explanation.
	Pending map[string]int `json:"pending"`
}

// Rules checked, as the report names them.
const (
	RuleSKUMatch        = "pod lands on its own pool"
	RuleExactResource   = "node advertises what the pod asks"
	RuleNotOvercommit   = "node's pods fit its allocatable"
	RuleNoCrossTrust    = "no time-sliced node hosts two trust domains"
	RuleExpectedPending = "deliberately unschedulable pods stay Pending for the contract's reason"
	RuleScheduled       = "well-formed pods are placed"
)

const maxExamples = 10

func (c *Contract) violate(rule, format string, args ...any) {
	c.Violations++
	if c.ByRule == nil {
		c.ByRule = map[string]int{}
	}
	c.ByRule[rule]++
	if len(c.Examples) < maxExamples {
		c.Examples = append(c.Examples, rule+": "+fmt.Sprintf(format, args...))
	}
}

// checkContract looks at the run's live pods (terminal and deleting ones
// aside) against the nodes. expected gives each mix entry's expected
// Pending category ("" for pods that must be placed).
func checkContract(fl *fleet.Fleet, w *Workload, expected []string, nodes []corev1.Node, pods []corev1.Pod, namespaces []corev1.Namespace) Contract {
	c := Contract{Pending: map[string]int{}}
	byName := make(map[string]*corev1.Node, len(nodes))
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	trustOf := namespaceTrust(fl, namespaces)
	shared := sharedPools(fl)
	used := map[string]map[string]int64{}
	trusts := map[string]map[string]bool{}
	var pending []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		entry, err := strconv.Atoi(p.Labels[LabelEntry])
		if err != nil || entry < 0 || entry >= len(w.Spec.Mix) {
			continue
		}
		c.Pods++
		if p.Spec.NodeName == "" {
			pending = append(pending, p)
			continue
		}
		c.Scheduled++
		m := w.Spec.Mix[entry]
		n := byName[p.Spec.NodeName]
		if n == nil {
			c.violate(RuleSKUMatch, "pod %s/%s is bound to %s, which is not a node of the fleet", p.Namespace, p.Name, p.Spec.NodeName)
			continue
		}
		pool := n.Labels[fleet.LabelPool]
		if expected[entry] != "" {
			c.violate(RuleExpectedPending, "pod %s/%s (%s on %s) was placed on %s of pool %s", p.Namespace, p.Name, m.Shape, m.Pool, n.Name, pool)
		} else if pool != m.Pool {
			c.violate(RuleSKUMatch, "pod %s/%s for pool %s landed on %s of pool %s", p.Namespace, p.Name, m.Pool, n.Name, pool)
		}
		for r, q := range explain.GPURequests(p) {
			if alloc, ok := n.Status.Allocatable[corev1.ResourceName(r)]; !ok || alloc.Value() == 0 {
				c.violate(RuleExactResource, "pod %s/%s asks %s, node %s advertises none", p.Namespace, p.Name, r, n.Name)
			}
			if used[n.Name] == nil {
				used[n.Name] = map[string]int64{}
			}
			used[n.Name][r] += q
		}
		if shared[pool] {
			if trusts[n.Name] == nil {
				trusts[n.Name] = map[string]bool{}
			}
			trusts[n.Name][trustOf[p.Namespace]] = true
		}
	}
	for node, rs := range used {
		for r, q := range rs {
			if alloc := byName[node].Status.Allocatable[corev1.ResourceName(r)]; q > alloc.Value() {
				c.violate(RuleNotOvercommit, "node %s: pods hold %d %s, it has %d", node, q, r, alloc.Value())
			}
		}
	}
	for node, ts := range trusts {
		if len(ts) > 1 {
			c.violate(RuleNoCrossTrust, "time-sliced node %s hosts pods of trust domains %v", node, slices.Sorted(maps.Keys(ts)))
		}
	}
	cluster := explain.Cluster{Nodes: nodes, Pods: pods}
	for _, p := range pending {
		entry, _ := strconv.Atoi(p.Labels[LabelEntry])
		why := explain.Pod(p, cluster)
		if len(explain.GPURequests(p)) == 0 {
			why.Category = "cpu-pod"
		}
		c.Pending[why.Category]++
		switch want := expected[entry]; {
		case want == "":
			c.violate(RuleScheduled, "pod %s/%s for pool %s is Pending: %s", p.Namespace, p.Name, w.Spec.Mix[entry].Pool, why)
		case why.Category != want:
			c.violate(RuleExpectedPending, "pod %s/%s (%s on %s) is Pending as %s, want %s", p.Namespace, p.Name, w.Spec.Mix[entry].Shape, w.Spec.Mix[entry].Pool, why, want)
		}
	}
	return c
}

// sharedPools are the pools designed to share GPUs between pods.
func sharedPools(fl *fleet.Fleet) map[string]bool {
	out := map[string]bool{}
	for _, p := range fl.Spec.Pools {
		if m := p.Mode(); m == fleet.ModeTimeSlicing || m == fleet.ModeMPS {
			out[p.Name] = true
		}
	}
	return out
}

// namespaceTrust maps namespaces to the trust domain whose labels they
// carry ("" for none).
func namespaceTrust(fl *fleet.Fleet, nss []corev1.Namespace) map[string]string {
	out := map[string]string{}
	for _, ns := range nss {
		for _, p := range fl.Spec.Pools {
			for _, d := range p.TrustDomains {
				if labels.SelectorFromSet(d.Labels).Matches(labels.Set(ns.Labels)) {
					out[ns.Name] = d.Name
				}
			}
		}
	}
	return out
}
