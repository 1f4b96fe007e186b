// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaler

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/gpupool/gpupool/e2e/wait"
)

// NodeClaimResource is Karpenter's NodeClaim API.
var NodeClaimResource = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "nodeclaims"}

// Empty takes a NodePool back to zero nodes through the running
// Karpenter and waits until no NodeClaim and no node of it is left. No
// check calls it since the checks stopped emptying the pool between them
// (a removal takes at least 5 s, autoscaler-facts §6.9); it is kept for
// removing what Karpenter made from a cluster gpupool did not make, where
// the cluster is not removed with the run (#28).
//
// It deletes a NodeClaim only once it is Registered, since Karpenter
// then drains and removes its node, and deleting it sooner leaks the node
// in the simulated cloud (autoscaler-facts §6.8); it deletes again, on
// every poll, the NodeClaims Karpenter launches for the pods of a node
// being removed (§6.7); and it deletes a node whose provider ID no
// NodeClaim has, which is that leak.
func Empty(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, nodePool string, timeout time.Duration) error {
	sel := metav1.ListOptions{LabelSelector: LabelNodePool + "=" + nodePool}
	return wait.For(ctx, "NodePool "+nodePool+" to have no NodeClaim and no node left", timeout, func(ctx context.Context) (bool, string, error) {
		// Nodes before claims: a node listed first cannot belong to a
		// claim made after the claims were listed.
		nodes, err := cs.CoreV1().Nodes().List(ctx, sel)
		if err != nil {
			return false, "", err
		}
		claims, err := dyn.Resource(NodeClaimResource).List(ctx, sel)
		if err != nil {
			return false, "", err
		}
		step := emptyStep(claims.Items, nodes.Items)
		for _, name := range step.deleteClaims {
			if err := dyn.Resource(NodeClaimResource).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return false, "", fmt.Errorf("deleting NodeClaim %s: %w", name, err)
			}
		}
		for _, name := range step.deleteNodes {
			if err := cs.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return false, "", fmt.Errorf("deleting node %s, which no NodeClaim has (autoscaler-facts §6.8): %w", name, err)
			}
		}
		return len(claims.Items) == 0 && len(nodes.Items) == 0, step.seen, nil
	})
}

// emptied is one poll's decision in Empty.
type emptied struct {
	deleteClaims []string // Registered, not yet deleted
	deleteNodes  []string // leaked: a provider ID no NodeClaim has
	seen         string
}

// emptyStep decides, from the NodePool's nodes and NodeClaims as listed
// (nodes first), what Empty deletes next.
func emptyStep(claims []unstructured.Unstructured, nodes []corev1.Node) emptied {
	var e emptied
	var waiting, going []string
	owned := map[string]bool{}
	launching := false
	for i := range claims {
		c := &claims[i]
		id, _, _ := unstructured.NestedString(c.Object, "status", "providerID")
		if id == "" {
			launching = true
		}
		owned[id] = true
		switch {
		case c.GetDeletionTimestamp() != nil:
			going = append(going, c.GetName())
		case registered(c):
			e.deleteClaims = append(e.deleteClaims, c.GetName())
		default:
			waiting = append(waiting, c.GetName())
		}
	}
	var left []string
	for _, n := range nodes {
		left = append(left, n.Name)
		// While a claim has no provider ID yet, a young node may be its
		// (the provider makes the node before the launch records the ID).
		if n.DeletionTimestamp == nil && n.Spec.ProviderID != "" && !owned[n.Spec.ProviderID] && !launching {
			e.deleteNodes = append(e.deleteNodes, n.Name)
		}
	}
	sort.Strings(e.deleteClaims)
	sort.Strings(e.deleteNodes)
	e.seen = fmt.Sprintf("NodeClaims deleted now: %s; being removed: %s; waiting to register before deletion: %s; nodes left: %s",
		orNone(append([]string(nil), e.deleteClaims...)), orNone(going), orNone(waiting), orNone(left))
	return e
}

func registered(c *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
	for _, x := range conds {
		m, ok := x.(map[string]any)
		if ok && m["type"] == "Registered" && m["status"] == "True" {
			return true
		}
	}
	return false
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}
