package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubeletAdmits: a pod bound to a node, as a real kubelet's
// generalFilter judges it (kubelet-facts §1).
func TestKubeletAdmits(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "l4-a-0", Labels: map[string]string{"sku": "l4", "trust": "tenant-a"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: "sku", Value: "l4-shared", Effect: corev1.TaintEffectNoSchedule},
		}},
	}
	noExec := node.DeepCopy()
	noExec.Spec.Taints = append(noExec.Spec.Taints, corev1.Taint{Key: "drain", Value: "now", Effect: corev1.TaintEffectNoExecute})
	pod := func(sel map[string]string, tol ...corev1.Toleration) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{NodeName: node.Name, NodeSelector: sel, Tolerations: tol}}
	}
	for _, tc := range []struct {
		name       string
		node       *corev1.Node
		pod        *corev1.Pod
		wantReason string
	}{
		{"no selector, NoSchedule taint untolerated: admitted", node, pod(nil), ""},
		{"matching selector", node, pod(map[string]string{"trust": "tenant-a"}), ""},
		{"another trust domain's selector", node, pod(map[string]string{"trust": "tenant-b"}), ReasonNodeAffinity},
		{"NoExecute taint untolerated", noExec, pod(nil), ReasonTaintToleration},
		{"NoExecute taint tolerated", noExec, pod(nil, corev1.Toleration{Key: "drain", Operator: corev1.TolerationOpExists}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg := kubeletAdmits(tc.node, tc.pod)
			if reason != tc.wantReason {
				t.Fatalf("reason %q (%s), want %q", reason, msg, tc.wantReason)
			}
			if reason != "" && !strings.HasPrefix(msg, "Pod was rejected: Predicate "+reason+" failed: ") {
				t.Errorf("message %q", msg)
			}
		})
	}
}
