// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaler

import (
	"encoding/json"
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

// The instance-types file is written in the provider's own field names
// (autoscaler-facts §3.2): an offering's capacity type and zone are
// requirements. Written as {capacityType, zone, price}, they were dropped
// and only the price read (Go's JSON matches names case-insensitively), so
// a NodePool that asks for on-demand capacity, as most do, found no
// machine at all.
func TestInstanceTypeFileFormat(t *testing.T) {
	it, err := InstanceTypeFor(fleet.Pool{Name: "gpu-h100-burst", SKU: "h100-80gb", GPUsPerNode: 8})
	require.NoError(t, err)
	b, err := json.Marshal(it.Offerings)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"Price": 8, "Available": true, "Requirements": [
		{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
		{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["sim-zone-a"]}]}]`, string(b))
}
