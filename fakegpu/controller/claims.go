// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpupool/gpupool/fakegpu"
)

// claimGrace is how long a pod's claims may look unallocated or
// unreserved in this controller's cache before the simulated kubelet
// believes it: the scheduler writes both before it binds, so a claim
// that still looks so after this is so.
const claimGrace = 5 * time.Second

// errClaimNotSeen: the cache does not show the claim as the scheduler left
// it yet; try again shortly.
var errClaimNotSeen = errors.New("claim not in the cache yet")

// podClaimNames lists the ResourceClaims a pod uses: those its
// spec.resourceClaims name or the controller generated for it, and the
// scheduler's extended-resource claim.
func podClaimNames(p *corev1.Pod) []string {
	var out []string
	generated := map[string]string{}
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			generated[s.Name] = *s.ResourceClaimName
		}
	}
	for _, rc := range p.Spec.ResourceClaims {
		switch {
		case rc.ResourceClaimName != nil:
			out = append(out, *rc.ResourceClaimName)
		case generated[rc.Name] != "":
			out = append(out, generated[rc.Name])
		default:
			out = append(out, "") // not generated yet
		}
	}
	if e := p.Status.ExtendedResourceClaimStatus; e != nil {
		out = append(out, e.ResourceClaimName)
	}
	return out
}

// draServedLimits are the pod's extended resources the scheduler mapped
// to its DRA claim, by container: the kubelet leaves them to DRA and its
// device manager skips them (dra-facts §3 "Kubelet").
func draServedLimits(p *corev1.Pod) map[string]map[string]bool {
	e := p.Status.ExtendedResourceClaimStatus
	if e == nil {
		return nil
	}
	out := map[string]map[string]bool{}
	for _, m := range e.RequestMappings {
		if out[m.ContainerName] == nil {
			out[m.ContainerName] = map[string]bool{}
		}
		out[m.ContainerName][m.ResourceName] = true
	}
	return out
}

// prepareClaims does what the kubelet and NVIDIA's DRA plugin do before a
// pod with claims starts, on any node (kubelet-facts §5): every claim
// allocated and reserved for the pod, its driver's plugin on the node,
// every device of the driver still published by the node (draOn: the
// node runs the driver). It returns the CDI devices to inject.
func (c *Controller) prepareClaims(node *corev1.Node, draOn bool, p *corev1.Pod) ([]string, error) {
	published := map[string]bool{}
	objs, err := c.slices.GetIndexer().ByIndex(sliceIndex, node.Name)
	if err != nil {
		return nil, err
	}
	var gen int64
	for _, o := range objs {
		gen = max(gen, o.(*resourcev1.ResourceSlice).Spec.Pool.Generation)
	}
	for _, o := range objs {
		// Consumers use only the pool's newest generation (dra-facts §1).
		if s := o.(*resourcev1.ResourceSlice); s.Spec.Pool.Generation == gen {
			for _, d := range s.Spec.Devices {
				published[d.Name] = true
			}
		}
	}
	var cdi []string
	for _, name := range podClaimNames(p) {
		if name == "" {
			return nil, errClaimNotSeen
		}
		obj, ok, err := c.claims.GetStore().GetByKey(p.Namespace + "/" + name)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errClaimNotSeen
		}
		claim := obj.(*resourcev1.ResourceClaim)
		if claim.Status.Allocation == nil || !slices.ContainsFunc(claim.Status.ReservedFor, func(r resourcev1.ResourceClaimConsumerReference) bool { return r.UID == p.UID }) {
			return nil, fmt.Errorf("%w: %w", errClaimNotSeen, fakegpu.DRANotReservedError(p.Name, string(p.UID), claim.Name, string(claim.UID)))
		}
		allocated := fakegpu.DRAAllocatedOf(claim)
		if !draOn && len(allocated) > 0 {
			return nil, fakegpu.DRADriverNotRegisteredError(allocated[0].Driver)
		}
		prepared, err := fakegpu.DRAPrepare(node.Name, published, string(claim.UID), allocated)
		if err != nil {
			return nil, err
		}
		for _, d := range prepared {
			cdi = append(cdi, d.CDIDeviceIDs...)
		}
	}
	return cdi, nil
}

// reconcileClaims plays the node side of DRA for a pod with claims bound
// to any simulated GPU node (on a node without the driver it never
// starts): it records the prepared CDI devices, or shows the pod's
// containers not starting with the kubelet's event. A pod whose devices
// left while it ran (its node's MIG layout changed) fails, as its
// device-plugin sibling does (failPodsOnRepartition).
func (c *Controller) reconcileClaims(ctx context.Context, node *corev1.Node, p *corev1.Pod) (time.Duration, error) {
	if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return 0, nil
	}
	recorded := p.Annotations[fakegpu.AnnotationCDIDevices]
	_, draOn, _ := fakegpu.DRAConfigFor(node.Annotations)
	if !draOn && recorded != "" {
		// Prepared while the driver ran: the kubelet prepares only before
		// it creates the sandbox (kubelet-facts §5.1), so the driver
		// leaving does not take the devices from running containers.
		return 0, nil
	}
	cdi, err := c.prepareClaims(node, draOn, p)
	if errors.Is(err, errClaimNotSeen) {
		if bound := boundAt(p); bound.IsZero() || time.Since(bound) < claimGrace {
			return 200 * time.Millisecond, nil
		}
	}
	switch {
	case err == nil && recorded == "":
		if c.opt.SkipDeviceRecords {
			return 0, nil
		}
		return 0, c.annotate(ctx, p, fakegpu.AnnotationCDIDevices, strings.Join(cdi, ","))
	case err == nil:
		return 0, nil
	case recorded != "":
		// Prepared once, its devices gone since: the containers lose them.
		return 0, c.failPod(ctx, p, "GPUDevicesRemoved", fmt.Sprintf("the DRA devices of the pod's claims are gone from node %s: %v", node.Name, err))
	}
	msg := fakegpu.DRAPrepareFailedMessage(err)
	// Shown once kwok has started the pod: earlier, its pod-ready stage
	// would overwrite it. The pod's next update requeues it.
	if p.Status.Phase != corev1.PodRunning || alreadyWaiting(p, fakegpu.DRAPrepareFailed) {
		return 0, nil
	}
	c.recorder.Event(p, corev1.EventTypeWarning, fakegpu.DRAPrepareFailed, msg)
	now := metav1.Now()
	st := p.Status.DeepCopy()
	st.ContainerStatuses = containerStatuses(p, func(cs *corev1.ContainerStatus) {
		cs.Ready, cs.Started = false, ptr(false)
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: fakegpu.DRAPrepareFailed, Message: msg}}
	})
	setCondition(st, corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", now)
	setCondition(st, corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady", now)
	p = p.DeepCopy()
	p.Status = *st
	_, err = c.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: "fakegpu"})
	c.trace("fakegpu: pod %s/%s on %s: %s", p.Namespace, p.Name, node.Name, msg)
	return 0, ignoreNotFound(err)
}

// boundAt is when the pod was bound: its PodScheduled condition, or, for
// a pod created with nodeName (no scheduler, so no such condition), its
// creation. Zero: not known.
func boundAt(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	if p.Spec.NodeName != "" {
		return p.CreationTimestamp.Time
	}
	return time.Time{}
}

func alreadyWaiting(p *corev1.Pod, reason string) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting != nil && cs.State.Waiting.Reason == reason {
			return true
		}
	}
	return false
}

func (c *Controller) annotate(ctx context.Context, p *corev1.Pod, key, value string) error {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
	_, err := c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, b, metav1.PatchOptions{FieldManager: "fakegpu"})
	return ignoreNotFound(err)
}
