// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package explain

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Categories a Pending pod has in the autoscaler's terms.
const (
	NodeComing      = "node-coming"
	NodePoolAtLimit = "nodepool-at-limit"
)

func init() {
	described[NodeComing] = "a node is coming: an autoscaler NodePool can make one for it"
	described[NodePoolAtLimit] = "the NodePool that would make its node is at its limit"
}

// NodePool is what an explanation reads of an autoscaler's node group (a
// Karpenter NodePool): what the nodes it makes carry, what the machines it
// may buy hold, and how much more its limits allow.
type NodePool struct {
	Name string
	// Labels are the labels its nodes get (the template's, and its
	// single-value requirements).
	Labels map[string]string
	Taints []corev1.Taint
	// Offers are the resources of each instance type it may buy, as the
	// cloud lists them: what the autoscaler knows a node will have
	// (autoscaler-facts §3.3).
	Offers []Offer
	// Unmet names the instance types the cloud sells that its
	// requirements rule out.
	Unmet []string
	// Limits bound the sum of its nodes' resources; InUse is that sum now
	// (the NodePool's status.resources).
	Limits, InUse corev1.ResourceList
	// Unapplied are NodeOverlays that select this NodePool's machines
	// but that the autoscaler does not apply.
	Unapplied []Overlay
}

// Offer is one instance type a NodePool may buy.
type Offer struct {
	InstanceType string
	// Resources are the machine's as the cloud lists them, with the
	// capacity of the NodeOverlays applied to it (autoscaler-facts §8.7).
	Resources corev1.ResourceList
	// Overlays name those NodeOverlays.
	Overlays []string
	// Templates are the devices the cloud says the machine's DRA driver
	// publishes, which the autoscaler fits a pod's claims to.
	Templates []resourcev1.ResourceSliceSpec
}

// Overlay is a NodeOverlay's capacity for one instance type of a
// NodePool, and why the autoscaler does not apply it.
type Overlay struct {
	Name, InstanceType string
	Capacity           corev1.ResourceList
	Why                string
}

// autoscale says what the cluster's autoscaler does for a Pending pod
// asking req: a NodePool whose nodes the pod would take makes one with
// room for it (the node is coming), or would but its limit is reached.
// ok is false when no NodePool's nodes would take the pod at all; when
// some would but no machine it may buy lists what the pod asks, why says
// so, for the explanation of a resource no node advertises.
func (c Cluster) autoscale(pod *corev1.Pod, req map[string]int64) (r Reason, ok bool, why string) {
	var atLimit, lacking []string
	claims := containersUseClaims(pod)
	// Karpenter fits what the pod limits to the machine's capacity and
	// what its claims ask to the machine's devices, apart: a pod that
	// limits 8 nvidia.com/gpu and claims 8 GPUs of a class mapping that
	// name fits a machine of 8 listed and 8 templated.
	claimed := c.DRA.claimRequests(pod)
	limited := map[string]int64{}
	for r, n := range req {
		if rest := n - claimed[r]; rest > 0 {
			limited[r] = rest
		}
	}
	sized := resourcehelper.PodRequests(withDefaultRequests(pod), resourcehelper.PodResourcesOptions{})
	for _, np := range c.NodePools {
		// A node the NodePool makes: its template's labels and taints.
		made := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: np.Labels}, Spec: corev1.NodeSpec{Taints: np.Taints}}
		if !selects(pod, made) {
			continue
		}
		if _, tolerated := untolerated(pod, made); !tolerated {
			continue
		}
		var offered, small []string
		for _, o := range np.Offers {
			if over := outsized(o.Resources, sized); over != "" {
				small = append(small, fmt.Sprintf("%s (%s)", o.InstanceType, over))
				continue
			}
			fits := holds(o.Resources, req)
			offers := o.Resources
			if claims {
				// Claims are fitted to the devices the machine's DRA
				// driver will publish (autoscaler-facts §10), as the
				// run's Karpenter does (IGNORE_DRA_REQUESTS=false).
				offers = withDevices(o.Resources, c.DRA.templateDevices(o.Templates))
				fits = holds(o.Resources, limited) && holds(offers, claimed)
			}
			if !fits {
				offered = append(offered, fmt.Sprintf("%s (%s)", o.InstanceType, gpuResources(offers)))
				continue
			}
			if name, over := np.overLimit(o.Resources); over {
				atLimit = append(atLimit, fmt.Sprintf("NodePool %s: one more %s would take %s past its limit of %s (in use: %s)",
					np.Name, o.InstanceType, name, quantityString(np.Limits, name), quantityString(np.InUse, name)))
				continue
			}
			with := ""
			if len(o.Overlays) > 0 {
				with = ", with the capacity of NodeOverlay " + strings.Join(o.Overlays, ", ")
			}
			return Reason{NodeComing, fmt.Sprintf("NodePool %s can make a node for it (instance type %s%s): the autoscaler is expected to bring one", np.Name, o.InstanceType, with)}, true, ""
		}
		if len(np.Offers) == 0 {
			lacking = append(lacking, fmt.Sprintf("NodePool %s's nodes would take it, but its requirements rule out every machine the cloud sells (%s)", np.Name, orNothing(np.Unmet)))
			continue
		}
		if len(small) > 0 && len(offered) == 0 {
			lacking = append(lacking, fmt.Sprintf("NodePool %s's nodes would take it, but it asks more than any machine it may buy has: %s", np.Name, strings.Join(small, ", ")))
		}
		if len(offered) > 0 {
			lacking = append(lacking, fmt.Sprintf("NodePool %s's nodes would take it, but the machines it may buy list %s, not what it asks (%s): an autoscaler knows only what an instance type lists%s",
				np.Name, strings.Join(offered, ", "), asks(req), np.unapplied(req)))
		}
	}
	if len(atLimit) > 0 {
		return Reason{NodePoolAtLimit, summarize(uniq(atLimit))}, true, ""
	}
	return Reason{}, false, summarize(lacking)
}

// unapplied says which of the NodePool's unapplied NodeOverlays would
// have given a machine what req asks, and why they do not.
func (np NodePool) unapplied(req map[string]int64) string {
	var out []string
	for _, ov := range np.Unapplied {
		for _, o := range np.Offers {
			if o.InstanceType != ov.InstanceType {
				continue
			}
			with := o.Resources.DeepCopy()
			for name, q := range ov.Capacity {
				with[name] = q
			}
			if holds(with, req) {
				out = append(out, fmt.Sprintf("; NodeOverlay %s would add %s to %s, but %s", ov.Name, gpuResources(ov.Capacity), o.InstanceType, ov.Why))
			}
		}
	}
	return strings.Join(uniq(out), "")
}

// outsized says which of the pod's CPU and memory requests exceed a
// machine's whole capacity ("" when none does): no node of it will ever
// hold the pod, whatever else runs there.
func outsized(machine corev1.ResourceList, asks corev1.ResourceList) string {
	var out []string
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		has, listed := machine[name]
		want, asked := asks[name]
		if listed && asked && want.Cmp(has) > 0 {
			out = append(out, fmt.Sprintf("%s: asks %s, the machine has %s", name, want.String(), has.String()))
		}
	}
	return strings.Join(out, "; ")
}

// limitNodes limits a NodePool's count of nodes; every node counts one
// (autoscaler-facts §12.1, §12.3).
const limitNodes = "nodes"

// withDevices is a machine's resources with its template devices' count
// of each name a DeviceClass serves in place of what the cloud lists.
func withDevices(l corev1.ResourceList, devices map[string]int64) corev1.ResourceList {
	out := l.DeepCopy()
	for name, n := range devices {
		out[corev1.ResourceName(name)] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return out
}

// containersUseClaims is how Karpenter v1.14 tells a pod with DRA
// requirements: it declares ResourceClaims, or a container or init
// container uses one (autoscaler-facts §10.2).
func containersUseClaims(pod *corev1.Pod) bool {
	if len(pod.Spec.ResourceClaims) > 0 {
		return true
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			if len(c.Resources.Claims) > 0 {
				return true
			}
		}
	}
	return false
}

// holds reports whether a machine's resources cover every request.
func holds(l corev1.ResourceList, req map[string]int64) bool {
	for r, n := range req {
		if quantity(l, r) < n {
			return false
		}
	}
	return true
}

// overLimit reports a limited resource one more node of these resources
// would take past the NodePool's limit.
func (np NodePool) overLimit(node corev1.ResourceList) (string, bool) {
	for name, lim := range np.Limits {
		add, ok := node[name]
		if name == limitNodes {
			add, ok = resource.MustParse("1"), true
		}
		if !ok {
			continue
		}
		used := np.InUse[name]
		used.Add(add)
		if used.Cmp(lim) > 0 {
			return string(name), true
		}
	}
	return "", false
}

func quantityString(l corev1.ResourceList, name string) string {
	q, ok := l[corev1.ResourceName(name)]
	if !ok {
		return "0"
	}
	return q.String()
}

func gpuResources(l corev1.ResourceList) string {
	var out []string
	for name, q := range l {
		if strings.HasPrefix(string(name), resourcePrefix) || strings.HasPrefix(string(name), ImplicitClassPrefix) {
			out = append(out, fmt.Sprintf("%s %s", describe(string(name)), q.String()))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "no GPU"
	}
	return strings.Join(out, ", ")
}

func asks(req map[string]int64) string {
	var out []string
	for _, r := range sortedKeys(req) {
		out = append(out, fmt.Sprintf("%s %d", describe(r), req[r]))
	}
	return strings.Join(out, ", ")
}

// CannotScale says why no autoscaler will ever make a node for a Pending
// pod that some NodePool's nodes would take: no machine those NodePools
// may buy lists what it asks (autoscaler-facts §3.3), their requirements
// rule out every machine the cloud sells, or none of the devices they
// will publish fits the pod's claims (§10). It is "" whenever
// a NodePool can make a node for the pod, is at its limit, or no NodePool
// takes the pod at all: explain's model of a NodePool's nodes is its
// template's labels and taints, narrower than Karpenter's, so those cases
// are not final.
func (c Cluster) CannotScale(pod *corev1.Pod) string {
	req := Requests(pod, resourcePrefix, ImplicitClassPrefix)
	for r, n := range c.DRA.claimRequests(pod) {
		req[r] += n
	}
	if len(req) == 0 && !containersUseClaims(pod) {
		return ""
	}
	if _, ok, why := c.autoscale(pod, req); !ok {
		return why
	}
	return ""
}

func orNothing(names []string) string {
	if len(names) == 0 {
		return "it sells nothing"
	}
	return strings.Join(names, ", ")
}
