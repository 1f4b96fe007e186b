// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaler

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/gpupool/gpupool/e2e/wait"
)

// NodeClaimResource is Karpenter's NodeClaim API.
var NodeClaimResource = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "nodeclaims"}

// Empty takes a NodePool back to zero nodes through the running
// Karpenter: it deletes the NodePool's NodeClaims, which Karpenter drains
// and removes with their nodes, and waits until no node of the NodePool
// is left. A check that counts the nodes a NodePool makes starts from
// there, not from a node an earlier check left for consolidation.
func Empty(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, nodePool string, timeout time.Duration) error {
	sel := metav1.ListOptions{LabelSelector: LabelNodePool + "=" + nodePool}
	if err := dyn.Resource(NodeClaimResource).DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		return fmt.Errorf("deleting the NodeClaims of NodePool %s: %w", nodePool, err)
	}
	return wait.For(ctx, "NodePool "+nodePool+" to have no node left", timeout, func(ctx context.Context) (bool, string, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, sel)
		if err != nil {
			return false, "", err
		}
		var names []string
		for _, n := range nodes.Items {
			names = append(names, n.Name)
		}
		return len(names) == 0, "nodes left: " + strings.Join(names, ", "), nil
	})
}
