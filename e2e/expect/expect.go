// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package expect asserts observable outcomes through the apiserver: a
// denial and its message, a pod Pending for a stated reason, a pod's
// placement. Each returns an error saying what was expected and what
// happened, so a failed check explains itself in the report.
package expect

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/kubernetes"

	"github.com/gpupool/gpupool/e2e/wait"
)

// ScheduleTimeout bounds waits for the scheduler on the embedded cluster:
// generous against a loaded 2-core machine, and every wait ends as soon
// as the outcome shows.
var ScheduleTimeout = 20 * time.Second

// Denied asserts that creating pod is refused at admission with a message
// containing want. It submits with dryRun=All, so nothing is created, and
// judges the one answer: bring-up waits until the candidate's policies
// are live (e2e/barrier), so an admitted pod is the verdict, not a policy
// still on its way.
func Denied(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, want string) error {
	what := fmt.Sprintf("pod %s/%s to be denied at admission", pod.Namespace, pod.Name)
	if want != "" {
		what += fmt.Sprintf(" with a message containing %q", want)
	}
	_, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	switch {
	case err == nil:
		return fmt.Errorf("expected %s, but it was admitted", what)
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
		if strings.Contains(err.Error(), want) {
			return nil
		}
		return fmt.Errorf("expected %s, but it was denied with another message: %s", what, err.Error())
	}
	return fmt.Errorf("expected %s, but the create failed: %w", what, err)
}

// Admitted creates pod and asserts the apiserver accepts it.
func Admitted(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) (*corev1.Pod, error) {
	created, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("expected pod %s/%s to be admitted, but it was refused: %w", pod.Namespace, pod.Name, err)
	}
	return created, nil
}

// Scheduled waits until the pod is bound to a node and returns it. It
// gives up early once the scheduler's verdict is final (see finality):
// no deadline is waited out for a pod no node can take.
func Scheduled(ctx context.Context, cs kubernetes.Interface, ns, name string) (*corev1.Pod, error) {
	var pod *corev1.Pod
	var final finality
	err := wait.For(ctx, fmt.Sprintf("pod %s/%s to be scheduled", ns, name), ScheduleTimeout, func(ctx context.Context) (bool, string, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		pod = p
		if p.Spec.NodeName != "" {
			return true, "", nil
		}
		if msg, ok, err := final.check(ctx, &watched{cs: cs}, p); err != nil || ok {
			return false, "", errOr(err, fmt.Errorf("expected pod %s/%s to be scheduled, but the scheduler found no node for it, and its verdict stood with nothing left to retry on: %s", ns, name, msg))
		}
		return false, "Pending: " + schedulingMessage(ctx, cs, p), nil
	})
	return pod, err
}

func errOr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// SettleTime is how long an Unschedulable verdict given after the nodes'
// last change must stand before it is taken as final: a scheduling attempt
// that began just before a node changed is retried after a backoff of at
// least a second.
var SettleTime = 1500 * time.Millisecond

// finality tracks whether a Pending pod's Unschedulable verdict is final:
// the scheduler wrote it (the pod's last write) after every node's last
// change, and it has stood for SettleTime. Nothing the scheduler looks at
// has moved since it decided, so it will not decide otherwise. A pod that
// may get a device through DRA is also retried on ResourceClaim and
// ResourceSlice changes, when the scheduler's queueing hints say the
// change may help; which ones do is the scheduler's to decide, so a claim
// or slice written after the verdict makes it final only once it has
// stood a whole retry backoff (MaxBackoffSettle) past the last such write.
// (With claims left out, a fill of shared DRA devices saw 2 early verdicts
// in 12 runs of the DRA suite; with every later claim write taken as a
// retry, the one pod the scheduler really left Pending waited out the
// deadline. Resource versions compare as upstream defines them:
// k8s.io/apimachinery resourceversion.CompareResourceVersion.)
type finality struct {
	since time.Time
	mark  string // the pod's resource version, and the newest DRA object's written after it
}

// MaxBackoffSettle is how long a verdict must stand past the last DRA
// object written after it: kube-scheduler's longest pod backoff
// (DefaultPodMaxBackoffDuration, 10 s) and a second's margin.
var MaxBackoffSettle = 11 * time.Second

// watched is what the scheduler retries on, listed at most once per poll
// however many pods a wait judges.
type watched struct {
	cs             kubernetes.Interface
	nodes, dra     []metav1.Object
	nodesOK, draOK bool
	mapped         map[corev1.ResourceName]bool
	classes        []metav1.Object
	mappedOK       bool
}

// listMapped lists the extended resources DeviceClasses map, by
// spec.extendedResourceName or the implicit
// deviceclass.resource.kubernetes.io/<class> (none where DRA is not
// served).
func (w *watched) listMapped(ctx context.Context) (map[corev1.ResourceName]bool, error) {
	if !w.mappedOK {
		w.mapped = map[corev1.ResourceName]bool{}
		classes, err := w.cs.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		if err == nil {
			for i, c := range classes.Items {
				w.classes = append(w.classes, &classes.Items[i])
				w.mapped[corev1.ResourceName(resourcev1.ResourceDeviceClassPrefix+c.Name)] = true
				if c.Spec.ExtendedResourceName != nil {
					w.mapped[corev1.ResourceName(*c.Spec.ExtendedResourceName)] = true
				}
			}
		}
		w.mappedOK = true
	}
	return w.mapped, nil
}

func (w *watched) listNodes(ctx context.Context) ([]metav1.Object, error) {
	if !w.nodesOK {
		l, err := w.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			w.nodes = append(w.nodes, &l.Items[i])
		}
		w.nodesOK = true
	}
	return w.nodes, nil
}

// listDRA lists every ResourceClaim and ResourceSlice; none where DRA is
// not served (NotFound).
func (w *watched) listDRA(ctx context.Context) ([]metav1.Object, error) {
	if !w.draOK {
		claims, err := w.cs.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		if err == nil {
			for i := range claims.Items {
				w.dra = append(w.dra, &claims.Items[i])
			}
		}
		slices, err := w.cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		if err == nil {
			for i := range slices.Items {
				w.dra = append(w.dra, &slices.Items[i])
			}
		}
		w.draOK = true
	}
	return w.dra, nil
}

func (f *finality) check(ctx context.Context, w *watched, p *corev1.Pod) (string, bool, error) {
	msg, unschedulable := "", false
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			msg, unschedulable = c.Message, true
		}
	}
	if !unschedulable {
		f.since = time.Time{}
		return "", false, nil
	}
	newer := func(o metav1.Object) bool {
		c, err := resourceversion.CompareResourceVersion(o.GetResourceVersion(), p.ResourceVersion)
		return err != nil || c >= 0
	}
	nodes, err := w.listNodes(ctx)
	if err != nil {
		return "", false, err
	}
	for _, n := range nodes {
		if newer(n) {
			f.since = time.Time{} // a node changed after the verdict: the scheduler may retry
			return "", false, nil
		}
	}
	settle, newest := SettleTime, ""
	dra, err := w.mayUseDRA(ctx, p)
	if err != nil {
		return "", false, err
	}
	if dra {
		written, err := w.listDRA(ctx)
		if err != nil {
			return "", false, err
		}
		// A DeviceClass added or changed retries the pod too
		// (scheduler-facts §2.3, §3.1); mayUseDRA has listed them.
		for _, o := range append(slices.Clone(written), w.classes...) {
			if !newer(o) {
				continue
			}
			settle = MaxBackoffSettle
			if c, err := resourceversion.CompareResourceVersion(o.GetResourceVersion(), newest); newest == "" || err != nil || c > 0 {
				newest = o.GetResourceVersion()
			}
		}
	}
	if mark := p.ResourceVersion + "/" + newest; f.since.IsZero() || f.mark != mark {
		f.since, f.mark = time.Now(), mark
	}
	return msg, time.Since(f.since) >= settle, nil
}

// mayUseDRA says whether the scheduler may serve the pod through DRA: it
// references claims, or asks for an extended resource a DeviceClass maps.
// A pod short of a resource no class maps is judged by NodeResourcesFit
// alone, which no ResourceClaim or ResourceSlice write retries
// (scheduler-facts §2.2 to §2.4); a class that comes to map it is seen
// here on the next poll (its Add and Update do retry it, §2.3).
func (w *watched) mayUseDRA(ctx context.Context, p *corev1.Pod) (bool, error) {
	if len(p.Spec.ResourceClaims) > 0 {
		return true, nil
	}
	var asked []corev1.ResourceName
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			for _, rl := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
				for name := range rl {
					if strings.Contains(string(name), "/") {
						asked = append(asked, name)
					}
				}
			}
		}
	}
	if len(asked) == 0 {
		return false, nil
	}
	mapped, err := w.listMapped(ctx)
	if err != nil {
		return false, err
	}
	for _, name := range asked {
		if mapped[name] {
			return true, nil
		}
	}
	return false, nil
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

// DeletePods deletes the pods with the check label in the namespaces
// (in every namespace when none is given) and waits until they, and the
// ResourceClaims they owned, are gone, so the next check finds the
// capacity free. Each poll is one list across the namespaces, and a
// delete only where a pod not yet going is found: a check's teardown
// costs a few requests rather than a few per namespace of the cluster,
// and a pod a check's controller makes again meanwhile goes too.
func DeletePods(ctx context.Context, cs kubernetes.Interface, selector string, namespaces ...string) error {
	zero := int64(0)
	scope := metav1.NamespaceAll
	if len(namespaces) == 1 {
		scope = namespaces[0]
	}
	owned := map[types.UID]bool{}
	if err := wait.For(ctx, "pods "+selector+" to be deleted", ScheduleTimeout, func(ctx context.Context) (bool, string, error) {
		l, err := cs.CoreV1().Pods(scope).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, "", err
		}
		left := 0
		var live []string
		if l != nil {
			for _, p := range l.Items {
				if len(namespaces) > 1 && !slices.Contains(namespaces, p.Namespace) {
					continue
				}
				left++
				// Every pod: the scheduler's extended-resource claim may
				// exist before the pod's status names it.
				owned[p.UID] = true
				if p.DeletionTimestamp == nil && !slices.Contains(live, p.Namespace) {
					live = append(live, p.Namespace)
				}
			}
		}
		for _, ns := range live {
			if err := cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: selector}); err != nil && !apierrors.IsNotFound(err) {
				return false, "", err
			}
		}
		return left == 0, fmt.Sprintf("%d left", left), nil
	}); err != nil || len(owned) == 0 {
		return err
	}
	return ClaimsGone(ctx, cs, owned)
}

// ClaimsGone waits until no ResourceClaim is owned by the pods (by UID):
// the claims a pod owned (from its templates, or the scheduler's
// extended-resource claim) outlive it until the resourceclaim controller
// removes them, and until then the scheduler counts their devices as
// taken, so the next check would find the pool short.
func ClaimsGone(ctx context.Context, cs kubernetes.Interface, pods map[types.UID]bool) error {
	return wait.For(ctx, "the deleted pods' ResourceClaims to be removed", ScheduleTimeout, func(ctx context.Context) (bool, string, error) {
		l, err := cs.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil // a cluster that serves no DRA holds no claims
		}
		if err != nil {
			return false, "", err
		}
		var left []string
		for _, c := range l.Items {
			for _, o := range c.OwnerReferences {
				if pods[o.UID] {
					left = append(left, c.Namespace+"/"+c.Name)
				}
			}
		}
		return len(left) == 0, fmt.Sprintf("%d left: %s", len(left), strings.Join(left, ", ")), nil
	})
}

// AllScheduled waits until every pod is bound, in one wait (not one per
// pod), and reports the ones that never were with the scheduler's reason.
func AllScheduled(ctx context.Context, cs kubernetes.Interface, pods []*corev1.Pod) error {
	never, err := scheduleAll(ctx, cs, pods, true)
	if err != nil {
		return err
	}
	if len(never) > 0 {
		return fmt.Errorf("the scheduler found no node for %d pods, and its verdict stood with nothing left to retry on: %s", len(never), strings.Join(never, "; "))
	}
	return nil
}

// ScheduledOrRefused waits until every pod is bound or has a final
// Unschedulable verdict (see finality), and returns the refused ones with
// the scheduler's reason, sorted. For a caller to whom a pod the scheduler
// left Pending is no verdict on the candidate; the error is the wait's.
func ScheduledOrRefused(ctx context.Context, cs kubernetes.Interface, pods []*corev1.Pod) ([]string, error) {
	return scheduleAll(ctx, cs, pods, false)
}

// scheduleAll is one wait for the pods; firstRefusal ends it at the first
// final refusal, as a verdict the cluster has already shown.
func scheduleAll(ctx context.Context, cs kubernetes.Interface, pods []*corev1.Pod, firstRefusal bool) ([]string, error) {
	pending := map[string]*corev1.Pod{}
	final := map[string]*finality{}
	for _, p := range pods {
		pending[p.Namespace+"/"+p.Name] = p
		final[p.Namespace+"/"+p.Name] = &finality{}
	}
	var never []string
	err := wait.For(ctx, fmt.Sprintf("%d pods to be scheduled or refused for good", len(pods)), ScheduleTimeout, func(ctx context.Context) (bool, string, error) {
		w := &watched{cs: cs}
		for key, p := range pending {
			got, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			if got.Spec.NodeName != "" {
				delete(pending, key)
				continue
			}
			if msg, ok, err := final[key].check(ctx, w, got); err != nil {
				return false, "", err
			} else if ok {
				never = append(never, key+": "+msg)
				delete(pending, key)
			}
		}
		if firstRefusal && len(never) > 0 {
			return true, "", nil
		}
		return len(pending) == 0, fmt.Sprintf("%d still Pending", len(pending)), nil
	})
	sort.Strings(never)
	if err == nil {
		return never, nil
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
	return never, fmt.Errorf("%w; never scheduled: %s", err, strings.Join(lines, "; "))
}

// PodReaches waits until cond holds for the pod and returns it. cond also
// describes what it saw, for the timeout message.
func PodReaches(ctx context.Context, cs kubernetes.Interface, ns, name, what string, timeout time.Duration, cond func(*corev1.Pod) (bool, string)) (*corev1.Pod, error) {
	return PodReachesUnless(ctx, cs, ns, name, what, timeout, cond, nil)
}

// PodReachesUnless is PodReaches that also stops as soon as never says
// the pod has shown it will not get there (for example, a pod awaited to
// be refused by the kubelet is running: the kubelet admitted it), with an
// error saying what never saw.
func PodReachesUnless(ctx context.Context, cs kubernetes.Interface, ns, name, what string, timeout time.Duration, cond func(*corev1.Pod) (bool, string), never func(*corev1.Pod) (string, bool)) (*corev1.Pod, error) {
	var pod *corev1.Pod
	var final finality
	err := wait.For(ctx, fmt.Sprintf("pod %s/%s to %s", ns, name, what), timeout, func(ctx context.Context) (bool, string, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		pod = p
		ok, seen := cond(p)
		if !ok {
			why, shown := stuck(p)
			if !shown && never != nil {
				why, shown = never(p)
			}
			if shown {
				return false, "", fmt.Errorf("expected pod %s/%s to %s, but %s: %s", ns, name, what, why, Describe(p))
			}
		}
		if !ok && p.Spec.NodeName == "" {
			// A pod that is never scheduled reaches nothing.
			if msg, never, err := final.check(ctx, &watched{cs: cs}, p); err != nil || never {
				return false, "", errOr(err, fmt.Errorf("expected pod %s/%s to %s, but the scheduler found no node for it, and its verdict stood with nothing left to retry on: %s", ns, name, what, msg))
			}
		}
		return ok, seen, nil
	})
	return pod, err
}

// stuck reports a pod that will not get anywhere else: it ended (a pod
// never leaves Failed or Succeeded), or a container is crash-looping. The
// clusters gpupool makes crash-loop a container only for a cause that does
// not go away (the simulated kubelet's verdicts: no GPU visible, out of GPU
// memory), so waiting longer shows nothing new.
func stuck(p *corev1.Pod) (string, bool) {
	switch p.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		return "it ended", true
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, c := range list {
			if w := c.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
				return "container " + c.Name + " is crash-looping", true
			}
		}
	}
	return "", false
}

// Describe summarises a pod's state for messages: phase, reason, and each
// container's state.
func Describe(p *corev1.Pod) string {
	parts := []string{"phase " + string(p.Status.Phase)}
	if p.Status.Reason != "" {
		parts = append(parts, "reason "+p.Status.Reason)
	}
	if p.Status.Phase == corev1.PodFailed && p.Status.Message != "" {
		// The kubelet's words for a pod it rejected.
		parts = append(parts, fmt.Sprintf("message %q", p.Status.Message))
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
