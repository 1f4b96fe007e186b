// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package explore

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// A reproduction reads as a person writes one, and reads back as the same
// object.
func TestCompactYAML(t *testing.T) {
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "tenant-b"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "img", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"nvidia.com/gpu.shared": *resource.NewQuantity(1, resource.DecimalSI)}}}},
			NodeSelector: map[string]string{"sku": "l4", "trust": "tenant-a", "enabled": "true"},
			Tolerations:  []corev1.Toleration{{Key: "sku", Operator: corev1.TolerationOpEqual, Value: "l4-shared", Effect: corev1.TaintEffectNoSchedule}},
		}}
	y, err := compactYAML(pod)
	require.NoError(t, err)
	out := string(y)
	assert.Contains(t, out, `metadata: {name: p, namespace: tenant-b}`)
	assert.Contains(t, out, `nodeSelector: {enabled: "true", sku: l4, trust: tenant-a}`, "a string YAML would read as a bool keeps its quotes")
	assert.Contains(t, out, `- {effect: NoSchedule, key: sku, operator: Equal, value: l4-shared}`)
	assert.Contains(t, out, `resources: {limits: {nvidia.com/gpu.shared: "1"}}`)
	assert.NotContains(t, out, "creationTimestamp")
	assert.NotContains(t, out, "status")
	assert.Less(t, strings.Count(out, "\n"), 12)

	var back corev1.Pod
	require.NoError(t, yaml.UnmarshalStrict(y, &back))
	assert.Equal(t, pod.Spec.NodeSelector, back.Spec.NodeSelector)
	assert.True(t, pod.Spec.Containers[0].Resources.Limits["nvidia.com/gpu.shared"].Equal(back.Spec.Containers[0].Resources.Limits["nvidia.com/gpu.shared"]))
}
