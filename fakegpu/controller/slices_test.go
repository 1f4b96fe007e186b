// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpupool/gpupool/fakegpu"
)

// The publisher leaves an unchanged pool alone, whatever the apiserver
// added (a taint's timeAdded), and republishes on any device change or a
// half-published pool.
func TestSamePool(t *testing.T) {
	sku := fakegpu.Catalog["h100-80gb"]
	want := func(xids map[int]int) []resourcev1.ResourceSliceSpec {
		s, err := fakegpu.DRASlices("n", fakegpu.NodeInventory{SKU: sku, Count: 2}, nil, fakegpu.DRAConfig{Mode: fakegpu.DRAWholeGPU}, 0, xids)
		require.NoError(t, err)
		return s
	}
	published := func(specs []resourcev1.ResourceSliceSpec, gen int64) []*resourcev1.ResourceSlice {
		var out []*resourcev1.ResourceSlice
		for i, s := range specs {
			s := *s.DeepCopy()
			s.Pool.Generation = gen
			for j := range s.Devices {
				for k := range s.Devices[j].Taints {
					s.Devices[j].Taints[k].TimeAdded = new(metav1.Now())
				}
			}
			out = append(out, &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: fakegpu.DRASliceName("n", i) + "x"}, Spec: s})
		}
		return out
	}
	tainted := want(map[int]int{1: 79})
	assert.True(t, samePool(published(tainted, 4), tainted), "timeAdded is the apiserver's")
	assert.False(t, samePool(published(want(nil), 4), tainted), "a new taint republishes")
	assert.False(t, samePool(nil, tainted))
	assert.True(t, samePool(nil, nil))
	dyn, err := fakegpu.DRASlices("n", fakegpu.NodeInventory{SKU: sku, Count: 2}, nil, fakegpu.DRAConfig{Mode: fakegpu.DRADynamicMIG}, 0, nil)
	require.NoError(t, err)
	assert.False(t, samePool(published(dyn, 1)[:2], dyn), "a pool missing a slice is republished")
	assert.True(t, samePool(published(dyn, 1), dyn))
}
