// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/wait"
	"github.com/gpupool/gpupool/fakegpu"
)

// RealNodeTimeout bounds the waits on a real kubelet: it re-reads device
// plugins on its own schedule, seconds rather than milliseconds.
const RealNodeTimeout = 90 * time.Second

// EnlistTimeout bounds the wait for a real kubelet to advertise a new
// device plugin's resource: registration is immediate and the next node
// status update carries it (kubelet-facts §6; every second on the kind
// node gpupool makes, 10 s by default). 30 s ran out once,
// in make test with the mutants beside the kind path on two cores, the
// kind apiserver's answers themselves past their deadline.
const EnlistTimeout = 60 * time.Second

// RealNode returns the first node with a real kubelet. A cluster without
// one fails the check: checks that need it are labelled with the provider
// that has one, and runs on other providers skip them by that label.
func (r *Run) RealNode(ctx context.Context, t *testing.T) string {
	t.Helper()
	nodes, err := r.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if _, fake := n.Annotations[fleet.AnnotationKwokNode]; !fake {
			return n.Name
		}
	}
	t.Fatal("the cluster has no node with a real kubelet (only KWOK nodes): this check needs the kind provider")
	return ""
}

// EnlistRealNode makes the real node a member of pool p (of trust domain
// d, if the pool is split), as the fleet makes its KWOK nodes: the pool's
// labels and taints, and its GPU inventory, marked as served by a real
// kubelet. It waits until the kubelet advertises resource (on a DRA pool:
// until the DRA kubelet plugin publishes devices serving it), whatever
// count the candidate's config gives (checks judge the count, not this),
// and returns that count and a function that takes the node out again.
func (r *Run) EnlistRealNode(ctx context.Context, node string, p fleet.Pool, d *fleet.TrustDomain, resource string) (advertised int64, restore func(context.Context) error, err error) {
	spec := fleet.NodeSpec{Pool: p, TrustDomain: d, Name: node}
	shape, err := spec.Node()
	if err != nil {
		return 0, nil, err
	}
	before, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return 0, nil, err
	}
	labels, annotations := map[string]any{}, map[string]any{}
	for k, v := range shape.Labels {
		if k == "kubernetes.io/hostname" || k == "type" {
			continue // the node's own, and kwok's
		}
		labels[k] = v
	}
	for k, v := range shape.Annotations {
		if k != fleet.AnnotationKwokNode {
			annotations[k] = v
		}
	}
	annotations[fakegpu.AnnotationKubelet] = "real"
	taints := append(append([]corev1.Taint(nil), before.Spec.Taints...), shape.Spec.Taints...)
	if err := r.patchNode(ctx, node, map[string]any{
		"metadata": map[string]any{"labels": labels, "annotations": annotations},
		"spec":     map[string]any{"taints": taints},
	}); err != nil {
		return 0, nil, fmt.Errorf("enlisting node %s in pool %s: %w", node, p.Name, err)
	}
	restore = func(ctx context.Context) error {
		// Only what enlisting set goes back: the GPU stack's labels stay,
		// as they would on a node leaving a pool, but a label enlisting
		// changed (a DRA pool turns the device plugin off) gets its value
		// back.
		for k := range labels {
			if v, had := before.Labels[k]; had {
				labels[k] = v
			} else {
				labels[k] = nil
			}
		}
		for k := range annotations {
			if _, had := before.Annotations[k]; !had {
				annotations[k] = nil
			}
		}
		return r.patchNode(ctx, node, map[string]any{
			"metadata": map[string]any{"labels": labels, "annotations": annotations},
			"spec":     map[string]any{"taints": before.Spec.Taints},
		})
	}
	if p.DRA != nil {
		// The DRA kubelet plugin publishes the node's devices. Where the
		// pool turns the device plugin off, the kubelet must also have
		// dropped what a device plugin registered there before: until it
		// does, the scheduler gives the resource through the device
		// plugin's path and the kubelet rejects the pod (seen on kind:
		// UnexpectedAdmissionError, "no healthy devices present").
		pluginOff := shape.Labels[fakegpu.LabelDeployDevicePlugin] == "false"
		what := fmt.Sprintf("the DRA kubelet plugin of %s to publish devices serving %s", node, resource)
		if pluginOff {
			what += ", and its kubelet to offer none through a device plugin"
		}
		// The kubelet notices a plugin gone within RealNodeTimeout.
		err = wait.For(ctx, what, RealNodeTimeout, func(ctx context.Context) (bool, string, error) {
			devs, err := r.DRADevices(ctx, node)
			if err != nil {
				return false, err.Error(), nil
			}
			advertised = int64(fakegpu.DRADevicesFor(devs, resource))
			n, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			q := n.Status.Allocatable[corev1.ResourceName(resource)]
			return advertised > 0 && (!pluginOff || q.IsZero()), fmt.Sprintf("%d devices published, %d serving %s; allocatable %s=%d", len(devs), advertised, resource, resource, q.Value()), nil
		})
		if err != nil {
			_ = restore(ctx)
			return 0, nil, err
		}
		return advertised, restore, nil
	}
	never := r.pluginNeverServes(before, labels, annotations)
	err = wait.For(ctx, fmt.Sprintf("the kubelet of %s to advertise %s", node, resource), EnlistTimeout, func(ctx context.Context) (bool, string, error) {
		n, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		q := n.Status.Allocatable[corev1.ResourceName(resource)]
		advertised = q.Value()
		seen := fmt.Sprintf("allocatable %s=%d", resource, advertised)
		// Waiting out the budget would only repeat what the cluster shows
		// once the candidate's config says it lasts.
		if down := n.Annotations[fakegpu.AnnotationPluginError]; advertised == 0 && never != "" && down != "" {
			return false, seen, fmt.Errorf("it never will: no device plugin serves the node (%s: %q), and under the candidate's GPU Operator config none serves a node of pool %s (%s)",
				fakegpu.AnnotationPluginError, down, p.Name, never)
		}
		return advertised > 0, seen, nil
	})
	if err != nil {
		_ = restore(ctx)
		return 0, nil, err
	}
	return advertised, restore, nil
}

// WaitRealNodeAdvertises waits until the node's allocatable holds want
// (a count per resource).
func (r *Run) WaitRealNodeAdvertises(ctx context.Context, node string, want map[string]int64) error {
	return wait.For(ctx, fmt.Sprintf("the kubelet of %s to advertise %v", node, want), RealNodeTimeout, func(ctx context.Context) (bool, string, error) {
		n, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got := map[string]int64{}
		for name, q := range n.Status.Allocatable {
			got[string(name)] = q.Value()
		}
		for name, v := range want {
			if got[name] != v {
				return false, fmt.Sprintf("allocatable %s=%d", name, got[name]), nil
			}
		}
		return true, "", nil
	})
}

func (r *Run) patchNode(ctx context.Context, node string, patch map[string]any) error {
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = r.Client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, b, metav1.PatchOptions{})
	return err
}

// pluginNeverServes says why, under the candidate's GPU Operator config,
// no device plugin serves the node once enlisting set labels and
// annotations on it ("" when one does, or the run holds no config): the
// settled outcome the simulated stack computes for such a node, from the
// plan's files by the same pure function the node's plugin runs. A
// passing state (a plugin pod down, a MIG change under way) is not in it.
func (r *Run) pluginNeverServes(before *corev1.Node, labels, annotations map[string]any) string {
	if r.Plan == nil || r.Stack == nil {
		return ""
	}
	merged := func(have map[string]string, set map[string]any) map[string]string {
		out := maps.Clone(have)
		if out == nil {
			out = map[string]string{}
		}
		for k, v := range set {
			if s, ok := v.(string); ok {
				out[k] = s
			}
		}
		return out
	}
	inv, isGPU, err := fakegpu.Inventory(merged(before.Annotations, annotations))
	if !isGPU || err != nil {
		return ""
	}
	if res := r.Stack.Node(merged(before.Labels, labels), inv); res.Err != nil {
		return res.Err.Error()
	}
	return ""
}
