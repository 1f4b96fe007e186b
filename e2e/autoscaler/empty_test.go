// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func claim(name, providerID string, isRegistered bool) *unstructured.Unstructured {
	c := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": Group + "/v1", "kind": "NodeClaim",
		"metadata": map[string]any{"name": name, "labels": map[string]any{LabelNodePool: "np"}},
		"status":   map[string]any{},
	}}
	if providerID != "" {
		_ = unstructured.SetNestedField(c.Object, providerID, "status", "providerID")
	}
	if isRegistered {
		_ = unstructured.SetNestedSlice(c.Object, []any{map[string]any{"type": "Registered", "status": "True"}}, "status", "conditions")
	}
	return c
}

func poolNode(name, providerID string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelNodePool: "np"}},
		Spec: corev1.NodeSpec{ProviderID: providerID}}
}

// Only a Registered NodeClaim is deleted: Karpenter then removes its
// node, while an unregistered one's node would leak (autoscaler-facts §6.8).
func TestEmptyDeletesOnlyRegisteredNodeClaims(t *testing.T) {
	e := emptyStep([]unstructured.Unstructured{*claim("a", "kwok://a", true), *claim("b", "kwok://b", false)},
		[]corev1.Node{poolNode("a", "kwok://a")})
	assert.Equal(t, []string{"a"}, e.deleteClaims)
	assert.Empty(t, e.deleteNodes)
	assert.Contains(t, e.seen, "waiting to register before deletion: b")
}

// A node whose provider ID no NodeClaim has is the simulated cloud's
// leak, and goes; but not while a claim is launching, whose young node
// it may be.
func TestEmptyDeletesLeakedNodesButNotALaunchingClaimsNode(t *testing.T) {
	nodes := []corev1.Node{poolNode("a", "kwok://a"), poolNode("leaked", "kwok://gone")}
	e := emptyStep([]unstructured.Unstructured{*claim("a", "kwok://a", false)}, nodes)
	assert.Equal(t, []string{"leaked"}, e.deleteNodes)

	e = emptyStep([]unstructured.Unstructured{*claim("a", "kwok://a", false), *claim("young", "", false)}, nodes)
	assert.Empty(t, e.deleteNodes, "a claim without a provider ID may own the node")
}

// Against fake clients: a NodeClaim Karpenter launched after the first
// deletion (autoscaler-facts §6.7) is deleted too once it registers, and
// the run ends with nothing of the NodePool left.
func TestEmptyEndsWithNothingLeft(t *testing.T) {
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{NodeClaimResource: "NodeClaimList"}, claim("a", "kwok://a", true), claim("late", "kwok://late", false))
	n1, n2 := poolNode("a", "kwok://a"), poolNode("late", "kwok://late")
	cs := fake.NewClientset(&n1, &n2)
	ctx := context.Background()

	// The late claim registers at Empty's third look; it must not be
	// deleted before.
	lists, deletedAt := 0, 0
	dyn.PrependReactor("list", "nodeclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
		if lists++; lists == 3 {
			require.NoError(t, dyn.Tracker().Update(NodeClaimResource, claim("late", "kwok://late", true), ""))
		}
		return false, nil, nil
	})
	dyn.PrependReactor("delete", "nodeclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.DeleteAction).GetName() == "late" {
			deletedAt = lists
		}
		return false, nil, nil
	})
	require.NoError(t, Empty(ctx, cs, dyn, "np", 10*time.Second))
	claims, err := dyn.Resource(NodeClaimResource).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, claims.Items)
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, nodes.Items)
	assert.Equal(t, 3, deletedAt, "the late claim deleted at the look that saw it registered")
}
