// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpupool/gpupool/fakegpu"
)

func configHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

// reconcileNode makes one GPU node publish what the simulated stack says.
func (c *Controller) reconcileNode(ctx context.Context, name string) (time.Duration, error) {
	obj, exists, err := c.nodes.GetStore().GetByKey(name)
	if err != nil || !exists {
		return 0, err
	}
	node := obj.(*corev1.Node)
	inv, isGPU, err := fakegpu.Inventory(node.Annotations)
	if !isGPU {
		return 0, nil
	}
	if err != nil {
		c.recorder.Eventf(node, corev1.EventTypeWarning, "InvalidGPUInventory", "fakegpu: %v", err)
		return 0, nil
	}
	stack, key, stackErr := c.currentStack()
	if stackErr != nil {
		stack = &fakegpu.Stack{}
	}
	d := stack.Desired(inv, fakegpu.NodeObservation{Name: node.Name, Labels: node.Labels, Annotations: node.Annotations, Capacity: nvidiaCapacity(node), Now: time.Now()}, c.opt.MIGReconfigureDelay)
	if stackErr != nil {
		d.PluginDown = "the GPU Operator config is invalid: " + stackErr.Error()
		d.Annotations[fakegpu.AnnotationPluginError] = d.PluginDown
		for k := range d.Allocatable {
			d.Allocatable[k] = 0
		}
	}
	if d.Labels[fakegpu.LabelMIGConfigState] != fakegpu.MIGStatePending {
		d.Annotations[fakegpu.AnnotationObservedConfig] = configHash(key)
	}

	// The repartition ends the pods on the old layout's devices before the
	// new layout is published, as the MIG manager applies the layout while
	// the device plugin is down and restarts it after (stack-facts §4
	// step 4): once published, a pod may start on the new devices, and
	// failing it then would charge it for a change it never saw (seen on
	// kind, where this pass is slower than the scheduler).
	if d.LayoutChanged && d.FromLayout != "" {
		if err := c.failPodsOnRepartition(ctx, node, d.FromLayout, d.ToLayout); err != nil {
			return 0, err
		}
	}

	// Metadata: labels and annotations, only what differs.
	labels, annotations := map[string]any{}, map[string]any{}
	for k, v := range d.Labels {
		if node.Labels[k] != v {
			labels[k] = v
		}
	}
	for _, k := range d.Remove {
		labels[k] = nil
	}
	for k, v := range d.Annotations {
		cur, has := node.Annotations[k]
		switch {
		case v == "" && has:
			annotations[k] = nil
		case v != "" && cur != v:
			annotations[k] = v
		}
	}
	if len(labels)+len(annotations) > 0 {
		meta := map[string]any{}
		if len(labels) > 0 {
			meta["labels"] = labels
		}
		if len(annotations) > 0 {
			meta["annotations"] = annotations
		}
		if err := mergePatch(ctx, c.client, name, map[string]any{"metadata": meta}); err != nil {
			return 0, ignoreNotFound(err)
		}
	}

	// Status: the nvidia.com resources, only what differs. A real kubelet
	// publishes its own, from the device plugin.
	capacity := resourceDiff(node.Status.Capacity, d.Capacity)
	allocatable := resourceDiff(node.Status.Allocatable, d.Allocatable)
	if len(capacity)+len(allocatable) > 0 && !fakegpu.RealKubelet(node.Annotations) {
		status := map[string]any{}
		if len(capacity) > 0 {
			status["capacity"] = capacity
		}
		if len(allocatable) > 0 {
			status["allocatable"] = allocatable
		}
		if err := mergePatch(ctx, c.client, name, map[string]any{"status": status}, "status"); err != nil {
			return 0, ignoreNotFound(err)
		}
	}

	// NVIDIA's DRA driver: its pool, or none (also when it stopped). On a
	// node with a real kubelet the DRA kubelet plugin publishes its own
	// (cmd/fake-dra-plugin).
	if d.DRAErr != "" && d.DRAErr != node.Annotations[fakegpu.AnnotationDRAError] {
		c.recorder.Eventf(node, corev1.EventTypeWarning, "DRADriverDown", "nvidia DRA driver publishes nothing: %s", d.DRAErr)
	}
	if !fakegpu.RealKubelet(node.Annotations) {
		if stale, err := c.reconcileSlices(ctx, node, d.DRA); err != nil {
			return 0, err
		} else if stale {
			// The informer has not shown the last generation yet.
			return 100 * time.Millisecond, nil
		}
	}

	// Events say why a node's GPUs changed.
	before := node.Annotations[fakegpu.AnnotationPluginError]
	switch {
	case d.PluginDown != "" && d.PluginDown != before:
		c.recorder.Eventf(node, corev1.EventTypeWarning, "DevicePluginDown", "nvidia device plugin not serving: %s; allocatable GPUs set to 0", d.PluginDown)
	case d.PluginDown == "" && before != "":
		c.recorder.Event(node, corev1.EventTypeNormal, "DevicePluginUp", "nvidia device plugin serving again")
	}
	if bad := d.Annotations[fakegpu.AnnotationUnhealthyDevices]; bad != node.Annotations[fakegpu.AnnotationUnhealthyDevices] && bad != "" {
		c.recorder.Eventf(node, corev1.EventTypeWarning, "GPUUnhealthy", "nvidia device plugin reports devices unhealthy after Xid (%s): %s", node.Annotations[fakegpu.AnnotationXid], bad)
	}
	if st := d.Labels[fakegpu.LabelMIGConfigState]; st != node.Labels[fakegpu.LabelMIGConfigState] {
		switch st {
		case fakegpu.MIGStatePending:
			c.recorder.Eventf(node, corev1.EventTypeNormal, "MIGReconfiguring", "applying MIG config %s; GPU operands paused", node.Labels[fakegpu.LabelMIGConfig])
		case fakegpu.MIGStateFailed:
			c.recorder.Eventf(node, corev1.EventTypeWarning, "MIGConfigFailed", "MIG config %s cannot be applied to %s", node.Labels[fakegpu.LabelMIGConfig], inv.SKU.Product)
		}
	}
	if d.LayoutChanged {
		c.recorder.Eventf(node, corev1.EventTypeNormal, "MIGConfigApplied", "MIG config changed from %q to %q", d.FromLayout, d.ToLayout)
	}
	return d.RequeueAfter, nil
}

// resourceDiff returns the merge-patch entries that turn the node's
// nvidia.com resources into want (nil deletes a resource).
func resourceDiff(have corev1.ResourceList, want map[string]int64) map[string]any {
	out := map[string]any{}
	for name, q := range have {
		n := string(name)
		if !strings.HasPrefix(n, fakegpu.LabelPrefix) {
			continue
		}
		if w, ok := want[n]; !ok {
			out[n] = nil
		} else if q.Value() != w {
			out[n] = resource.NewQuantity(w, resource.DecimalSI).String()
		}
	}
	for n, w := range want {
		if _, ok := have[corev1.ResourceName(n)]; !ok {
			out[n] = resource.NewQuantity(w, resource.DecimalSI).String()
		}
	}
	return out
}
