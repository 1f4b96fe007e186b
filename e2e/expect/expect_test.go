// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package expect

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A pod that shows it will never reach what is awaited ends the wait at
// once, saying so, rather than at the deadline.
func TestPodReachesUnlessStopsWhenShown(t *testing.T) {
	running := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{NodeName: "n"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	cs := fake.NewClientset(running)
	failed := func(p *corev1.Pod) (bool, string) { return p.Status.Phase == corev1.PodFailed, Describe(p) }
	start := time.Now()
	_, err := PodReachesUnless(context.Background(), cs, "ns", "p", "be refused", time.Minute, failed, func(p *corev1.Pod) (string, bool) {
		return "it was admitted", p.Status.Phase == corev1.PodRunning
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "expected pod ns/p to be refused, but it was admitted: phase Running")
	assert.Less(t, time.Since(start), 5*time.Second)

	// Without never, the same pod is waited for until the deadline.
	_, err = PodReaches(context.Background(), cs, "ns", "p", "be refused", 300*time.Millisecond, failed)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "admitted")
}

// Only a resource a DeviceClass maps, or a claim, lets DRA writes retry a
// refused pod (scheduler-facts §2.2 to §2.4).
func TestMayUseDRAOnlyWhereAClassMaps(t *testing.T) {
	gpu := "nvidia.com/gpu"
	cs := fake.NewClientset(&resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"},
		Spec: resourcev1.DeviceClassSpec{ExtendedResourceName: &gpu}})
	asking := func(name string) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceName(name): resource.MustParse("1")}}}}}}
	}
	claiming := &corev1.Pod{Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu"}}}}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want bool
	}{
		{asking("nvidia.com/gpu"), true},
		{asking(resourcev1.ResourceDeviceClassPrefix + "gpu.nvidia.com"), true},
		{asking("nvidia.com/mig-1g.5gb"), false},
		{asking("cpu"), false},
		{claiming, true},
	} {
		w := &watched{cs: cs}
		got, err := w.mayUseDRA(context.Background(), tc.pod)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%v", tc.pod.Spec)
	}
}
