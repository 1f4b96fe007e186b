// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/gpupool/gpupool/fakegpu"
)

// The caches keep objects without managed fields; what is not an object
// (a deletion tombstone) passes through untouched.
func TestStripManagedFields(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kwok"}}}}
	out, err := StripManagedFields(pod)
	if err != nil || out.(*corev1.Pod).ManagedFields != nil {
		t.Fatalf("managed fields kept: %v, %v", out.(*corev1.Pod).ManagedFields, err)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}
	if out, err := StripManagedFields(tomb); err != nil || out != any(tomb) {
		t.Fatalf("a tombstone came back changed: %v, %v", out, err)
	}
}

// A pod bound to a node before the simulated stack knew the node as a GPU
// node was set aside; once the node is one, the node's update requeues
// the pods on it that were never started, and only those.
func TestNodeUpdateRequeuesUnstartedPods(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bound := func(name string, annotations map[string]string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: name, Annotations: annotations},
			Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: phase}}
	}
	cs := fake.NewClientset(
		bound("unstarted", nil, corev1.PodRunning),
		bound("started", map[string]string{fakegpu.AnnotationGPUSight: "{}"}, corev1.PodRunning),
		bound("failed", nil, corev1.PodFailed),
	)
	f := informers.NewSharedInformerFactory(cs, 0)
	c := &Controller{opt: Options{Log: func(string, ...any) {}}}
	c.pods = f.Core().V1().Pods().Informer()
	require.NoError(t, c.pods.AddIndexers(cache.Indexers{"spec.nodeName": func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}}))
	c.podQueue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer c.podQueue.ShutDown()
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())

	c.enqueueUnstarted(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}})
	require.Zero(t, c.podQueue.Len(), "a node that is no GPU node yet requeues nothing")

	c.enqueueUnstarted(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{
		fakegpu.AnnotationSKU: "h100-80gb", fakegpu.AnnotationGPUs: "8"}}})
	require.Equal(t, 1, c.podQueue.Len())
	key, _ := c.podQueue.Get()
	require.Equal(t, "t/unstarted", key)
}
