// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPlacerBindsLikeTheSchedulerWouldAndStopsWhenFull(t *testing.T) {
	taint := corev1.Taint{Key: "sku", Value: "h100", Effect: corev1.TaintEffectNoSchedule}
	node := func(name string, gpus, pods int64, labels map[string]string) *corev1.Node {
		alloc := corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI), corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{taint}},
			Status: corev1.NodeStatus{Allocatable: alloc}}
	}
	h100 := map[string]string{"sku": "h100"}
	nodes := []*corev1.Node{
		node("b", 2, 110, h100),
		node("a", 1, 110, h100),
		node("c", 8, 1, h100),                                 // one pod slot, taken below
		node("other", 8, 110, map[string]string{"sku": "l4"}), // not selected
	}
	gpuPod := func(node string, tolerate bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "scale"}, Spec: corev1.PodSpec{NodeName: node, NodeSelector: h100,
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(1, resource.DecimalSI)}}}}}}
		if tolerate {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "sku", Operator: corev1.TolerationOpEqual, Value: "h100", Effect: corev1.TaintEffectNoSchedule}}
		}
		return p
	}
	existing := []*corev1.Pod{gpuPod("a", true), gpuPod("c", true)}
	pl := newPlacer(nodes, existing)

	wellFormed := gpuPod("", true)
	var got []string
	for range 2 {
		n, err := pl.place(wellFormed)
		require.NoError(t, err)
		got = append(got, n)
	}
	assert.Equal(t, []string{"b", "b"}, got, "a is full (its GPU is held), c has no pod slot, other is not selected")
	_, err := pl.place(wellFormed)
	assert.ErrorContains(t, err, "3 nodes admit the pod, all full")

	_, err = pl.place(gpuPod("", false))
	assert.ErrorContains(t, err, "0 nodes admit the pod", "the pool's taint is not tolerated")
}
