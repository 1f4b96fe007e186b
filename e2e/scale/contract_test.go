// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/fakegpu"
)

// A two-pool world: exclusive h100 (1 node, 2 GPUs) and a time-sliced l4
// pool split between trust domains a and b.
func world() (*fleet.Fleet, *Workload, []string, []corev1.Node, []corev1.Namespace) {
	fl := &fleet.Fleet{Spec: fleet.Spec{Pools: []fleet.Pool{
		{Name: "h100", SKU: "h100-80gb", Nodes: 1, GPUsPerNode: 2, Labels: map[string]string{"sku": "h100"}, Sharing: &fleet.Sharing{Mode: fleet.ModeExclusive}},
		{Name: "l4", SKU: "l4", Nodes: 2, GPUsPerNode: 1, Sharing: &fleet.Sharing{Mode: fleet.ModeTimeSlicing},
			TrustDomains: []fleet.TrustDomain{{Name: "a", Nodes: 1, Labels: map[string]string{"trust": "a"}}, {Name: "b", Nodes: 1, Labels: map[string]string{"trust": "b"}}}},
	}}}
	w := &Workload{Spec: WorkloadSpec{Mix: []MixEntry{{Pool: "h100", Weight: 1}, {Pool: "l4", Weight: 1}, {Pool: "h100", Weight: 1, Shape: ShapeUntolerated}}}}
	expected := []string{"", "", "no-matching-pool"}
	node := func(name, pool, res string, n int64, taints ...corev1.Taint) corev1.Node {
		return corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{fleet.LabelPool: pool}},
			Spec:       corev1.NodeSpec{Taints: taints},
			Status: corev1.NodeStatus{
				Capacity:    corev1.ResourceList{corev1.ResourceName(res): *resource.NewQuantity(n, resource.DecimalSI)},
				Allocatable: corev1.ResourceList{corev1.ResourceName(res): *resource.NewQuantity(n, resource.DecimalSI)},
			},
		}
	}
	nodes := []corev1.Node{
		node("h100-0", "h100", "nvidia.com/gpu", 2, corev1.Taint{Key: "sku", Value: "h100", Effect: corev1.TaintEffectNoSchedule}),
		node("l4-0", "l4", "nvidia.com/gpu.shared", 4),
		node("l4-1", "l4", "nvidia.com/gpu.shared", 4),
	}
	nss := []corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a", Labels: map[string]string{"trust": "a"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "tenant-b", Labels: map[string]string{"trust": "b"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "scale"}},
	}
	return fl, w, expected, nodes, nss
}

func pod(name, ns string, entry, node, res string) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{LabelEntry: entry}},
		Spec: corev1.PodSpec{NodeName: node, NodeSelector: map[string]string{"sku": "h100"}, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceName(res): *resource.NewQuantity(1, resource.DecimalSI)}}}}},
	}
	return p
}

func TestContractHoldsAndEachRuleCanFail(t *testing.T) {
	fl, w, expected, nodes, nss := world()
	good := []corev1.Pod{
		pod("h-1", "scale", "0", "h100-0", "nvidia.com/gpu"),
		pod("h-2", "scale", "0", "h100-0", "nvidia.com/gpu"),
		pod("l-a", "tenant-a", "1", "l4-0", "nvidia.com/gpu.shared"),
		pod("l-b", "tenant-b", "1", "l4-1", "nvidia.com/gpu.shared"),
		pod("untolerated", "scale", "2", "", "nvidia.com/gpu"),
	}
	c := checkContract(fl, w, expected, nodes, good, nss, nil)
	assert.Zero(t, c.Violations, c.Examples)
	assert.Equal(t, 5, c.Pods)
	assert.Equal(t, map[string]int{"no-matching-pool": 1}, c.Pending)

	for _, tc := range []struct {
		name string
		edit func([]corev1.Pod) []corev1.Pod
		rule string
	}{
		{"a pod on another pool", func(ps []corev1.Pod) []corev1.Pod { ps[2].Spec.NodeName = "h100-0"; return ps }, RuleSKUMatch},
		{"a resource the node does not advertise", func(ps []corev1.Pod) []corev1.Pod {
			ps[0].Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/mig-1g.10gb": *resource.NewQuantity(1, resource.DecimalSI)}
			return ps
		}, RuleExactResource},
		{"more GPUs bound than the node has", func(ps []corev1.Pod) []corev1.Pod {
			return append(ps, pod("h-3", "scale", "0", "h100-0", "nvidia.com/gpu"))
		}, RuleNotOvercommit},
		{"two trust domains on one shared node", func(ps []corev1.Pod) []corev1.Pod { ps[3].Spec.NodeName = "l4-0"; return ps }, RuleNoCrossTrust},
		{"an unschedulable pod placed", func(ps []corev1.Pod) []corev1.Pod { ps[4].Spec.NodeName = "h100-0"; return ps }, RuleExpectedPending},
		{"a well-formed pod left Pending", func(ps []corev1.Pod) []corev1.Pod { ps[0].Spec.NodeName = ""; return ps }, RuleScheduled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := make([]corev1.Pod, len(good))
			for i := range good {
				ps[i] = *good[i].DeepCopy()
			}
			c := checkContract(fl, w, expected, nodes, tc.edit(ps), nss, nil)
			assert.NotZero(t, c.ByRule[tc.rule], "%s: %v", tc.rule, c.Examples)
		})
	}
}

// A DRA pool of two nodes with two GPUs each, published by NVIDIA's
// driver (pool named after the node), and the claim pods of mix entry 0,
// each holding one GPU through the claim made from its template; entry 1
// is the pool's well-formed pod, whose limit the scheduler turned into a
// claim (dra-facts §3).
func draWorld() (*fleet.Fleet, *Workload, []string, []corev1.Node, []resourcev1.ResourceSlice) {
	fl := &fleet.Fleet{Spec: fleet.Spec{Pools: []fleet.Pool{
		{Name: "dra", SKU: "h100-80gb", Nodes: 2, GPUsPerNode: 2, Labels: map[string]string{"sku": "h100"}, DRA: &fleet.DRA{Mode: fakegpu.DRAWholeGPU}},
	}}}
	w := &Workload{Spec: WorkloadSpec{Mix: []MixEntry{{Pool: "dra", Weight: 1, Shape: ShapeClaim}, {Pool: "dra", Weight: 1}}}}
	var nodes []corev1.Node
	var published []resourcev1.ResourceSlice
	gpu := "gpu"
	attrs := map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"type": {StringValue: &gpu}}
	for _, n := range []string{"dra-0", "dra-1"} {
		nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{fleet.LabelPool: "dra", "sku": "h100"}}})
		published = append(published, resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: n + "-gpu.nvidia.com"}, Spec: resourcev1.ResourceSliceSpec{
			Driver: fakegpu.DRADriver, NodeName: &n, Pool: resourcev1.ResourcePool{Name: n, Generation: 1, ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-0", Attributes: attrs}, {Name: "gpu-1", Attributes: attrs}},
		}})
	}
	return fl, w, []string{"", ""}, nodes, published
}

// claimPod is a pod of entry whose claim "gpu" the resourceclaim
// controller made as claim, allocated to node/device ("" : unallocated).
func claimPod(name, entry, node, device string) (corev1.Pod, resourcev1.ResourceClaim) {
	template, claim := "run-mix-0", name+"-gpu-x"
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "scale", Labels: map[string]string{LabelEntry: entry}},
		Spec: corev1.PodSpec{NodeName: node, NodeSelector: map[string]string{"sku": "h100"},
			ResourceClaims: []corev1.PodResourceClaim{{Name: PodClaim, ResourceClaimTemplateName: &template}},
			Containers:     []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: PodClaim}}}}}},
		Status: corev1.PodStatus{ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: PodClaim, ResourceClaimName: &claim}}},
	}
	c := resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: "scale"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1}}}}}}
	if device != "" {
		c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: fakegpu.DRADriver, Pool: node, Device: device}}}}
	}
	return p, c
}

func TestContractHoldsClaimPodsToTheirDevices(t *testing.T) {
	fl, w, expected, nodes, published := draWorld()
	gpu := "nvidia.com/gpu"
	classes := []resourcev1.DeviceClass{{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"}, Spec: resourcev1.DeviceClassSpec{ExtendedResourceName: &gpu}}}
	state := func(edit func(ps []corev1.Pod, cs []resourcev1.ResourceClaim) ([]corev1.Pod, []resourcev1.ResourceClaim)) ([]corev1.Pod, *draState) {
		var ps []corev1.Pod
		var cs []resourcev1.ResourceClaim
		for _, a := range [][3]string{{"c-1", "dra-0", "gpu-0"}, {"c-2", "dra-0", "gpu-1"}, {"c-3", "dra-1", "gpu-0"}} {
			p, c := claimPod(a[0], "0", a[1], a[2])
			ps, cs = append(ps, p), append(cs, c)
		}
		// The well-formed pod: a limit, served through the scheduler's claim.
		p, c := claimPod("limit", "1", "dra-1", "gpu-1")
		p.Spec.ResourceClaims, p.Spec.Containers[0].Resources.Claims, p.Status.ResourceClaimStatuses = nil, nil, nil
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceName(gpu): *resource.NewQuantity(1, resource.DecimalSI)}
		p.Status.ExtendedResourceClaimStatus = &corev1.PodExtendedResourceClaimStatus{ResourceClaimName: c.Name}
		ps, cs = append(ps, p), append(cs, c)
		if edit != nil {
			ps, cs = edit(ps, cs)
		}
		return ps, newDRAState(published, cs, classes)
	}
	pods, dra := state(nil)
	c := checkContract(fl, w, expected, nodes, pods, nil, dra)
	assert.Zero(t, c.Violations, c.Examples)
	assert.Equal(t, 4, c.Scheduled)

	for _, tc := range []struct {
		name    string
		edit    func([]corev1.Pod, []resourcev1.ResourceClaim) ([]corev1.Pod, []resourcev1.ResourceClaim)
		rule    string
		pending map[string]int
	}{
		{"a bound pod whose claim is not allocated", func(ps []corev1.Pod, cs []resourcev1.ResourceClaim) ([]corev1.Pod, []resourcev1.ResourceClaim) {
			cs[0].Status.Allocation = nil
			return ps, cs
		}, RuleExactResource, nil},
		{"a bound pod whose claim was never made", func(ps []corev1.Pod, cs []resourcev1.ResourceClaim) ([]corev1.Pod, []resourcev1.ResourceClaim) {
			ps[0].Status.ResourceClaimStatuses = nil
			return ps, cs
		}, RuleExactResource, nil},
		{"a claim holding another node's GPU", func(ps []corev1.Pod, cs []resourcev1.ResourceClaim) ([]corev1.Pod, []resourcev1.ResourceClaim) {
			ps[0].Spec.NodeName = "dra-1"
			return ps, cs
		}, RuleExactResource, nil},
		{"a claim holding a device the driver does not publish", func(ps []corev1.Pod, cs []resourcev1.ResourceClaim) ([]corev1.Pod, []resourcev1.ResourceClaim) {
			cs[0].Status.Allocation.Devices.Results[0].Device = "gpu-7"
			return ps, cs
		}, RuleExactResource, nil},
		{"a claim pod holding no GPU", func(ps []corev1.Pod, cs []resourcev1.ResourceClaim) ([]corev1.Pod, []resourcev1.ResourceClaim) {
			cs[0].Status.Allocation.Devices.Results[0].Driver = "example.com"
			return ps, cs
		}, RuleExactResource, nil},
		{"the scheduler's claim for a limit not allocated", func(ps []corev1.Pod, cs []resourcev1.ResourceClaim) ([]corev1.Pod, []resourcev1.ResourceClaim) {
			cs[3].Status.Allocation = nil
			return ps, cs
		}, RuleExactResource, nil},
		{"one GPU in two claims", func(ps []corev1.Pod, cs []resourcev1.ResourceClaim) ([]corev1.Pod, []resourcev1.ResourceClaim) {
			p, c := claimPod("c-4", "0", "dra-0", "gpu-0")
			return append(ps, p), append(cs, c)
		}, RuleNotOvercommit, nil},
		{"a claim pod left Pending on a full pool", func(ps []corev1.Pod, cs []resourcev1.ResourceClaim) ([]corev1.Pod, []resourcev1.ResourceClaim) {
			p, c := claimPod("c-5", "0", "", "")
			return append(ps, p), append(cs, c)
		}, RuleScheduled, map[string]int{"pool-full": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods, dra := state(tc.edit)
			c := checkContract(fl, w, expected, nodes, pods, nil, dra)
			assert.NotZero(t, c.ByRule[tc.rule], "%s: %v", tc.rule, c.Examples)
			assert.Equal(t, 1, c.Violations, c.Examples)
			if tc.pending != nil {
				assert.Equal(t, tc.pending, c.Pending, "explained by the DRA side, not as a CPU pod")
			}
		})
	}
}

func TestUnpublishedNamesNodesWithoutAWholePool(t *testing.T) {
	slice := func(node string, gen, count int64, devices int) resourcev1.ResourceSlice {
		s := resourcev1.ResourceSlice{Spec: resourcev1.ResourceSliceSpec{Driver: fakegpu.DRADriver, NodeName: &node,
			Pool: resourcev1.ResourcePool{Name: node, Generation: gen, ResourceSliceCount: count}}}
		for i := range devices {
			s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i)})
		}
		return s
	}
	other := slice("d", 1, 1, 8)
	other.Spec.Driver = "example.com"
	for _, tc := range []struct {
		name   string
		slices []resourcev1.ResourceSlice
		want   []string
	}{
		{"every pool whole", []resourcev1.ResourceSlice{slice("a", 1, 1, 8), slice("b", 1, 1, 8), slice("c", 2, 2, 0), slice("c", 2, 2, 8), slice("d", 1, 1, 8)}, nil},
		{"no slice", []resourcev1.ResourceSlice{slice("a", 1, 1, 8), slice("b", 1, 1, 8), slice("c", 1, 1, 8)}, []string{"d"}},
		{"another driver's slice", []resourcev1.ResourceSlice{slice("a", 1, 1, 8), slice("b", 1, 1, 8), slice("c", 1, 1, 8), other}, []string{"d"}},
		{"a pool short of its slice count", []resourcev1.ResourceSlice{slice("a", 1, 1, 8), slice("b", 1, 2, 8), slice("c", 1, 1, 8), slice("d", 1, 1, 8)}, []string{"b"}},
		{"the newest generation half published", []resourcev1.ResourceSlice{slice("a", 1, 1, 8), slice("a", 2, 2, 8), slice("b", 1, 1, 8), slice("c", 1, 1, 8), slice("d", 1, 1, 8)}, []string{"a"}},
		{"no device", []resourcev1.ResourceSlice{slice("a", 1, 1, 0), slice("b", 1, 1, 8), slice("c", 1, 1, 8), slice("d", 1, 1, 8)}, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, unpublished([]string{"a", "b", "c", "d"}, tc.slices))
		})
	}
}
