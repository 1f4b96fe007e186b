// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package explain

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpupool/gpupool/fakegpu"
)

func burstPool(inUseGPUs int64) NodePool {
	gpus := func(n int64) corev1.ResourceList {
		return corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(n, resource.DecimalSI)}
	}
	return NodePool{
		Name:   "gpu-h100-burst",
		Labels: map[string]string{"sku": "h100-burst"},
		Taints: []corev1.Taint{{Key: "sku", Value: "h100-burst", Effect: corev1.TaintEffectNoSchedule}},
		Offers: []Offer{{InstanceType: "sim-h100-80gb-x8", Resources: gpus(8)}},
		Limits: gpus(16), InUse: gpus(inUseGPUs),
	}
}

func burstPod(resource string) corev1.Pod {
	p := gpuPod("wants", "", 0, 0)
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceName(resource): *resourceQ(1)}
	p.Spec.NodeSelector = map[string]string{"sku": "h100-burst"}
	p.Spec.Tolerations = []corev1.Toleration{{Key: "sku", Operator: corev1.TolerationOpEqual, Value: "h100-burst", Effect: corev1.TaintEffectNoSchedule}}
	return p
}

func resourceQ(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }

// A Pending pod of an autoscaled pool at zero nodes is explained in the
// autoscaler's terms: its node is coming, the NodePool is at its limit,
// or no machine the NodePool may buy lists what it asks (the gotcha of
// scale from zero: autoscaler-facts §3.3).
func TestPendingInTheAutoscalersTerms(t *testing.T) {
	fixed := []corev1.Node{gpuNode("h100-0", 8, 8)} // another pool, which the pod does not select
	fixed[0].Labels["sku"] = "h100"

	pod := burstPod("nvidia.com/gpu")
	got := Pod(&pod, Cluster{Nodes: fixed, NodePools: []NodePool{burstPool(0)}})
	assert.Equal(t, NodeComing, got.Category, got.String())
	assert.Contains(t, got.Message, "NodePool gpu-h100-burst can make a node for it (instance type sim-h100-80gb-x8)")

	got = Pod(&pod, Cluster{Nodes: fixed, NodePools: []NodePool{burstPool(16)}})
	assert.Equal(t, NodePoolAtLimit, got.Category, got.String())
	assert.Contains(t, got.Message, "one more sim-h100-80gb-x8 would take nvidia.com/gpu past its limit of 16 (in use: 16)")

	mig := burstPod("nvidia.com/mig-1g.10gb")
	got = Pod(&mig, Cluster{Nodes: fixed, NodePools: []NodePool{burstPool(0)}})
	assert.Equal(t, NoPoolAdvertises, got.Category, got.String())
	assert.Contains(t, got.Message, "NodePool gpu-h100-burst's nodes would take it, but the machines it may buy list sim-h100-80gb-x8 (nvidia.com/gpu 8), not what it asks (nvidia.com/mig-1g.10gb 1)")

	// A pod that does not tolerate the NodePool's taint scales nothing.
	untol := burstPod("nvidia.com/gpu")
	untol.Spec.Tolerations = nil
	got = Pod(&untol, Cluster{Nodes: fixed, NodePools: []NodePool{burstPool(0)}})
	assert.Equal(t, NoMatchingPool, got.Category, got.String())

	// Without NodePools, the explanation is the nodes' alone.
	got = Pod(&pod, Cluster{Nodes: fixed})
	assert.Equal(t, NoMatchingPool, got.Category, got.String())
}

// Required node affinity places a pod as its nodeSelector does, on fixed
// nodes and on the nodes a NodePool would make.
func TestPendingByNodeAffinity(t *testing.T) {
	fixed := []corev1.Node{gpuNode("h100-0", 8, 8)}
	fixed[0].Labels["sku"] = "h100"
	pod := burstPod("nvidia.com/gpu")
	pod.Spec.NodeSelector = nil
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "sku", Operator: corev1.NodeSelectorOpIn, Values: []string{"h100-burst"}}}}},
	}}}
	got := Pod(&pod, Cluster{Nodes: fixed, NodePools: []NodePool{burstPool(0)}})
	assert.Equal(t, NodeComing, got.Category, got.String())

	got = Pod(&pod, Cluster{Nodes: fixed})
	assert.Equal(t, NoMatchingPool, got.Category, got.String())
	assert.Contains(t, got.Message, "required node affinity")
}

// CannotScale is final only for the scale-from-zero gotcha: a NodePool
// takes the pod, and no machine it may buy lists what it asks.
func TestCannotScale(t *testing.T) {
	c := Cluster{NodePools: []NodePool{burstPool(0)}}
	mig := burstPod("nvidia.com/mig-1g.10gb")
	assert.Contains(t, c.CannotScale(&mig), "the machines it may buy list sim-h100-80gb-x8 (nvidia.com/gpu 8)")
	gpu := burstPod("nvidia.com/gpu")
	assert.Empty(t, c.CannotScale(&gpu), "a node is coming")
	assert.Empty(t, Cluster{NodePools: []NodePool{burstPool(16)}}.CannotScale(&gpu), "at its limit: not final")
	untol := burstPod("nvidia.com/mig-1g.10gb")
	untol.Spec.Tolerations = nil
	assert.Empty(t, c.CannotScale(&untol), "no NodePool takes it in explain's model, which is narrower than Karpenter's")
}

// A pod of claims is fitted, as the run's Karpenter fits it, to the
// devices the cloud says a machine's DRA driver will publish (its
// ResourceSlice templates, autoscaler-facts §10), selected by the claim's
// DeviceClass; a NodePool limited in nodes is at its limit when one more
// node would pass it (§12.3).
func TestCannotScaleAPodOfClaims(t *testing.T) {
	sku, err := fakegpu.LookupSKU("h100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	templates, err := fakegpu.DRATemplates("sim-h100-80gb-x8", fakegpu.NodeInventory{SKU: sku, Count: 8})
	if err != nil {
		t.Fatal(err)
	}
	pool := func(templates []resourcev1.ResourceSliceSpec, nodesInUse int64) NodePool {
		np := burstPool(0)
		np.Offers[0].Templates = templates
		np.Limits = corev1.ResourceList{"nodes": *resourceQ(1)}
		np.InUse = corev1.ResourceList{"nodes": *resourceQ(nodesInUse)}
		return np
	}
	class := resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "h100.gpu.nvidia.com"}, Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
		Expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"}}}}}
	claimOf := func(n int64) resourcev1.ResourceClaim {
		return resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "wants-gpu", Namespace: "ns"},
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu",
				Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class.Name, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: n}}}}}}
	}
	pod := burstPod("nvidia.com/gpu")
	pod.Namespace = "ns"
	pod.Spec.Containers[0].Resources.Limits = nil
	pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptrTo("h100")}}
	pod.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptrTo("wants-gpu")}}
	cluster := func(np NodePool, claim int64) Cluster {
		return Cluster{NodePools: []NodePool{np}, DRA: NewDRA(nil, []resourcev1.ResourceClaim{claimOf(claim)}, []resourcev1.DeviceClass{class})}
	}

	assert.Empty(t, cluster(pool(templates, 0), 8).CannotScale(&pod), "8 H100s claimed, the machine's driver publishes 8")
	got := Pod(&pod, cluster(pool(templates, 0), 8))
	assert.Equal(t, NodeComing, got.Category, got.String())
	assert.Contains(t, cluster(pool(templates, 0), 9).CannotScale(&pod), "not what it asks (DeviceClass h100.gpu.nvidia.com 9)")
	assert.Contains(t, cluster(pool(nil, 0), 1).CannotScale(&pod), "not what it asks", "a machine the cloud lists no devices for")
	got = Pod(&pod, cluster(pool(templates, 1), 8))
	assert.Equal(t, NodePoolAtLimit, got.Category, got.String())
	assert.Contains(t, got.Message, "would take nodes past its limit of 1 (in use: 1)")

	untol := pod.DeepCopy()
	untol.Spec.Tolerations = nil
	assert.Empty(t, cluster(pool(nil, 0), 8).CannotScale(untol), "no NodePool takes it anyway")

	// Limits against the listed capacity, claims against the devices,
	// apart: 8 nvidia.com/gpu limited and 8 devices claimed fit 8 and 8.
	both := pod.DeepCopy()
	both.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": *resourceQ(8)}
	gpuClass := class.DeepCopy()
	gpuClass.Name, gpuClass.Spec.ExtendedResourceName = class.Name, ptrTo("nvidia.com/gpu")
	withMapped := Cluster{NodePools: []NodePool{pool(templates, 0)}, DRA: NewDRA(nil, []resourcev1.ResourceClaim{claimOf(8)}, []resourcev1.DeviceClass{*gpuClass})}
	assert.Empty(t, withMapped.CannotScale(both), "8 limited and 8 claimed of a class mapping the same name")
	both.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": *resourceQ(9)}
	assert.Contains(t, withMapped.CannotScale(both), "not what it asks", "9 limited on a machine that lists 8")
}

func ptrTo(s string) *string { return &s }

// A NodePool whose requirements rule out every machine the cloud sells
// makes no node, ever: said at once, not left to a timeout.
func TestCannotScaleANodePoolThatMayBuyNothing(t *testing.T) {
	np := burstPool(0)
	np.Offers, np.Unmet = nil, []string{"sim-h100-80gb-x8"}
	gpu := burstPod("nvidia.com/gpu")
	assert.Equal(t, "NodePool gpu-h100-burst's nodes would take it, but its requirements rule out every machine the cloud sells (sim-h100-80gb-x8)", Cluster{NodePools: []NodePool{np}}.CannotScale(&gpu))
}

// A pod that asks more CPU than the machine a NodePool may buy has (a
// namespace's LimitRange defaulting it to 1,000 cores) never gets a node
// of it, whatever GPUs the machine holds.
func TestCannotScaleAPodBiggerThanTheMachine(t *testing.T) {
	np := burstPool(0)
	np.Offers[0].Resources[corev1.ResourceCPU] = resource.MustParse("64")
	c := Cluster{NodePools: []NodePool{np}}
	big := burstPod("nvidia.com/gpu")
	big.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1k")}
	assert.Contains(t, c.CannotScale(&big), "it asks more than any machine it may buy has: sim-h100-80gb-x8 (cpu: asks 1k, the machine has 64)")
	fits := burstPod("nvidia.com/gpu")
	fits.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
	assert.Empty(t, c.CannotScale(&fits))
}
