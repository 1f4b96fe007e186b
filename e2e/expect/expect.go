// Package expect asserts observable outcomes through the apiserver: a
// denial and its message, a pod Pending for a stated reason, a pod's
// placement. Each returns an error saying what was expected and what
// happened, so a failed check explains itself in the report.
package expect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/gpupool/gpupool/e2e/wait"
)

// Timeouts for outcomes on the embedded cluster; generous against a
// loaded 2-core machine, and every wait ends as soon as the outcome shows.
var (
	AdmissionTimeout = 10 * time.Second
	ScheduleTimeout  = 20 * time.Second
)

// Denied asserts that creating pod is refused at admission with a message
// containing want. It submits with dryRun=All, so nothing is created, and
// retries until the deadline: a policy installed a moment ago takes about
// a second to reach the apiserver's admission chain.
func Denied(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, want string) error {
	what := fmt.Sprintf("pod %s/%s to be denied at admission", pod.Namespace, pod.Name)
	if want != "" {
		what += fmt.Sprintf(" with a message containing %q", want)
	}
	var last string // what the last complete attempt saw
	err := wait.For(ctx, what, AdmissionTimeout, func(ctx context.Context) (bool, string, error) {
		_, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case ctx.Err() != nil:
			return false, "", nil // the deadline cut this attempt short; keep the last real answer
		case err == nil:
			last = "it was admitted"
		case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
			if strings.Contains(err.Error(), want) {
				return true, "", nil
			}
			last = "it was denied with another message: " + err.Error()
		default:
			last = "create failed: " + err.Error()
		}
		return false, last, nil
	})
	var te *wait.TimeoutError
	if errors.As(err, &te) {
		return fmt.Errorf("expected %s, but for %s %s", what, te.Timeout, last)
	}
	return err
}

// Admitted creates pod and asserts the apiserver accepts it.
func Admitted(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) (*corev1.Pod, error) {
	created, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("expected pod %s/%s to be admitted, but it was refused: %w", pod.Namespace, pod.Name, err)
	}
	return created, nil
}

// Scheduled waits until the pod is bound to a node and returns it.
func Scheduled(ctx context.Context, cs kubernetes.Interface, ns, name string) (*corev1.Pod, error) {
	var pod *corev1.Pod
	err := wait.For(ctx, fmt.Sprintf("pod %s/%s to be scheduled", ns, name), ScheduleTimeout, func(ctx context.Context) (bool, string, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		pod = p
		if p.Spec.NodeName != "" {
			return true, "", nil
		}
		return false, "Pending: " + schedulingMessage(ctx, cs, p), nil
	})
	return pod, err
}

// PendingWith asserts the pod is not scheduled and the scheduler's
// FailedScheduling event for it contains want (e.g. "Insufficient
// nvidia.com/gpu").
func PendingWith(ctx context.Context, cs kubernetes.Interface, ns, name, want string) error {
	var last string
	err := wait.For(ctx, fmt.Sprintf("pod %s/%s to be reported unschedulable with %q", ns, name, want), ScheduleTimeout, func(ctx context.Context) (bool, string, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		if p.Spec.NodeName != "" {
			return false, "", fmt.Errorf("expected pod %s/%s to stay Pending with %q, but it was scheduled onto %s", ns, name, want, p.Spec.NodeName)
		}
		last = schedulingMessage(ctx, cs, p)
		return strings.Contains(last, want), last, nil
	})
	if err != nil {
		return err
	}
	// The event came from the scheduler; make sure it did not change its
	// mind since (a node appearing would bind it).
	p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if p.Spec.NodeName != "" {
		return fmt.Errorf("pod %s/%s was reported %q but then scheduled onto %s", ns, name, last, p.Spec.NodeName)
	}
	return nil
}

// schedulingMessage returns the newest FailedScheduling message for the
// pod, or its PodScheduled condition message.
func schedulingMessage(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod) string {
	evs, err := cs.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": p.Name, "involvedObject.uid": string(p.UID), "reason": "FailedScheduling"}.String(),
	})
	if err == nil && len(evs.Items) > 0 {
		newest := evs.Items[0]
		for _, e := range evs.Items[1:] {
			if eventTime(e).After(eventTime(newest)) {
				newest = e
			}
		}
		return newest.Message
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Reason + ": " + c.Message
		}
	}
	return "no scheduling decision yet"
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// DeletePods deletes the pods with the check label in the namespaces and
// waits until they are gone, so the next check finds the capacity free.
func DeletePods(ctx context.Context, cs kubernetes.Interface, selector string, namespaces ...string) error {
	zero := int64(0)
	for _, ns := range namespaces {
		if err := cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: selector}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return wait.For(ctx, "pods "+selector+" to be deleted", ScheduleTimeout, func(ctx context.Context) (bool, string, error) {
		left := 0
		for _, ns := range namespaces {
			l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return false, "", err
			}
			left += len(l.Items)
		}
		return left == 0, fmt.Sprintf("%d left", left), nil
	})
}

// AllScheduled waits until every pod is bound, in one wait (not one per
// pod), and reports the ones that never were with the scheduler's reason.
func AllScheduled(ctx context.Context, cs kubernetes.Interface, pods []*corev1.Pod) error {
	pending := map[string]*corev1.Pod{}
	for _, p := range pods {
		pending[p.Namespace+"/"+p.Name] = p
	}
	err := wait.For(ctx, fmt.Sprintf("%d pods to be scheduled", len(pods)), ScheduleTimeout, func(ctx context.Context) (bool, string, error) {
		for key, p := range pending {
			got, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			if got.Spec.NodeName != "" {
				delete(pending, key)
			}
		}
		return len(pending) == 0, fmt.Sprintf("%d still Pending", len(pending)), nil
	})
	if err == nil {
		return nil
	}
	var lines []string
	for key, p := range pending {
		got, gerr := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if gerr != nil {
			continue
		}
		lines = append(lines, key+": "+schedulingMessage(ctx, cs, got))
	}
	sort.Strings(lines)
	if len(lines) > 3 {
		lines = append(lines[:3], fmt.Sprintf("... and %d more", len(lines)-3))
	}
	return fmt.Errorf("%w; never scheduled: %s", err, strings.Join(lines, "; "))
}

// PodReaches waits until cond holds for the pod and returns it. cond also
// describes what it saw, for the timeout message.
func PodReaches(ctx context.Context, cs kubernetes.Interface, ns, name, what string, timeout time.Duration, cond func(*corev1.Pod) (bool, string)) (*corev1.Pod, error) {
	var pod *corev1.Pod
	err := wait.For(ctx, fmt.Sprintf("pod %s/%s to %s", ns, name, what), timeout, func(ctx context.Context) (bool, string, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		pod = p
		ok, seen := cond(p)
		return ok, seen, nil
	})
	return pod, err
}

// Describe summarises a pod's state for messages: phase, reason, and each
// container's state.
func Describe(p *corev1.Pod) string {
	parts := []string{"phase " + string(p.Status.Phase)}
	if p.Status.Reason != "" {
		parts = append(parts, "reason "+p.Status.Reason)
	}
	for _, c := range p.Status.ContainerStatuses {
		switch {
		case c.State.Waiting != nil:
			parts = append(parts, fmt.Sprintf("container %s waiting (%s)", c.Name, c.State.Waiting.Reason))
		case c.State.Terminated != nil:
			parts = append(parts, fmt.Sprintf("container %s terminated (%s)", c.Name, c.State.Terminated.Reason))
		case c.State.Running != nil:
			parts = append(parts, fmt.Sprintf("container %s running", c.Name))
		}
		if t := c.LastTerminationState.Terminated; t != nil {
			parts = append(parts, fmt.Sprintf("last terminated (%s)", t.Reason))
		}
	}
	return strings.Join(parts, ", ")
}

// WouldBeAdmitted asserts the apiserver admits pod, submitting it with
// dryRun=All so nothing is created (the counterpart of Denied).
func WouldBeAdmitted(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) error {
	if _, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		return fmt.Errorf("expected pod %s/%s to be admitted, but it was refused: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
