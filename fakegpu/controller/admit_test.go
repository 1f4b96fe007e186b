// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
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
			reason, msg := kubeletAdmits(tc.node, nil, tc.pod)
			if reason != tc.wantReason {
				t.Fatalf("reason %q (%s), want %q", reason, msg, tc.wantReason)
			}
			if reason != "" && !strings.HasPrefix(msg, "Pod was rejected: Predicate "+reason+" failed: ") {
				t.Errorf("message %q", msg)
			}
		})
	}
}

// TestKubeletFits: a pod bound to a node that cannot hold it beside the
// pods admitted before it is refused with OutOf<resource>, the first
// resource that does not fit in the kubelet's order (kubelet-facts §1.4).
func TestKubeletFits(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "h100-0"},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
			corev1.ResourcePods: resource.MustParse("3"), "nvidia.com/gpu": resource.MustParse("8"), "example.com/fpga": resource.MustParse("2"),
		}},
	}
	at := time.Unix(1000, 0)
	pod := func(name string, created time.Time, req corev1.ResourceList, initReq ...corev1.ResourceList) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "t", UID: k8stypes.UID("uid-" + name), CreationTimestamp: metav1.NewTime(created)},
			Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Requests: req}}}}}
		for i, r := range initReq {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "init" + string(rune('0'+i)), Resources: corev1.ResourceRequirements{Requests: r}})
		}
		return p
	}
	cpu := func(v string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
	}
	earlier := pod("earlier", at.Add(-time.Second), cpu("3"))
	later := pod("later", at.Add(time.Second), cpu("3"))
	for _, tc := range []struct {
		name       string
		onNode     []*corev1.Pod
		pod        *corev1.Pod
		wantReason string
		wantMsg    string
	}{
		{"fits on an empty node", nil, pod("p", at, cpu("4")), "", ""},
		{"more cpu than the node has", nil, pod("p", at, cpu("5")), "OutOfcpu",
			"Pod was rejected: Node didn't have enough resource: cpu, requested: 5000, used: 0, capacity: 4000"},
		{"cpu taken by a pod admitted first", []*corev1.Pod{earlier}, pod("p", at, cpu("2")), "OutOfcpu",
			"Pod was rejected: Node didn't have enough resource: cpu, requested: 2000, used: 3000, capacity: 4000"},
		{"a pod that came later does not count", []*corev1.Pod{later}, pod("p", at, cpu("2")), "", ""},
		{"an init container's request counts as the pod's", nil, pod("p", at, cpu("1"), cpu("6")), "OutOfcpu", ""},
		{"memory", nil, pod("p", at, corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("9Gi")}), "OutOfmemory", ""},
		{"an extended resource the node serves", nil, pod("p", at, corev1.ResourceList{"example.com/fpga": resource.MustParse("3")}), "OutOfexample.com/fpga",
			"Pod was rejected: Node didn't have enough resource: example.com/fpga, requested: 3, used: 0, capacity: 2"},
		{"an extended resource the node does not serve is dropped", nil, pod("p", at, corev1.ResourceList{"example.com/asic": resource.MustParse("9")}), "", ""},
		{"the device plugin's resources are Allocate's", nil, pod("p", at, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("9")}), "", ""},
		{"the pod count comes first", []*corev1.Pod{earlier, pod("e2", at.Add(-2*time.Second), nil), pod("e3", at.Add(-3*time.Second), nil)}, pod("p", at, cpu("9")), "OutOfpods",
			"Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg := kubeletAdmits(node, admittedBefore(append(tc.onNode, tc.pod), tc.pod), tc.pod)
			if reason != tc.wantReason {
				t.Fatalf("reason %q (%s), want %q", reason, msg, tc.wantReason)
			}
			if tc.wantMsg != "" && msg != tc.wantMsg {
				t.Errorf("message %q, want %q", msg, tc.wantMsg)
			}
		})
	}
}
