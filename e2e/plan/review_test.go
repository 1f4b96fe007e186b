// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpupool/gpupool/e2e/candidate"
	"github.com/gpupool/gpupool/e2e/fleet"
)

// The reference gives a reviewer nothing to say; a newcomer's candidate
// as the seed wrote it (a policy without its binding, a time-slicing
// ConfigMap whose only key is "any", no tenant namespaces) gets each cause
// said once, in words.
func TestReview(t *testing.T) {
	// The checkout's own files: the built-in ones may be unpacked into
	// another test's temporary cache, gone by now.
	pl, err := Prepare("../../manifests/fleets/reference.yaml", "../../manifests/candidates/reference")
	require.NoError(t, err)
	assert.Empty(t, Review(pl), "the reference")

	pl.Candidate.Objects = slices.DeleteFunc(pl.Candidate.Objects, func(o candidate.Object) bool {
		return o.GetKind() == "Namespace" || (o.GetKind() == "ValidatingAdmissionPolicyBinding" && o.GetName() != "gpu-pool-contract")
	})
	pl.Candidate.Objects = slices.DeleteFunc(pl.Candidate.Objects, func(o candidate.Object) bool {
		return o.GetKind() == "ValidatingAdmissionPolicy" && o.GetName() == "gpu-pool-contract"
	})
	for _, o := range pl.Candidate.Objects {
		if o.GetKind() == "NodePool" && o.GetName() == "gpu-h100-burst" {
			o.SetName("gpu-burst") // renamed: the fleet's pool names another
		}
	}
	any := pl.Stack.DevicePlugin[pl.Stack.Policy.DevicePluginDefault]
	for k := range pl.Stack.DevicePlugin {
		delete(pl.Stack.DevicePlugin, k)
	}
	pl.Stack.DevicePlugin["any"] = any
	got := strings.Join(Review(pl), "\n")
	for _, want := range []string{
		"no ValidatingAdmissionPolicyBinding names this policy: it is never enforced",
		`names policy "gpu-pool-contract", which the candidate does not hold`,
		`pool gpu-l4-shared: its nodes select device-plugin config "l4-timeslice-4" (nvidia.com/device-plugin.config), and the device plugin will not start there (specified config l4-timeslice-4 does not exist`,
		"data[any]: no pool of fleet reference selects this key",
		"pool gpu-l4-shared, trust domain tenant-a: no namespace of the candidate is labelled trust=tenant-a",
		"autoscaled pool gpu-h100-burst is scaled by NodePool gpu-h100-burst, which the candidate lacks: its pods stay Pending",
		"80-autoscaling.yaml (document 2, NodePool gpu-burst): no autoscaled pool of fleet",
	} {
		assert.Contains(t, got, want)
	}
}

// The mutant that makes the burst pool MIG gets the scale-from-zero
// gotcha said before any cluster: its pods ask a MIG slice, its machine
// lists only physical GPUs.
func TestReviewSaysAPoolCannotScaleFromZero(t *testing.T) {
	pl, err := Prepare("", "../../manifests/candidates/broken-burst-pool-mig-from-zero")
	require.NoError(t, err)
	got := strings.Join(Review(pl), "\n")
	assert.Contains(t, got, "autoscaled pool gpu-h100-burst's pods ask nvidia.com/mig-1g.10gb, which its machine sim-h100-80gb-x8 does not list (it lists nvidia.com/gpu 8): an autoscaler knows only what an instance type lists")
}

// The reference's MIG pool scales from zero through its NodeOverlay; with
// Karpenter's gate off, its default, the overlay applies nowhere, and the
// review says so before any cluster.
func TestReviewSaysANodeOverlayIsGatedOff(t *testing.T) {
	pl, err := Prepare("../../manifests/fleets/reference.yaml", "../../manifests/candidates/reference")
	require.NoError(t, err)
	pl.Candidate.Meta.Spec.Autoscaler = nil
	got := strings.Join(Review(pl), "\n")
	assert.Contains(t, got, "autoscaled pool gpu-a100-mig-burst's pods ask nvidia.com/mig-1g.5gb, which NodeOverlay a100-mig-all-1g-5gb adds to its machine sim-a100-40gb-x8, but the candidate runs Karpenter with its NodeOverlay feature gate off")
}

// A DRA pool as an autoscaled pool: Karpenter plans its claims on the
// whole GPUs the cloud lists, and the review says so, before any cluster,
// for a pool whose driver publishes other devices.
func TestReviewSaysWhereKarpenterPlansOtherDevices(t *testing.T) {
	pl, err := Prepare("../../manifests/fleets/reference.yaml", "../../manifests/candidates/reference")
	require.NoError(t, err)
	pl.Fleet.Spec.AutoscaledPools[0].DRA = &fleet.DRA{Mode: "gpu", DeviceClasses: []string{"h100.gpu.nvidia.com"}}
	assert.NotContains(t, strings.Join(Review(pl), "\n"), "gpu-h100-burst", "whole GPUs are what Karpenter plans on")
	pl.Fleet.Spec.AutoscaledPools[0].DRA = &fleet.DRA{Mode: "static-mig", DeviceClasses: []string{"mig.nvidia.com"}}
	assert.Contains(t, strings.Join(Review(pl), "\n"), "autoscaled pool gpu-h100-burst is served through DRA as mode static-mig, but Karpenter v1.14.1 plans a pod's claims on the whole GPUs")
}
