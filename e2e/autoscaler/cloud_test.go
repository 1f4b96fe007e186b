// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpupool/gpupool/e2e/fleet"
)

func TestCRDsAreKarpentersFour(t *testing.T) {
	crds, err := CRDs()
	require.NoError(t, err)
	var names []string
	for _, c := range crds {
		names = append(names, c.GetName())
	}
	assert.Equal(t, []string{"nodepools.karpenter.sh", "nodeclaims.karpenter.sh", "nodeoverlays.karpenter.sh", "kwoknodeclasses.karpenter.kwok.sh"}, names)
}

// A cloud sells physical GPUs: the instance type of a MIG or time-sliced
// pool offers nvidia.com/gpu, never what the device plugin makes of it.
func TestInstanceTypeOffersPhysicalGPUs(t *testing.T) {
	it, err := InstanceTypeFor(fleet.Pool{Name: "gpu-a100-mig", SKU: "a100-40gb", GPUsPerNode: 8, Sharing: &fleet.Sharing{Mode: fleet.ModeMIG}})
	require.NoError(t, err)
	assert.Equal(t, "sim-a100-40gb-x8", it.Name)
	assert.Equal(t, map[string]string{"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}, it.Resources)

	_, err = InstanceTypeFor(fleet.Pool{Name: "p", SKU: "no-such-gpu", GPUsPerNode: 1})
	assert.ErrorContains(t, err, `pool p: SKU "no-such-gpu" is not in the catalogue`)
	_, err = InstanceTypeFor(fleet.Pool{Name: "p", SKU: "a100-40gb"})
	assert.ErrorContains(t, err, "gpusPerNode must be positive")
}
