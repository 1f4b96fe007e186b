// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// A pod whose claims the kubelet cannot prepare never starts, on a node
// with the DRA driver or without it (kubelet-facts §5.2): a claim nothing
// reserved for the pod (bound through nodeName, never allocated) is
// refused first, and an allocated, reserved claim still needs its
// driver's plugin on the node.
func TestClaimsPreparedOnlyWhereTheDriverRuns(t *testing.T) {
	cs := fake.NewClientset()
	f := informers.NewSharedInformerFactory(cs, 0)
	c := &Controller{client: cs}
	c.claims = f.Resource().V1().ResourceClaims().Informer()
	c.slices = f.Resource().V1().ResourceSlices().Informer()
	require.NoError(t, c.slices.AddIndexers(cache.Indexers{sliceIndex: indexSliceByNode}))

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "tenant-b", UID: "pod-uid"},
		Spec:       corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr("c")}}},
	}
	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "tenant-b", UID: "claim-uid"}}
	require.NoError(t, c.claims.GetStore().Add(claim))
	devicePluginNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "l4-0"}}

	_, err := c.prepareClaims(devicePluginNode, false, pod)
	require.ErrorContains(t, err, "pod p (pod-uid) is not allowed to use ResourceClaim c (claim-uid)", "never allocated nor reserved")

	reserved := claim.DeepCopy()
	reserved.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
		Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.nvidia.com", Pool: "h100-0", Device: "gpu-0"}},
	}}
	reserved.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: "pod-uid"}}
	require.NoError(t, c.claims.GetStore().Update(reserved))
	_, err = c.prepareClaims(devicePluginNode, false, pod)
	require.ErrorContains(t, err, "DRA driver gpu.nvidia.com is not registered", "allocated elsewhere, bound here")
	require.NotErrorIs(t, err, errClaimNotSeen, "a missing driver is no cache lag to wait out")
}

// A pod created with nodeName never passes the scheduler, so it has no
// PodScheduled condition: the grace its claims get runs from its
// creation, or the kubelet would wait for them forever and show its
// containers running (seen in exploration: a 20 s wait per such shape).
func TestBoundAtOfAPodCreatedWithNodeName(t *testing.T) {
	created := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: created}, Spec: corev1.PodSpec{NodeName: "gpu-h100-exclusive-1"}}
	require.Equal(t, created.Time, boundAt(p))

	scheduled := metav1.NewTime(created.Add(3 * time.Second))
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: scheduled}}
	require.Equal(t, scheduled.Time, boundAt(p), "the scheduler's bind, when there was one")

	require.True(t, boundAt(&corev1.Pod{}).IsZero(), "not bound")
}
