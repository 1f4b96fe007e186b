// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/gpupool/gpupool/fakegpu"
)

// Reasons of the real kubelet's admission refusals (kubelet-facts §1: k8s
// v1.37.2 pkg/kubelet/lifecycle/predicate.go, the scheduler plugins' names
// and ErrReason texts).
const (
	ReasonNodeAffinity    = "NodeAffinity"
	ReasonTaintToleration = "TaintToleration"
)

// kubeletAdmits is what a real kubelet's generalFilter says of a pod bound
// to node, before it starts it (kubelet-facts §1): the pod must fit beside
// the pods admitted before it (admitted), its required node affinity and
// nodeSelector must match the node, and it must tolerate every NoExecute
// taint (NoSchedule ones are the scheduler's alone, so a pod that names
// the node in spec.nodeName skips them). The first failure is the reason,
// as the kubelet reports only its first. It returns the pod's status
// reason and message ("" when admitted). The device plugin's Allocate,
// which a real kubelet runs before these, is judged apart (KubeletOn),
// after them: a pod that both asks more GPUs than are free and fails a
// check here gets this reason, where a real kubelet reports
// UnexpectedAdmissionError.
func kubeletAdmits(node *corev1.Node, admitted []*corev1.Pod, p *corev1.Pod) (reason, message string) {
	if reason, message := kubeletFits(node, admitted, p); reason != "" {
		return reason, message
	}
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(p).Match(node); !ok {
		return ReasonNodeAffinity, rejected(ReasonNodeAffinity, "node(s) didn't match Pod's node affinity/selector")
	}
	if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute
	}, false); untolerated {
		return ReasonTaintToleration, rejected(ReasonTaintToleration, "node(s) had taints that the pod didn't tolerate")
	}
	return "", ""
}

// kubeletFits is noderesources.Fits as the kubelet's AdmissionCheck runs
// it (kubelet-facts §1.4): the pod count first, then cpu, memory,
// ephemeral storage and extended resources, each the pod's effective
// requests (init containers, sidecars, overhead) against the node's
// allocatable less what the admitted pods request. Extended resources the
// node does not advertise are dropped first (removeMissingExtendedResources).
func kubeletFits(node *corev1.Node, admitted []*corev1.Pod, p *corev1.Pod) (reason, message string) {
	alloc := node.Status.Allocatable
	if max, ok := alloc[corev1.ResourcePods]; ok && int64(len(admitted))+1 > max.Value() {
		return outOf(corev1.ResourcePods, 1, int64(len(admitted)), max.Value())
	}
	want := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	used := corev1.ResourceList{}
	for _, o := range admitted {
		for name, q := range resourcehelper.PodRequests(o, resourcehelper.PodResourcesOptions{}) {
			sum := used[name]
			sum.Add(q)
			used[name] = sum
		}
	}
	amount := func(name corev1.ResourceName, l corev1.ResourceList) int64 {
		q := l[name]
		if name == corev1.ResourceCPU {
			return q.MilliValue()
		}
		return q.Value()
	}
	var extended []corev1.ResourceName
	for name := range want {
		// The device plugin's resources are the Allocate call's, which a
		// real kubelet makes before this check (kubelet-facts §1.3): a
		// pod asking more than is free fails there, and one that got its
		// devices fits here.
		if _, served := alloc[name]; served && !isNative(name) && !strings.HasPrefix(string(name), fakegpu.LabelPrefix) {
			extended = append(extended, name)
		}
	}
	sort.Slice(extended, func(i, j int) bool { return extended[i] < extended[j] })
	for _, name := range append([]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}, extended...) {
		w := amount(name, want)
		if w > 0 && w > amount(name, alloc)-amount(name, used) {
			return outOf(name, w, amount(name, used), amount(name, alloc))
		}
	}
	return "", ""
}

func isNative(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods:
		return true
	}
	return false
}

// outOf is the kubelet's refusal for a resource that does not fit: reason
// OutOf<resource>, and InsufficientResourceError's text behind rejectPod's
// prefix.
func outOf(name corev1.ResourceName, requested, used, capacity int64) (string, string) {
	return "OutOf" + string(name), fmt.Sprintf("Pod was rejected: Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, requested, used, capacity)
}

// rejected is the pod's status.message: the predicate's error
// (PredicateFailureError.Error) behind rejectPod's prefix.
func rejected(predicate, desc string) string {
	return "Pod was rejected: Predicate " + predicate + " failed: " + desc
}

// admitOnce applies kubeletAdmits to a pod the simulated kubelet has not
// started yet: one with no record of its devices or of what it sees. A
// kubelet admits a pod once; a node relabelled later (a MIG layout, a
// pool change) does not evict what runs. It reports whether the pod was
// refused (and so is done with).
func (c *Controller) admitOnce(ctx context.Context, node *corev1.Node, onNode []*corev1.Pod, p *corev1.Pod) (bool, error) {
	if c.opt.SkipDeviceRecords || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return false, nil
	}
	if _, started := p.Annotations[fakegpu.AnnotationGPUSight]; started {
		return false, nil
	}
	if p.Annotations[fakegpu.AnnotationVisibleDevices] != "" || p.Annotations[fakegpu.AnnotationCDIDevices] != "" {
		return false, nil
	}
	reason, msg := kubeletAdmits(node, admittedBefore(onNode, p), p)
	if reason == "" {
		return false, nil
	}
	// A kubelet judges the node as it is; the informer may still show it
	// as it was. A node Karpenter just registered lost its
	// karpenter.sh/unregistered NoExecute taint in the write that let the
	// scheduler bind the pod (autoscaler-facts §4.5): refused from a stale
	// view, the pod failed, and the node was removed under it as empty.
	fresh, err := c.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		return false, ignoreNotFound(err)
	}
	if fresh.ResourceVersion != node.ResourceVersion {
		if reason, msg = kubeletAdmits(fresh, admittedBefore(onNode, p), p); reason == "" {
			return false, nil
		}
	}
	wrote, err := c.rejectPod(ctx, p, reason, msg)
	if err != nil {
		return true, err
	}
	if wrote {
		c.trace("fakegpu: pod %s/%s on %s: %s", p.Namespace, p.Name, node.Name, msg)
	}
	return true, nil
}

// admittedBefore is what the node's kubelet had admitted when p arrived:
// the live pods on it that it started already (their sight is recorded)
// or that came first (the kubelet admits pods in creation order).
func admittedBefore(onNode []*corev1.Pod, p *corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, o := range onNode {
		if o.UID == p.UID || o.Status.Phase == corev1.PodFailed || o.Status.Phase == corev1.PodSucceeded {
			continue
		}
		_, started := o.Annotations[fakegpu.AnnotationGPUSight]
		earlier := o.CreationTimestamp.Before(&p.CreationTimestamp) ||
			(o.CreationTimestamp.Equal(&p.CreationTimestamp) && o.Namespace+"/"+o.Name < p.Namespace+"/"+p.Name)
		if started || earlier {
			out = append(out, o)
		}
	}
	return out
}

// rejectPod writes what a kubelet's rejectPod does: an event with the
// reason, and the pod Failed with that reason and message, no container
// started. The pod is re-read on a conflict: kwok writes its status too,
// and a pod read from a stale cache may be Failed already (refused by an
// earlier pass); wrote says whether this call refused it.
func (c *Controller) rejectPod(ctx context.Context, p *corev1.Pod, reason, msg string) (wrote bool, _ error) {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if p.Status.Phase == corev1.PodFailed {
			return nil
		}
		q := p.DeepCopy()
		q.Status.Phase, q.Status.Reason, q.Status.Message = corev1.PodFailed, reason, msg
		q.Status.ContainerStatuses = nil
		setCondition(&q.Status, corev1.PodReady, corev1.ConditionFalse, reason, metav1.Now())
		_, err := c.client.CoreV1().Pods(q.Namespace).UpdateStatus(ctx, q, metav1.UpdateOptions{FieldManager: "fakegpu"})
		wrote = err == nil
		if apierrors.IsConflict(err) {
			fresh, gerr := c.client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			p = fresh
		}
		return err
	})
	if err != nil {
		return false, ignoreNotFound(err)
	}
	if wrote {
		c.recorder.Eventf(p, corev1.EventTypeWarning, reason, "%s", strings.TrimPrefix(msg, "Pod was rejected: "))
	}
	return wrote, nil
}
