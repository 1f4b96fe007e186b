// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package explore

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/gpupool/gpupool/e2e/explain"
	"github.com/gpupool/gpupool/e2e/workload"
	"github.com/gpupool/gpupool/fakegpu"
)

// ResourcePrefix marks the resources the pool contract is about.
const ResourcePrefix = "nvidia.com/"

// GPURequests is what the scheduler counts the pod as holding of each
// nvidia.com/ resource and each DeviceClass's implicit extended resource
// (deviceclass.resource.kubernetes.io/<class>), every container list
// included.
func GPURequests(p *corev1.Pod) map[string]int64 {
	return explain.Requests(p, ResourcePrefix, workload.ImplicitClassPrefix)
}

// HoldsGPU reports whether the pod gets a device: by an nvidia.com/ or an
// implicit DeviceClass resource, or by a ResourceClaim (allocated for the
// pod whether or not a container references it). Shapes claim only from
// GPU DeviceClasses (Space.Claims); a neighbour's claim of another
// driver's class would count too, erring toward reporting a violation
// for a person to read rather than missing one.
func HoldsGPU(p *corev1.Pod) bool { return len(GPURequests(p)) > 0 || len(p.Spec.ResourceClaims) > 0 }

// whereGPU says which container lists ask for devices.
func whereGPU(p *corev1.Pod) string {
	var where []string
	for _, c := range p.Spec.Containers {
		if asksGPU(c) {
			where = append(where, "container "+c.Name)
		}
	}
	for _, c := range p.Spec.InitContainers {
		if asksGPU(c) {
			kind := "init container "
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				kind = "sidecar "
			}
			where = append(where, kind+c.Name)
		}
	}
	if len(where) == 0 && len(p.Spec.ResourceClaims) > 0 {
		return "the pod's claims, which no container references"
	}
	return strings.Join(where, ", ")
}

func asksGPU(c corev1.Container) bool {
	if len(c.Resources.Claims) > 0 {
		return true
	}
	for _, l := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		for name := range l {
			if strings.HasPrefix(string(name), ResourcePrefix) || strings.HasPrefix(string(name), workload.ImplicitClassPrefix) {
				return true
			}
		}
	}
	return false
}

func gpuSummary(p *corev1.Pod) string {
	req := GPURequests(p)
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(req)) {
		parts = append(parts, fmt.Sprintf("%d %s", req[n], n))
	}
	for _, c := range p.Spec.ResourceClaims {
		what := "claim " + c.Name
		if c.ResourceClaimTemplateName != nil {
			what += " (from template " + *c.ResourceClaimTemplateName + ")"
		}
		parts = append(parts, "the devices of "+what)
	}
	return strings.Join(parts, " and ")
}

// RuntimeClassViolation: an admitted pod holding a GPU that does not run
// under RuntimeClass nvidia ("" when the rule holds).
func RuntimeClassViolation(p *corev1.Pod) string {
	if !HoldsGPU(p) {
		return ""
	}
	rc := "no runtimeClassName"
	if p.Spec.RuntimeClassName != nil {
		if *p.Spec.RuntimeClassName == workload.RuntimeClass {
			return ""
		}
		rc = "runtimeClassName " + *p.Spec.RuntimeClassName
	}
	return fmt.Sprintf("pod %s/%s was admitted with %s while it holds %s (in %s)", p.Namespace, p.Name, rc, gpuSummary(p), whereGPU(p))
}

// Node is what the oracles know of a node: its name, labels, the pool it
// belongs to, and whether that pool shares its GPUs between pods.
type Node struct {
	*corev1.Node
	Pool string
	GPU  bool
	// SharedGPU: one GPU goes to several pods (time-slicing, MPS, or
	// DRA's consumable shares).
	SharedGPU bool
	// Domain is the trust domain the node is reserved for ("" none).
	Domain string
}

// SelectablePools lists the GPU pools with a node the pod's node
// selection admits: its nodeSelector, required node affinity and nodeName,
// matched as the scheduler and kubelet match them (tolerations aside:
// taints are the pool's side of the contract).
func SelectablePools(p *corev1.Pod, nodes []Node) map[string]int {
	aff := nodeaffinity.GetRequiredNodeAffinity(p)
	out := map[string]int{}
	for _, n := range nodes {
		if !n.GPU || (p.Spec.NodeName != "" && p.Spec.NodeName != n.Name) {
			continue
		}
		if ok, err := aff.Match(n.Node); ok && err == nil {
			out[n.Pool]++
		}
	}
	return out
}

// SKUPoolViolation: an admitted GPU pod whose selection spans GPU nodes of
// more than one pool.
func SKUPoolViolation(p *corev1.Pod, nodes []Node) string {
	if !HoldsGPU(p) {
		return ""
	}
	pools := SelectablePools(p, nodes)
	if len(pools) <= 1 {
		return ""
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(pools)) {
		parts = append(parts, fmt.Sprintf("%s (%d nodes)", name, pools[name]))
	}
	return fmt.Sprintf("pod %s/%s holding %s (in %s) was admitted, and its node selection admits GPU nodes of %d pools: %s", p.Namespace, p.Name, gpuSummary(p), whereGPU(p), len(pools), strings.Join(parts, ", "))
}

var digestRef = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)

// ImagesPinnedViolation: an admitted GPU pod with an image not pinned by
// digest, in any container list.
func ImagesPinnedViolation(p *corev1.Pod) string {
	if !HoldsGPU(p) {
		return ""
	}
	for _, list := range []struct {
		what string
		cs   []corev1.Container
	}{{"container", p.Spec.Containers}, {"init container", p.Spec.InitContainers}} {
		for _, c := range list.cs {
			if !digestRef.MatchString(c.Image) {
				return fmt.Sprintf("pod %s/%s holding %s (in %s) was admitted with %s %s's image %q not pinned by digest", p.Namespace, p.Name, gpuSummary(p), whereGPU(p), list.what, c.Name, c.Image)
			}
		}
	}
	return ""
}

// OwnServiceAccountViolation: an admitted GPU pod under its namespace's
// default service account (the admitted pod: the ServiceAccount admission
// plugin has filled in an empty name by then).
func OwnServiceAccountViolation(p *corev1.Pod) string {
	if !HoldsGPU(p) {
		return ""
	}
	if sa := p.Spec.ServiceAccountName; sa != "" && sa != "default" {
		return ""
	}
	return fmt.Sprintf("pod %s/%s holding %s (in %s) was admitted under the namespace's default service account", p.Namespace, p.Name, gpuSummary(p), whereGPU(p))
}

// Identity names whom a pod's GPU work belongs to on a shared node: its
// namespace's trust domain, or the namespace itself when it has none.
func Identity(ns string, domainOf map[string]string) string {
	if d := domainOf[ns]; d != "" {
		return "trust domain " + d
	}
	return "namespace " + ns + " (no trust domain)"
}

// Live reports whether a bound pod holds its node's resources: not
// terminated, as the scheduler counts it.
func Live(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// TrustViolation judges a shared-GPU node after pod p landed on it: every
// live pod on it that holds a GPU there (holds) must belong to the node's
// trust domain, and to one identity at most ("" when the rule holds).
func TrustViolation(p *corev1.Pod, n Node, onNode []*corev1.Pod, domainOf map[string]string, holds func(*corev1.Pod) bool) string {
	if !n.SharedGPU || !Live(p) || !holds(p) {
		return "" // a pod the node's kubelet refused holds nothing there
	}
	mine := Identity(p.Namespace, domainOf)
	others := map[string][]string{}
	for _, q := range onNode {
		if q.UID == p.UID || !Live(q) || !holds(q) {
			continue
		}
		if id := Identity(q.Namespace, domainOf); id != mine {
			others[id] = append(others[id], q.Namespace+"/"+q.Name)
		}
	}
	where := n.Name
	if n.Domain != "" {
		where += " (reserved for trust domain " + n.Domain + ")"
	}
	switch {
	case len(others) > 0:
		var parts []string
		for _, id := range slices.Sorted(maps.Keys(others)) {
			parts = append(parts, fmt.Sprintf("%s's %s", id, strings.Join(others[id], ", ")))
		}
		return fmt.Sprintf("pod %s/%s of %s, holding %s (in %s), was admitted and placed on shared-GPU node %s beside %s", p.Namespace, p.Name, mine, gpuSummary(p), whereGPU(p), where, strings.Join(parts, "; "))
	case n.Domain != "" && domainOf[p.Namespace] != n.Domain:
		return fmt.Sprintf("pod %s/%s of %s, holding %s (in %s), was admitted and placed on shared-GPU node %s", p.Namespace, p.Name, mine, gpuSummary(p), whereGPU(p), where)
	}
	return ""
}

// SightViolation: no container sees a GPU it was not allocated (the
// simulated kubelet's record of what the NVIDIA runtime exposes; a pod it
// refused, or one not yet recorded, sees nothing).
func SightViolation(p *corev1.Pod) string {
	sight, ok, err := fakegpu.DecodePodSight(p.Annotations)
	if err != nil {
		return err.Error()
	}
	if !ok {
		return ""
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(sight)) {
		cs := sight[name]
		if len(cs.Unallocated) > 0 {
			what := "no GPU"
			if len(cs.Allocated) > 0 {
				what = strings.Join(cs.Allocated, ",")
			}
			out = append(out, fmt.Sprintf("container %s of pod %s/%s on node %s, allocated %s, sees %s via %s",
				name, p.Namespace, p.Name, p.Spec.NodeName, what, strings.Join(cs.Unallocated, ","), cs.Via))
		}
	}
	return strings.Join(out, "; ")
}
