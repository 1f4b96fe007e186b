// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/gpupool/gpupool/fakegpu"
)

// The informer shows the controller's own device records late, and in
// write order. Replayed here is a sequence that once gave one GPU to two
// pods: pods bind out of creation order, and a stale view made the
// simulated kubelet allocate a pod a second time.
func TestAllocationsSurviveAStaleInformerView(t *testing.T) {
	stack, err := fakegpu.StackFromObjects(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	inv := fakegpu.NodeInventory{SKU: mustSKU(t, "h100-80gb"), Count: 8}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-h100-1"}, Status: corev1.NodeStatus{
		Capacity: corev1.ResourceList{fakegpu.ResourceGPU: resource.MustParse("8")},
	}}
	created := metav1.NewTime(time.Unix(1_800_000_000, 0)) // one second for all: name breaks ties
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: created},
			Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{fakegpu.ResourceGPU: resource.MustParse("1")}}}}},
		}
	}
	gpuPod := func(p *corev1.Pod) fakegpu.GPUPod {
		gp := fakegpu.GPUPod{Key: p.Namespace + "/" + p.Name, Containers: []fakegpu.ContainerRequest{{Name: "c", Limits: map[string]int64{fakegpu.ResourceGPU: 1}}}, RuntimeHandler: fakegpu.RuntimeHandler}
		if d := p.Annotations[fakegpu.AnnotationVisibleDevices]; d != "" {
			gp.Devices = strings.Split(d, ",")
		}
		return gp
	}
	// replay returns the pods sharing a device, and pods whose record
	// changed, once the sequence has run. checkpoint gives each judgement
	// the simulated kubelet's memory.
	replay := func(checkpoint func() *deviceCheckpoint) (shared, changed []string) {
		written := map[string]string{} // what the apiserver holds: the last record per pod
		var log []string               // every record, in write order
		judge := func(view ...*corev1.Pod) {
			for _, j := range judgeNode(stack, node, inv, view, gpuPod, checkpoint(), int64(len(log))) {
				if j.record == nil {
					continue
				}
				rec := strings.Join(j.record.devices, ",")
				if old, ok := written[j.pod.Name]; ok && old != rec {
					changed = append(changed, j.pod.Name)
				}
				written[j.pod.Name] = rec
				log = append(log, j.pod.Name+"="+rec)
			}
		}
		// seen is the pod as the informer shows it after the first n records.
		seen := func(name string, n int) *corev1.Pod {
			p := pod(name)
			for _, rec := range log[:n] {
				if k, v, _ := strings.Cut(rec, "="); k == name {
					p.Annotations = map[string]string{fakegpu.AnnotationVisibleDevices: v}
				}
			}
			return p
		}
		judge(pod("gpu-0"), pod("gpu-2"))                           // gpu-1 not bound yet
		judge(seen("gpu-0", 1), pod("gpu-1"), seen("gpu-2", 1))     // gpu-2's record not seen yet
		judge(seen("gpu-0", 3), seen("gpu-1", 2), seen("gpu-2", 3)) // gpu-1's record not seen yet
		if len(written) != 3 {
			t.Fatalf("want a device record for each of 3 pods, got %v", written)
		}
		holder := map[string]string{}
		for _, name := range []string{"gpu-0", "gpu-1", "gpu-2"} {
			for _, d := range strings.Split(written[name], ",") {
				if other, dup := holder[d]; dup {
					shared = append(shared, other+"+"+name)
				}
				holder[d] = name
			}
		}
		return shared, changed
	}

	cp := newDeviceCheckpoint()
	if shared, changed := replay(func() *deviceCheckpoint { return cp }); len(shared)+len(changed) > 0 {
		t.Errorf("with the checkpoint: pods %v hold one device, pods %v were allocated twice; want neither", shared, changed)
	}
	// Without the memory (what the controller once did) the same sequence
	// gives a device to two pods: the replay can catch the bug.
	if shared, _ := replay(newDeviceCheckpoint); len(shared) == 0 {
		t.Error("without a checkpoint the replay should give one device to two pods, and did not: it no longer reproduces the race")
	}

	cp.forget("uid-gpu-0")
	if _, ok := cp.get("uid-gpu-0"); ok || cp.len() != 2 {
		t.Errorf("after gpu-0 was deleted the checkpoint holds %d allocations (gpu-0's: %v), want 2 without gpu-0's", cp.len(), ok)
	}
}

func mustSKU(t *testing.T, key string) fakegpu.SKU {
	t.Helper()
	s, err := fakegpu.LookupSKU(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A neighbour whose writes keep failing (kwok's status write wins each
// time) neither holds back what another pod on the node sees nor fails
// that pod's pass: the neighbour is retried under its own key.
func TestNeighbourFailureDoesNotHoldBackSight(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-h100-1", Annotations: map[string]string{fakegpu.AnnotationSKU: "h100-80gb", fakegpu.AnnotationGPUs: "8"}},
		Status:     corev1.NodeStatus{Capacity: corev1.ResourceList{fakegpu.ResourceGPU: resource.MustParse("8")}},
	}
	gpu := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gpu", UID: "uid-gpu"},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{fakegpu.ResourceGPU: resource.MustParse("1")}}}}}}
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain", UID: "uid-plain"},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "c", Image: "cuda"}}}}
	cs := fake.NewClientset(node, gpu, plain)
	cs.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.PatchAction).GetName() == gpu.Name {
			return true, nil, apierrors.NewConflict(corev1.Resource("pods"), gpu.Name, errors.New("kwok wrote first"))
		}
		return false, nil, nil
	})
	stack, err := fakegpu.StackFromObjects(nil, nil)
	require.NoError(t, err)
	c := &Controller{client: cs, checkpoint: newDeviceCheckpoint(), stack: stack, recorder: record.NewFakeRecorder(10),
		opt:      Options{Log: func(string, ...any) {}},
		podQueue: workqueue.NewTypedRateLimitingQueue(retryLimiter())}
	defer c.podQueue.ShutDown()
	f := informers.NewSharedInformerFactory(cs, 0)
	c.nodes, c.pods, c.rcs = f.Core().V1().Nodes().Informer(), f.Core().V1().Pods().Informer(), f.Node().V1().RuntimeClasses().Informer()
	f.Start(t.Context().Done())
	f.WaitForCacheSync(t.Context().Done())

	_, err = c.reconcilePod(t.Context(), "ns/plain")
	require.NoError(t, err, "the pod's own pass")
	got, err := cs.CoreV1().Pods("ns").Get(t.Context(), plain.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Contains(t, got.Annotations, fakegpu.AnnotationGPUSight, "what the pod's container sees is recorded")
	deadline := time.Now().Add(5 * time.Second)
	for c.podQueue.Len() == 0 {
		require.True(t, time.Now().Before(deadline), "the neighbour was never requeued")
		time.Sleep(5 * time.Millisecond) // the rate limiter's first delay
	}
	key, _ := c.podQueue.Get()
	require.Equal(t, "ns/gpu", key, "the neighbour is retried under its own key")
}

// The simulated kubelet judges the node as the apiserver has it: a view
// still showing Karpenter's karpenter.sh/unregistered NoExecute taint,
// which the write that let the scheduler bind the pod removed, refuses
// nothing.
func TestStaleNodeViewRefusesNothing(t *testing.T) {
	fresh := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-gpu-1", ResourceVersion: "2"},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}}}
	stale := fresh.DeepCopy()
	stale.ResourceVersion = "1"
	stale.Spec.Taints = []corev1.Taint{{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-p"},
		Spec: corev1.PodSpec{NodeName: fresh.Name, Containers: []corev1.Container{{Name: "c"}}}}
	cs := fake.NewClientset(fresh, pod)
	c := &Controller{client: cs, opt: Options{Log: func(string, ...any) {}}}

	refused, err := c.admitOnce(t.Context(), stale, []*corev1.Pod{pod}, pod)
	require.NoError(t, err)
	require.False(t, refused, "refused from a stale view of the node")

	// The node as it really is still refuses.
	cs = fake.NewClientset(stale, pod)
	c = &Controller{client: cs, recorder: record.NewFakeRecorder(10), opt: Options{Log: func(string, ...any) {}}}
	refused, err = c.admitOnce(t.Context(), stale, []*corev1.Pod{pod}, pod)
	require.NoError(t, err)
	require.True(t, refused, "a NoExecute taint the pod does not tolerate")
}
