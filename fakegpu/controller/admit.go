package controller

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
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
// to node, before it starts it (kubelet-facts §1): its required node
// affinity and nodeSelector must match the node, and it must tolerate every
// NoExecute taint (NoSchedule ones are the scheduler's alone, so a pod that
// names the node in spec.nodeName skips them). It returns the pod's
// status reason and message ("" when admitted). Resources are judged by
// Allocate, as before; the kubelet's own fit check is not modelled.
func kubeletAdmits(node *corev1.Node, p *corev1.Pod) (reason, message string) {
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
func (c *Controller) admitOnce(ctx context.Context, node *corev1.Node, p *corev1.Pod) (bool, error) {
	if c.opt.SkipDeviceRecords || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return false, nil
	}
	if _, started := p.Annotations[fakegpu.AnnotationGPUSight]; started {
		return false, nil
	}
	if p.Annotations[fakegpu.AnnotationVisibleDevices] != "" || p.Annotations[fakegpu.AnnotationCDIDevices] != "" {
		return false, nil
	}
	reason, msg := kubeletAdmits(node, p)
	if reason == "" {
		return false, nil
	}
	if err := c.rejectPod(ctx, p, reason, msg); err != nil {
		return true, err
	}
	c.opt.Log("fakegpu: pod %s/%s on %s: %s", p.Namespace, p.Name, node.Name, msg)
	return true, nil
}

// rejectPod writes what a kubelet's rejectPod does: an event with the
// reason, and the pod Failed with that reason and message, no container
// started. The pod is re-read on a conflict: kwok writes its status too.
func (c *Controller) rejectPod(ctx context.Context, p *corev1.Pod, reason, msg string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if p.Status.Phase == corev1.PodFailed {
			return nil
		}
		q := p.DeepCopy()
		q.Status.Phase, q.Status.Reason, q.Status.Message = corev1.PodFailed, reason, msg
		q.Status.ContainerStatuses = nil
		setCondition(&q.Status, corev1.PodReady, corev1.ConditionFalse, reason, metav1.Now())
		_, err := c.client.CoreV1().Pods(q.Namespace).UpdateStatus(ctx, q, metav1.UpdateOptions{FieldManager: "fakegpu"})
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
		return ignoreNotFound(err)
	}
	c.recorder.Eventf(p, corev1.EventTypeWarning, reason, "%s", strings.TrimPrefix(msg, "Pod was rejected: "))
	return nil
}
