// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/gpupool/gpupool/fakegpu"
)

// A node's DRA driver that stops and starts again publishes its pool
// again, at a newer generation (a node moved to DRA, back, and again).
func TestPoolPublishedAgainAfterAStop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fake.NewClientset()
	n := 0
	cs.PrependReactor("create", "resourceslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*resourcev1.ResourceSlice)
		if s.Name == "" {
			n++
			s.Name = fmt.Sprintf("%s%d", s.GenerateName, n) // the fake does not generate names
		}
		return false, nil, nil
	})
	f := informers.NewSharedInformerFactory(cs, 0)
	c := &Controller{client: cs, published: map[string]publication{}, opt: Options{Log: func(string, ...any) {}}}
	c.slices = f.Resource().V1().ResourceSlices().Informer()
	require.NoError(t, c.slices.AddIndexers(cache.Indexers{sliceIndex: indexSliceByNode}))
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	want, err := fakegpu.DRASlices("n", fakegpu.NodeInventory{SKU: fakegpu.Catalog["h100-80gb"], Count: 2}, nil, fakegpu.DRAConfig{Mode: fakegpu.DRAWholeGPU}, 0, nil)
	require.NoError(t, err)
	// reconcile until the publisher says the cache caught up and the pool is as wanted.
	reconcile := func(want []resourcev1.ResourceSliceSpec) []int64 {
		deadline := time.Now().Add(5 * time.Second)
		for {
			stale, err := c.reconcileSlices(ctx, node, want)
			require.NoError(t, err)
			objs, _ := c.slices.GetIndexer().ByIndex(sliceIndex, "n")
			if !stale && len(objs) == len(want) {
				var gens []int64
				for _, o := range objs {
					gens = append(gens, o.(*resourcev1.ResourceSlice).Spec.Pool.Generation)
				}
				return gens
			}
			require.True(t, time.Now().Before(deadline), "pool of node n never reached %d slices (stale %v, %d in the cache)", len(want), stale, len(objs))
			time.Sleep(10 * time.Millisecond) // polling a local informer cache
		}
	}
	require.Equal(t, []int64{1}, reconcile(want), "published")
	require.Empty(t, reconcile(nil), "the driver stopped")
	require.Equal(t, []int64{3}, reconcile(want), "published again, newer than the pool that went")
}

// While the cache still shows the generation before the one just
// published beside it, the publisher waits instead of publishing a third.
func TestPoolNotRepublishedWhileTheCacheLags(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	var created []*resourcev1.ResourceSlice
	cs.PrependReactor("create", "resourceslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*resourcev1.ResourceSlice).DeepCopy()
		s.Name = fmt.Sprintf("%s%d", s.GenerateName, len(created))
		created = append(created, s)
		return true, s, nil
	})
	// An informer never started: the test feeds its cache by hand.
	c := &Controller{client: cs, published: map[string]publication{}, opt: Options{Log: func(string, ...any) {}}}
	c.slices = informers.NewSharedInformerFactory(cs, 0).Resource().V1().ResourceSlices().Informer()
	require.NoError(t, c.slices.AddIndexers(cache.Indexers{sliceIndex: indexSliceByNode}))
	cached := c.slices.GetIndexer()

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "uid-1"}}
	inv := fakegpu.NodeInventory{SKU: fakegpu.Catalog["h100-80gb"], Count: 2}
	want := func(xids map[int]int) []resourcev1.ResourceSliceSpec {
		s, err := fakegpu.DRASlices("n", inv, nil, fakegpu.DRAConfig{Mode: fakegpu.DRAWholeGPU}, 0, xids)
		require.NoError(t, err)
		return s
	}
	healthy, tainted := want(nil), want(map[int]int{1: 79})

	stale, err := c.reconcileSlices(ctx, node, healthy)
	require.NoError(t, err)
	require.False(t, stale)
	require.Len(t, created, 1)
	require.NoError(t, cached.Add(created[0])) // generation 1 reaches the cache

	stale, err = c.reconcileSlices(ctx, node, tainted) // a GPU's Xid: generation 2
	require.NoError(t, err)
	require.False(t, stale)
	require.Len(t, created, 2)
	require.Equal(t, int64(2), created[1].Spec.Pool.Generation)
	require.NoError(t, cached.Add(created[1])) // generation 2 is seen, generation 1's deletion not yet

	stale, err = c.reconcileSlices(ctx, node, tainted)
	require.NoError(t, err)
	require.True(t, stale, "generation 1 is still in the cache")
	require.Len(t, created, 2, "no third generation while the cache lags")

	require.NoError(t, cached.Delete(created[0]))
	stale, err = c.reconcileSlices(ctx, node, tainted)
	require.NoError(t, err)
	require.False(t, stale)
	require.Len(t, created, 2, "the pool is as wanted")
}
