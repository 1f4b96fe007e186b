// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package explain

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func gpuNode(name string, capacity, allocatable int64) corev1.Node {
	q := func(n int64) corev1.ResourceList {
		return corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(n, resource.DecimalSI)}
	}
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"gpupool.dev/pool": "p"}},
		Status: corev1.NodeStatus{Capacity: q(capacity), Allocatable: q(allocatable)}}
}

func gpuPod(name, node string, main, init int64) corev1.Pod {
	lim := func(n int64) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(n, resource.DecimalSI)}}
	}
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node,
		Containers: []corev1.Container{{Name: "main", Resources: lim(main)}}}}
	if init > 0 {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: lim(init)}}
	}
	return p
}

func TestGPURequestsCountInitContainers(t *testing.T) {
	p := gpuPod("p", "", 1, 3)
	if got := GPURequests(&p)["nvidia.com/gpu"]; got != 3 {
		t.Errorf("GPURequests = %d, want 3 (the init container's, held while it runs)", got)
	}
}

func TestPendingNamesUnhealthyGPUs(t *testing.T) {
	running := gpuPod("running", "n", 7, 0)
	pending := gpuPod("pending", "", 1, 0)
	got := Pod(&pending, Cluster{Nodes: []corev1.Node{gpuNode("n", 8, 7)}, Pods: []corev1.Pod{running}})
	if got.Category != PoolFull || !strings.Contains(got.Message, "1 of its 8 unhealthy") {
		t.Errorf("got %s, want pool-full naming 1 of 8 GPUs unhealthy", got)
	}
	healthy := Pod(&pending, Cluster{Nodes: []corev1.Node{gpuNode("n", 7, 7)}, Pods: []corev1.Pod{running}})
	if strings.Contains(healthy.Message, "unhealthy") {
		t.Errorf("no GPU is unhealthy, but: %s", healthy)
	}
}

// A pod the DRA pool cannot serve is explained by the pool's devices, not
// by a device plugin that never ran there (dra-facts §3: DRA serves a
// mapped name on a node that offers none of it).
func TestPendingOnAFullDRAPool(t *testing.T) {
	node := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "d", Labels: map[string]string{"gpupool.dev/pool": "dra"}}}
	name := "d"
	gpuType := "gpu"
	dev := func(n string) resourcev1.Device {
		return resourcev1.Device{Name: n, Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"type": {StringValue: &gpuType}}}
	}
	slice := resourcev1.ResourceSlice{Spec: resourcev1.ResourceSliceSpec{Driver: "gpu.nvidia.com", NodeName: &name,
		Pool: resourcev1.ResourcePool{Name: "d", Generation: 2, ResourceSliceCount: 1}, Devices: []resourcev1.Device{dev("gpu-0"), dev("gpu-1")}}}
	stale := *slice.DeepCopy()
	stale.Spec.Pool.Generation = 1
	stale.Spec.Devices = append(stale.Spec.Devices, dev("gpu-9"))
	res := "nvidia.com/gpu"
	class := resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"}, Spec: resourcev1.DeviceClassSpec{ExtendedResourceName: &res}}
	held := resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: "ns"},
		Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
			Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.nvidia.com", Pool: "d", Device: "gpu-0"}}}}}}
	template := "t"
	want := resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "ns"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 2}}}}}}
	dra := NewDRA([]resourcev1.ResourceSlice{stale, slice}, []resourcev1.ResourceClaim{held, want}, []resourcev1.DeviceClass{class})

	limits := gpuPod("limits", "", 2, 0)
	got := Pod(&limits, Cluster{Nodes: []corev1.Node{node}, DRA: dra})
	if got.Category != PoolFull || !strings.Contains(got.Message, "has 1 of 2 DRA devices serving nvidia.com/gpu free") {
		t.Errorf("a pod limiting 2 GPUs: got %s, want pool-full naming 1 of 2 DRA devices free (generation 1's gpu-9 is gone)", got)
	}
	claimed := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "claimed", Namespace: "ns"},
		Spec:   corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &template}}},
		Status: corev1.PodStatus{ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &want.Name}}}}
	got = Pod(&claimed, Cluster{Nodes: []corev1.Node{node}, DRA: dra})
	if got.Category != PoolFull || !strings.Contains(got.Message, "the pod asks 2") {
		t.Errorf("a pod whose claim asks 2 GPUs of gpu.nvidia.com: got %s, want pool-full", got)
	}
	if got := Pod(&claimed, Cluster{Nodes: []corev1.Node{node}}); got.Category != Unexplained {
		t.Errorf("without the DRA side a claim pod is outside what can be explained, got %s", got)
	}
}

// A claim of a DeviceClass that maps no name (mig.nvidia.com), or a limit of
// a class's implicit name, is explained by the devices the class's CEL
// selectors select, evaluated as the scheduler evaluates them.
func TestPendingOnDevicesAClassSelects(t *testing.T) {
	node := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "d", Labels: map[string]string{"gpupool.dev/pool": "dra"}}}
	name, gpuType := "d", "gpu"
	dev := func(n string) resourcev1.Device {
		return resourcev1.Device{Name: n, Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"type": {StringValue: &gpuType}}}
	}
	slice := resourcev1.ResourceSlice{Spec: resourcev1.ResourceSliceSpec{Driver: "gpu.nvidia.com", NodeName: &name,
		Pool: resourcev1.ResourcePool{Name: "d", Generation: 1, ResourceSliceCount: 1}, Devices: []resourcev1.Device{dev("gpu-0"), dev("gpu-1")}}}
	res := "nvidia.com/gpu"
	sel := func(t string) []resourcev1.DeviceSelector {
		return []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '" + t + "'"}}}
	}
	classes := []resourcev1.DeviceClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"}, Spec: resourcev1.DeviceClassSpec{Selectors: sel("gpu"), ExtendedResourceName: &res}},
		{ObjectMeta: metav1.ObjectMeta{Name: "mig.nvidia.com"}, Spec: resourcev1.DeviceClassSpec{Selectors: sel("mig")}},
		// A selector on an attribute no device has fails to evaluate: the
		// scheduler's allocation stops with an error (dra-facts §6.8).
		{ObjectMeta: metav1.ObjectMeta{Name: "renamed"}, Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "device.attributes['gpu.nvidia.com'].pcieBusID == '0000:01:00.0'"}}}}},
	}
	mig := resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "mig", Namespace: "ns"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "mig.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1}}}}}}
	dra := NewDRA([]resourcev1.ResourceSlice{slice}, []resourcev1.ResourceClaim{mig}, classes)
	assert.Equal(t, int64(2), dra.Nodes["d"].Devices["nvidia.com/gpu"])
	assert.Equal(t, int64(2), dra.Nodes["d"].Devices[ImplicitClassPrefix+"gpu.nvidia.com"])
	assert.Zero(t, dra.Nodes["d"].Devices[ImplicitClassPrefix+"mig.nvidia.com"])
	assert.Zero(t, dra.Nodes["d"].Devices[ImplicitClassPrefix+"renamed"])

	template := "t"
	claimed := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "claimed", Namespace: "ns"},
		Spec:   corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &template}}},
		Status: corev1.PodStatus{ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &mig.Name}}}}
	got := Pod(&claimed, Cluster{Nodes: []corev1.Node{node}, DRA: dra})
	assert.Equal(t, NoPoolAdvertises, got.Category)
	assert.Contains(t, got.Message, "no pool advertises DeviceClass mig.nvidia.com")

	// With a MIG device elsewhere, the DRA pool's node is named for what it offers.
	migType := "mig"
	other := "m"
	migSlice := resourcev1.ResourceSlice{Spec: resourcev1.ResourceSliceSpec{Driver: "gpu.nvidia.com", NodeName: &other,
		Pool: resourcev1.ResourcePool{Name: "m", Generation: 1, ResourceSliceCount: 1}, Devices: []resourcev1.Device{{Name: "gpu-0-mig-0",
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"type": {StringValue: &migType}}}}}}
	dra = NewDRA([]resourcev1.ResourceSlice{slice, migSlice}, []resourcev1.ResourceClaim{mig}, classes)
	got = Pod(&claimed, Cluster{Nodes: []corev1.Node{node}, DRA: dra})
	assert.Equal(t, WrongResource, got.Category)
	assert.Equal(t, "pool dra offers DeviceClass gpu.nvidia.com, not DeviceClass mig.nvidia.com", got.Message)

	renamed := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "renamed", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{ImplicitClassPrefix + "renamed": *resource.NewQuantity(1, resource.DecimalSI)}}}}}}
	got = Pod(&renamed, Cluster{Nodes: []corev1.Node{node}, DRA: dra})
	assert.Equal(t, ClassFails, got.Category)
	assert.Contains(t, got.Message, "the scheduler cannot allocate DeviceClass renamed: DeviceClass renamed's selector #0: ")
	assert.Contains(t, got.Message, "on device gpu-0 of node d")

	implicit := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "implicit", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{ImplicitClassPrefix + "gpu.nvidia.com": *resource.NewQuantity(3, resource.DecimalSI)}}}}}}
	got = Pod(&implicit, Cluster{Nodes: []corev1.Node{node}, DRA: dra})
	assert.Equal(t, PoolFull, got.Category)
	assert.Contains(t, got.Message, "has 2 of 2 DRA devices serving DeviceClass gpu.nvidia.com free (claims hold the rest), the pod asks 3")
}
