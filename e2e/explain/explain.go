// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package explain says why a GPU pod is Pending in the pool contract's
// terms: no pool advertises what it asks, its selector or tolerations
// match no pool, the pool it matches is full, or the pool's device plugin
// is down. A Pending pod the contract cannot explain is a bug to report.
package explain

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/gpupool/gpupool/e2e/fleet"
)

// Categories of explanations.
const (
	NoPoolAdvertises = "no-pool-advertises"
	NoMatchingPool   = "no-matching-pool"
	WrongResource    = "pool-advertises-another-resource"
	PluginDown       = "device-plugin-down"
	PoolFull         = "pool-full"
	ClassFails       = "device-class-fails"
	Unexplained      = "unexplained"
)

// Describe says a category in words, for reports (the category itself
// if it has none).
func Describe(category string) string {
	if d, ok := described[category]; ok {
		return d
	}
	return category
}

var described = map[string]string{
	NoPoolAdvertises: "no pool advertises the resource it asks for",
	NoMatchingPool:   "no pool admits it (its selector and tolerations match none)",
	WrongResource:    "its pool advertises another resource",
	PluginDown:       "its pool's device plugin is down",
	PoolFull:         "its pool is full",
	ClassFails:       "its DeviceClass selects no device of the pool",
	Unexplained:      "not explained by the contract",
}

// Reason is one explanation.
type Reason struct {
	Category string
	Message  string
}

func (r Reason) String() string { return r.Category + ": " + r.Message }

// Cluster is what an explanation looks at: the nodes and the pods bound to them.
type Cluster struct {
	Nodes []corev1.Node
	// Pods are all pods; terminal ones are ignored.
	Pods []corev1.Pod
	// DRA is what DRA drivers offer and claims hold (nil: no DRA).
	DRA *DRA
	// NodePools are the autoscaler's node groups (none: no autoscaler).
	NodePools []NodePool
}

// GPURequests is what the scheduler counts the pod as holding of each
// nvidia.com/ resource. Every container list counts: an init container's
// request is held while it runs, a sidecar's for the pod's life
// (k8s.io/component-helpers resource.PodRequests, what the scheduler's
// NodeResourcesFit uses).
func GPURequests(p *corev1.Pod) map[string]int64 { return Requests(p, resourcePrefix) }

// Requests is what the scheduler counts the pod as holding of each
// resource whose name starts with one of prefixes.
func Requests(p *corev1.Pod, prefixes ...string) map[string]int64 {
	out := map[string]int64{}
	for name, q := range resourcehelper.PodRequests(withDefaultRequests(p), resourcehelper.PodResourcesOptions{}) {
		for _, pre := range prefixes {
			if strings.HasPrefix(string(name), pre) && q.Value() > 0 {
				out[string(name)] = q.Value()
			}
		}
	}
	return out
}

const resourcePrefix = "nvidia.com/"

// withDefaultRequests fills a request from its limit where only the limit
// is set, as the apiserver's defaulting does: a pod not through it yet (a
// shape, a reproduction) holds what it will hold once admitted.
func withDefaultRequests(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	for _, list := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range list {
			r := &list[i].Resources
			for name, q := range r.Limits {
				if _, ok := r.Requests[name]; !ok {
					if r.Requests == nil {
						r.Requests = corev1.ResourceList{}
					}
					r.Requests[name] = q
				}
			}
		}
	}
	return p
}

// Pod explains why pod is not scheduled. Where no node takes it, the
// autoscaler's answer comes first: a node is coming, or the NodePool that
// would make it is at its limit.
func Pod(pod *corev1.Pod, c Cluster) Reason {
	req := Requests(pod, resourcePrefix, ImplicitClassPrefix)
	for r, n := range c.DRA.claimRequests(pod) {
		req[r] += n
	}
	if len(req) == 0 {
		return Reason{Unexplained, "not a GPU pod: its Pending state is outside the GPU pool contract"}
	}
	r := onNodes(pod, req, c)
	if r.Category == Unexplained || r.Category == ClassFails {
		return r // a node would take it, or no node can be allocated for
	}
	auto, ok, why := c.autoscale(pod, req)
	switch {
	case ok:
		return auto
	case (r.Category == NoPoolAdvertises || r.Category == NoMatchingPool) && why != "":
		r.Message += "; " + why
	}
	return r
}

// onNodes explains a Pending GPU pod by the nodes there are.
func onNodes(pod *corev1.Pod, req map[string]int64, c Cluster) Reason {
	names := sortedKeys(req)

	// A class whose selector fails to evaluate stops the scheduler's
	// allocation with an error (dra-facts §6.8): nothing else matters.
	for _, r := range names {
		if f := c.DRA.failing(r); f != "" {
			return Reason{ClassFails, "the scheduler cannot allocate " + describe(r) + ": " + f}
		}
	}

	// Which resources does any node advertise at all?
	for _, r := range names {
		if !anyAdvertises(c.Nodes, r) && !c.DRA.anyServes(r) {
			return Reason{NoPoolAdvertises, fmt.Sprintf("no pool advertises %s (pools advertise: %s)", describe(r), strings.Join(advertised(c.Nodes), ", "))}
		}
	}

	// Which nodes would take the pod, GPUs aside?
	var fits []corev1.Node
	var blocked []string
	for _, n := range c.Nodes {
		if !selects(pod, &n) {
			continue
		}
		if t, ok := untolerated(pod, &n); !ok {
			blocked = append(blocked, fmt.Sprintf("pool %s has taint %s=%s:%s the pod does not tolerate", poolOf(&n), t.Key, t.Value, t.Effect))
			continue
		}
		if n.Spec.Unschedulable {
			blocked = append(blocked, fmt.Sprintf("node %s of pool %s is cordoned", n.Name, poolOf(&n)))
			continue
		}
		fits = append(fits, n)
	}
	if len(fits) == 0 {
		msg := placement(pod) + " and tolerations match no pool"
		if len(blocked) > 0 {
			msg += ": " + strings.Join(uniq(blocked), "; ")
		}
		return Reason{NoMatchingPool, msg}
	}

	used := inUse(c.Pods)
	var down, full, other []string
	for _, n := range fits {
		ok := true
		for _, r := range names {
			capQ, hasCap := n.Status.Capacity[corev1.ResourceName(r)]
			alloc := quantity(n.Status.Allocatable, r)
			devices, free, dra := c.DRA.serving(n.Name, r)
			switch {
			case (!hasCap || alloc == 0) && dra:
				// DRA serves a name on a node that offers none of it
				// (dra-facts §3 "Who serves").
				if free < req[r] {
					full = append(full, fmt.Sprintf("pool %s: %s has %d of %d DRA devices serving %s free (claims hold the rest), the pod asks %d", poolOf(&n), n.Name, free, devices, describe(r), req[r]))
					ok = false
				}
			case !hasCap || capQ.Value() == 0:
				other = append(other, fmt.Sprintf("pool %s offers %s, not %s", poolOf(&n), c.DRA.offers(n), describe(r)))
				ok = false
			case alloc == 0:
				down = append(down, fmt.Sprintf("pool %s: %s has %d %s in capacity but 0 allocatable", poolOf(&n), n.Name, capQ.Value(), r))
				ok = false
			case alloc-used[n.Name][r] < req[r]:
				line := fmt.Sprintf("pool %s: %s has %d of %d %s free, the pod asks %d", poolOf(&n), n.Name, alloc-used[n.Name][r], alloc, r, req[r])
				if unhealthy := capQ.Value() - alloc; unhealthy > 0 {
					// The kubelet keeps an unhealthy device in capacity and
					// drops it from allocatable.
					line += fmt.Sprintf(" (%d of its %d unhealthy)", unhealthy, capQ.Value())
				}
				full = append(full, line)
				ok = false
			}
		}
		if ok {
			return Reason{Unexplained, fmt.Sprintf("node %s of pool %s selects, tolerates and has room for the pod", n.Name, poolOf(&n))}
		}
	}
	switch {
	case len(full) > 0:
		return Reason{PoolFull, summarize(full)}
	case len(down) > 0:
		return Reason{PluginDown, "the device plugin is down: " + summarize(down)}
	}
	return Reason{WrongResource, summarize(uniq(other))}
}

func summarize(lines []string) string {
	if len(lines) > 3 {
		return strings.Join(lines[:3], "; ") + fmt.Sprintf("; and %d more", len(lines)-3)
	}
	return strings.Join(lines, "; ")
}

func poolOf(n *corev1.Node) string {
	if p := n.Labels[fleet.LabelPool]; p != "" {
		return p
	}
	return "(no pool) " + n.Name
}

// Admits reports whether the node would take the pod, its resources aside:
// the pod's nodeSelector and required node affinity select it, the pod
// tolerates its NoSchedule and NoExecute taints, and it is not cordoned.
func Admits(p *corev1.Pod, n *corev1.Node) bool {
	_, tolerated := untolerated(p, n)
	return selects(p, n) && tolerated && !n.Spec.Unschedulable
}

// selects is the scheduler's NodeAffinity filter: the nodeSelector and
// the required node affinity both.
func selects(p *corev1.Pod, n *corev1.Node) bool {
	ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(n)
	return ok && err == nil
}

// placement says what the pod asks of a node's labels, for messages.
func placement(p *corev1.Pod) string {
	s := fmt.Sprintf("its nodeSelector %v", p.Spec.NodeSelector)
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		s += ", required node affinity"
	}
	return s
}

// untolerated returns the first NoSchedule/NoExecute taint the pod does not tolerate.
func untolerated(p *corev1.Pod, n *corev1.Node) (corev1.Taint, bool) {
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		tolerated := false
		for _, tol := range p.Spec.Tolerations {
			if tolerates(tol, t) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			return t, false
		}
	}
	return corev1.Taint{}, true
}

func anyAdvertises(nodes []corev1.Node, r string) bool {
	for _, n := range nodes {
		if q, ok := n.Status.Capacity[corev1.ResourceName(r)]; ok && q.Value() > 0 {
			return true
		}
	}
	return false
}

func advertised(nodes []corev1.Node) []string {
	set := map[string]bool{}
	for _, n := range nodes {
		for name, q := range n.Status.Capacity {
			if strings.HasPrefix(string(name), "nvidia.com/") && q.Value() > 0 {
				set[string(name)] = true
			}
		}
	}
	return sortedKeys(set)
}

// HoldsResources reports whether the pod counts against its node's
// resources, as the scheduler counts it: bound and not finished (a
// terminating pod holds its devices until it is gone).
func HoldsResources(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

func inUse(pods []corev1.Pod) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for i := range pods {
		p := &pods[i]
		if !HoldsResources(p) {
			continue
		}
		if out[p.Spec.NodeName] == nil {
			out[p.Spec.NodeName] = map[string]int64{}
		}
		for r, n := range GPURequests(p) {
			out[p.Spec.NodeName][r] += n
		}
	}
	return out
}

func quantity(l corev1.ResourceList, r string) int64 {
	q, ok := l[corev1.ResourceName(r)]
	if !ok {
		return 0
	}
	return q.Value()
}

func uniq(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// tolerates is the core toleration rule (Equal/Exists, empty key and
// effect as wildcards), enough for the taints pools use.
func tolerates(tol corev1.Toleration, t corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != t.Effect {
		return false
	}
	if tol.Key == "" {
		return tol.Operator == corev1.TolerationOpExists
	}
	if tol.Key != t.Key {
		return false
	}
	return tol.Operator == corev1.TolerationOpExists || tol.Value == t.Value
}
