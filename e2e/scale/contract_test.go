package scale

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpupool/gpupool/e2e/fleet"
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
	c := checkContract(fl, w, expected, nodes, good, nss)
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
			c := checkContract(fl, w, expected, nodes, tc.edit(ps), nss)
			assert.NotZero(t, c.ByRule[tc.rule], "%s: %v", tc.rule, c.Examples)
		})
	}
}
