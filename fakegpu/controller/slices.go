// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpupool/gpupool/fakegpu"
)

// LabelSlicePublisher marks the ResourceSlices this controller publishes,
// so a sweep can find them; they are also owned by their Node, so the
// garbage collector removes them with it.
const LabelSlicePublisher = "fakegpu.gpupool.dev/publisher"

// sliceIndex indexes the driver's slices by node.
const sliceIndex = "spec.nodeName"

// sliceListOptions limits the slice informer to NVIDIA's GPU driver.
func sliceListOptions(o *metav1.ListOptions) {
	o.FieldSelector = fields.OneTermEqualSelector("spec.driver", fakegpu.DRADriver).String()
}

func indexSliceByNode(obj any) ([]string, error) {
	if s, ok := obj.(*resourcev1.ResourceSlice); ok && s.Spec.NodeName != nil {
		return []string{*s.Spec.NodeName}, nil
	}
	return nil, nil
}

// reconcileSlices makes the node's pool hold want, as the driver's
// publisher does (dra-facts §4 "Pools"): unchanged devices leave the pool
// alone; a change publishes the whole pool at the next generation, exact
// resourceSliceCount, then deletes the older slices, so a consumer never
// sees a pool with fewer devices than either generation.
//
// stale is true when the informer has not yet shown the generation this
// controller last published for the node: acting on it would publish a
// second set of slices, so the caller retries shortly instead.
func (c *Controller) reconcileSlices(ctx context.Context, node *corev1.Node, want []resourcev1.ResourceSliceSpec) (stale bool, err error) {
	objs, err := c.slices.GetIndexer().ByIndex(sliceIndex, node.Name)
	if err != nil {
		return false, err
	}
	var have []*resourcev1.ResourceSlice
	var gen int64
	c.mu.Lock()
	last := c.published[node.Name]
	c.mu.Unlock()
	if last.uid != node.UID {
		last = publication{} // a new node of the same name starts afresh
	}
	older, current := 0, 0
	for _, o := range objs {
		s := o.(*resourcev1.ResourceSlice)
		have = append(have, s)
		gen = max(gen, s.Spec.Pool.Generation)
		switch g := s.Spec.Pool.Generation; {
		case g < last.gen:
			older++
		case g == last.gen:
			current++
		}
	}
	// The cache is behind while it does not yet show the pool as last
	// published: some of its slices missing, or older ones still there
	// (also after the driver stopped, when it publishes none). Acting on
	// it would publish yet another generation. Past staleFor the cache is
	// believed: someone else removed slices.
	if (older > 0 || current < last.slices) && time.Since(last.at) < staleFor {
		return true, nil
	}
	if samePool(have, want) {
		return false, nil
	}
	// Generations only grow, also across a stop: a pool that comes back
	// is newer than the one that went.
	gen = max(gen, last.gen)
	for i, spec := range want {
		spec.Pool.Generation = gen + 1
		s := &resourcev1.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{
				GenerateName: fakegpu.DRASliceName(node.Name, i),
				Labels:       map[string]string{LabelSlicePublisher: "fakegpu"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
					Controller: new(true)}},
			},
			Spec: spec,
		}
		if _, err := c.client.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return false, fmt.Errorf("node %s: publish ResourceSlice %d of %d: %w", node.Name, i+1, len(want), err)
		}
	}
	for _, s := range have {
		if err := c.client.ResourceV1().ResourceSlices().Delete(ctx, s.Name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
			return false, fmt.Errorf("node %s: remove ResourceSlice %s of generation %d: %w", node.Name, s.Name, s.Spec.Pool.Generation, err)
		}
	}
	c.mu.Lock()
	c.published[node.Name] = publication{uid: node.UID, gen: gen + 1, slices: len(want), at: time.Now()}
	c.mu.Unlock()
	if len(want) > 0 {
		c.trace("node %s: DRA pool at generation %d, %d slices", node.Name, gen+1, len(want))
	}
	return false, nil
}

// publication is a node's pool as this controller last published it:
// for which node, its generation, how many slices it has (0: the driver
// stopped) and when.
type publication struct {
	uid    types.UID
	gen    int64
	slices int
	at     time.Time
}

// staleFor bounds how long the slice cache may lag a publication before
// the publisher believes it instead.
const staleFor = 10 * time.Second

// samePool reports whether the published slices of one generation hold
// exactly want's devices and counters, slice by slice in order.
func samePool(have []*resourcev1.ResourceSlice, want []resourcev1.ResourceSliceSpec) bool {
	if len(have) != len(want) {
		return false
	}
	slices.SortFunc(have, func(a, b *resourcev1.ResourceSlice) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	for i, s := range have {
		w := want[i]
		if s.Spec.Pool.Generation != have[0].Spec.Pool.Generation || s.Spec.Pool.ResourceSliceCount != w.Pool.ResourceSliceCount ||
			!apiequality.Semantic.DeepEqual(withoutTaintTimes(s.Spec.Devices), w.Devices) || !apiequality.Semantic.DeepEqual(s.Spec.SharedCounters, w.SharedCounters) {
			return false
		}
	}
	return true
}

// withoutTaintTimes drops the timeAdded the apiserver fills in on device
// taints, which the wanted devices never carry.
func withoutTaintTimes(devs []resourcev1.Device) []resourcev1.Device {
	out := make([]resourcev1.Device, len(devs))
	for i, d := range devs {
		out[i] = *d.DeepCopy()
		for j := range out[i].Taints {
			out[i].Taints[j].TimeAdded = nil
		}
	}
	return out
}
