// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaler

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/gpupool/gpupool/e2e/explain"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/fakegpu"
)

func cloudOf(t *testing.T) *Cloud {
	t.Helper()
	f := &fleet.Fleet{Spec: fleet.Spec{AutoscaledPools: []fleet.AutoscaledPool{
		{Pool: fleet.Pool{Name: "h100-burst", SKU: "h100-80gb", GPUsPerNode: 8}, NodePool: "np-h100", MaxNodes: 2},
		{Pool: fleet.Pool{Name: "l4-dra", SKU: "l4", GPUsPerNode: 1, DRA: &fleet.DRA{Mode: "gpu"}}, NodePool: "np-l4", MaxNodes: 2},
		{Pool: fleet.Pool{Name: "a100-mig", SKU: "a100-40gb", GPUsPerNode: 8}, NodePool: "np-a100", MaxNodes: 1},
	}}}
	c, err := NewCloud(f)
	require.NoError(t, err)
	return c
}

func karpenterNode(instanceType, nodePool string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-x", Labels: map[string]string{
		LabelInstanceType: instanceType, LabelNodePool: nodePool}, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}}}
}

// A node is the machine its instance type is, and joins the pool whose
// NodePool made it; the pool's labels and taints stay the NodePool's.
func TestTakeOverGivesTheInstanceTypesHardware(t *testing.T) {
	c := cloudOf(t)
	var names []string
	for _, it := range c.InstanceTypes() {
		names = append(names, it.Name)
	}
	assert.Equal(t, []string{"sim-a100-40gb-x8", "sim-h100-80gb-x8", "sim-l4-x1"}, names)

	labels, ann, ok, err := c.TakeOver(karpenterNode("sim-h100-80gb-x8", "np-h100"))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, map[string]string{fleet.LabelManagedBy: fleet.ManagedBy, fleet.LabelPool: "h100-burst"}, labels)
	assert.Equal(t, "h100-80gb", ann[fakegpu.AnnotationSKU])
	assert.Equal(t, "8", ann[fakegpu.AnnotationGPUs])
	assert.NotContains(t, ann, fakegpu.AnnotationDRA)

	// The DRA pool's driver, on the machine the NodePool was allowed.
	labels, ann, ok, err = c.TakeOver(karpenterNode("sim-h100-80gb-x8", "np-l4"))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "l4-dra", labels[fleet.LabelPool])
	assert.Equal(t, "h100-80gb", ann[fakegpu.AnnotationSKU], "the hardware follows the instance type")
	assert.Equal(t, "gpu", ann[fakegpu.AnnotationDRA])

	// A NodePool the fleet does not know still gets real hardware, in no pool.
	labels, _, ok, err = c.TakeOver(karpenterNode("sim-l4-x1", "someone-elses"))
	require.NoError(t, err)
	require.True(t, ok)
	assert.NotContains(t, labels, fleet.LabelPool)

	// Not the cloud's machine, or not made by Karpenter: left alone.
	_, _, ok, err = c.TakeOver(karpenterNode("m5.large", "np-h100"))
	require.NoError(t, err)
	assert.False(t, ok)
	_, _, ok, err = c.TakeOver(karpenterNode("sim-l4-x1", ""))
	require.NoError(t, err)
	assert.False(t, ok)

	// Taken over once: nothing more to patch.
	n := karpenterNode("sim-h100-80gb-x8", "np-h100")
	labels, ann, _, err = c.TakeOver(n)
	require.NoError(t, err)
	for k, v := range labels {
		n.Labels[k] = v
	}
	for k, v := range ann {
		n.Annotations[k] = v
	}
	_, _, ok, err = c.TakeOver(n)
	require.NoError(t, err)
	assert.False(t, ok)
}

// The reference's NodePool, as explain reads it: its nodes' labels and
// taints, the one machine it may buy, its limit.
func TestExplainedNodePoolOfTheReference(t *testing.T) {
	data, err := os.ReadFile("../../manifests/candidates/reference/80-autoscaling.yaml")
	require.NoError(t, err)
	var np *unstructured.Unstructured
	for _, doc := range strings.Split(string(data), "\n---\n") {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
		if u.GetKind() == "NodePool" && u.GetName() == "gpu-h100-burst" {
			np = u
		}
	}
	require.NotNil(t, np)
	c := cloudOf(t)
	got, err := ExplainedNodePool(np, c.InstanceTypes())
	require.NoError(t, err)
	assert.Equal(t, "gpu-h100-burst", got.Name)
	assert.Equal(t, "h100-burst", got.Labels["sku"])
	assert.Equal(t, "sim-h100-80gb-x8", got.Labels[LabelInstanceType])
	require.Len(t, got.Offers, 1, "only the instance type its requirement allows, of %d", len(c.InstanceTypes()))
	assert.Equal(t, "sim-h100-80gb-x8", got.Offers[0].InstanceType)
	q := got.Limits["nvidia.com/gpu"]
	assert.Equal(t, int64(16), q.Value())
	assert.Len(t, got.Taints, 2)

	// Spot only: the cloud sells its machines on demand, so the NodePool
	// may buy none, and says which it ruled out.
	spot := np.DeepCopy()
	reqs, _, _ := unstructured.NestedSlice(spot.Object, "spec", "template", "spec", "requirements")
	reqs = append(reqs[:1], map[string]any{"key": LabelCapacityType, "operator": "In", "values": []any{"spot"}})
	require.NoError(t, unstructured.SetNestedSlice(spot.Object, reqs, "spec", "template", "spec", "requirements"))
	got, err = ExplainedNodePool(spot, c.InstanceTypes())
	require.NoError(t, err)
	assert.Empty(t, got.Offers)
	assert.Contains(t, got.Unmet, "sim-h100-80gb-x8")
}

// The reference's MIG pool scales from zero only through its NodeOverlay:
// with Karpenter's gate on, the machine it may buy holds the 56 slices
// its nodes will advertise; with the gate off, or the overlay refused,
// it holds 8 whole GPUs, and explain says which overlay is not applied
// and why.
func TestNodeOverlayGivesTheMIGPoolItsSlices(t *testing.T) {
	data, err := os.ReadFile("../../manifests/candidates/reference/80-autoscaling.yaml")
	require.NoError(t, err)
	var np *unstructured.Unstructured
	var overlays []nodeOverlay
	for _, doc := range strings.Split(string(data), "\n---\n") {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
		switch {
		case u.GetKind() == "NodePool" && u.GetName() == "gpu-a100-mig-burst":
			np = u
		case u.GetKind() == "NodeOverlay" && u.GetName() == "a100-mig-all-1g-5gb":
			var o nodeOverlay
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &o))
			overlays = append(overlays, o)
		}
	}
	require.NotNil(t, np)
	require.Len(t, overlays, 1)
	slices := func(gate OverlayGate, ovs []nodeOverlay) (int64, []explain.Overlay) {
		got, err := ExplainedNodePool(np, cloudOf(t).InstanceTypes())
		require.NoError(t, err)
		overlay(&got, np.Object, ovs, gate)
		require.Len(t, got.Offers, 1)
		q := got.Offers[0].Resources["nvidia.com/mig-1g.5gb"]
		return q.Value(), got.Unapplied
	}

	n, unapplied := slices(OverlayGateOn, overlays)
	assert.Equal(t, int64(56), n, "the gate on, not yet evaluated: taken as applied")
	assert.Empty(t, unapplied)

	n, unapplied = slices(OverlayGateOff, overlays)
	assert.Zero(t, n)
	require.Len(t, unapplied, 1)
	assert.Contains(t, unapplied[0].Why, "feature gate off")

	n, unapplied = slices(OverlayGateUnknown, overlays)
	assert.Zero(t, n, "nothing says Karpenter applies it")
	require.Len(t, unapplied, 1)
	assert.Contains(t, unapplied[0].Why, "not evaluated")

	refused := append([]nodeOverlay(nil), overlays...)
	refused[0].Status.Conditions = []metav1.Condition{{Type: "ValidationSucceeded", Status: metav1.ConditionFalse, Reason: "Conflict", Message: "conflict with another overlay"}}
	n, unapplied = slices(OverlayGateOn, refused)
	assert.Zero(t, n)
	require.Len(t, unapplied, 1)
	assert.Contains(t, unapplied[0].Why, "Conflict")

	// Another NodePool's machines are not the overlay's.
	other := append([]nodeOverlay(nil), overlays...)
	other[0].Spec.Requirements = []corev1.NodeSelectorRequirement{{Key: LabelNodePool, Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu-h100-burst"}}}
	n, unapplied = slices(OverlayGateOn, other)
	assert.Zero(t, n)
	assert.Empty(t, unapplied)
}

// A NodePool's requirements on the instance type, capacity type and zone
// choose the machines it may buy; other keys are Karpenter's to judge.
func TestInstanceTypeMeetsRequirements(t *testing.T) {
	it, err := InstanceTypeFor(fleet.Pool{Name: "p", SKU: "h100-80gb", GPUsPerNode: 8})
	require.NoError(t, err)
	req := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	assert.True(t, it.meets(nil))
	assert.True(t, it.meets([]corev1.NodeSelectorRequirement{req(LabelCapacityType, corev1.NodeSelectorOpIn, "on-demand", "spot"), req(LabelZone, corev1.NodeSelectorOpExists)}))
	assert.False(t, it.meets([]corev1.NodeSelectorRequirement{req(LabelCapacityType, corev1.NodeSelectorOpIn, "spot")}))
	assert.False(t, it.meets([]corev1.NodeSelectorRequirement{req(LabelZone, corev1.NodeSelectorOpNotIn, "sim-zone-a")}))
	assert.False(t, it.meets([]corev1.NodeSelectorRequirement{req(LabelInstanceType, corev1.NodeSelectorOpIn, "sim-l4-x1")}))
	assert.True(t, it.meets([]corev1.NodeSelectorRequirement{req("karpenter.sh/nodepool", corev1.NodeSelectorOpExists)}), "not the cloud's to judge")
}
