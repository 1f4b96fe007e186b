// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaler

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The policy and its binding decode, bind each other, and match node
// creation only: a node the stack publishes to later is an update.
func TestBornWithoutGPUsPolicy(t *testing.T) {
	objs, err := BornWithoutGPUs()
	require.NoError(t, err)
	require.Len(t, objs, 2)
	require.Equal(t, "MutatingAdmissionPolicy", objs[0].GetKind())
	require.Equal(t, "MutatingAdmissionPolicyBinding", objs[1].GetKind())
	policy, _, _ := unstructured.NestedString(objs[1].Object, "spec", "policyName")
	require.Equal(t, objs[0].GetName(), policy)
	rules, _, _ := unstructured.NestedSlice(objs[0].Object, "spec", "matchConstraints", "resourceRules")
	require.Len(t, rules, 1)
	require.Equal(t, []any{"CREATE"}, rules[0].(map[string]any)["operations"])
}

// The probe carries what the policy takes out, and only that is named.
func TestBornWithGPUs(t *testing.T) {
	probe := BornProbe()
	require.Equal(t, "nvidia.com/gpu, nvidia.com/gpu", BornWithGPUs(probe))
	probe.Status.Capacity, probe.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: probe.Status.Capacity["nvidia.com/gpu"]}, nil
	require.Empty(t, BornWithGPUs(probe))
}
