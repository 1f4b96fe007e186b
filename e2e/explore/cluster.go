// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package explore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/gpupool/gpupool/e2e/explain"
	"github.com/gpupool/gpupool/e2e/wait"
	"github.com/gpupool/gpupool/fakegpu"
)

// Cluster is where shapes are judged: the API and what the oracles need
// to know of it, read once per exploration. Namespaces do not change while
// it runs; nodes can, where the autoscaler makes one for a shape's pod.
type Cluster struct {
	Client kubernetes.Interface
	// Nodes are the fleet's nodes as the exploration began.
	Nodes []Node
	// Describe is the oracles' view of a node that came later, read when
	// a pod lands on it (false: a node of no pool of the fleet). Nil: no
	// node comes.
	Describe func(*corev1.Node) (Node, bool)
	// placed counts the pods judged where they landed, by pool.
	placed map[string]int
	// DomainOf maps a namespace to the trust domain it belongs to.
	DomainOf map[string]string
	// Timeout bounds each wait for the cluster to show an outcome.
	Timeout time.Duration
}

// Outcome is what the cluster did with a shape.
type Outcome struct {
	// Denied is admission's answer when the shape was refused.
	Denied string
	// Pods are the pods admission let through, as admitted (and, for
	// placement rules, once the scheduler decided), after the shape's
	// updates.
	Pods []*corev1.Pod
	// UpdateDenied is admission's refusal of one of the shape's updates
	// (the pod stays as it was before it).
	UpdateDenied string
}

// pollInterval is how often a shape's outcome is looked at: the embedded
// cluster shows one within tens of milliseconds.
const pollInterval = 40 * time.Millisecond

// schedulingGate holds back the pods of admission-only rules: created for
// real (a controller's pods must be), judged, and never placed, so they
// take no capacity from the placement rules running beside them.
const schedulingGate = "gpupool.dev/explore-admission-only"

// Submit submits the shape as a tenant would and waits until the
// cluster has shown what it does with it: admission's verdict and, with
// place, the scheduler's. A pod created directly and not placed is
// submitted with dryRun (nothing is created). cleanup removes what was
// created and waits until it is gone.
func (c *Cluster) Submit(ctx context.Context, s Shape, place bool) (out Outcome, cleanup func(), err error) {
	cleanup = func() {}
	if s.Via == ViaPod && !place && len(s.Updates) == 0 {
		got, err := c.Client.CoreV1().Pods(s.Pod.Namespace).Create(ctx, s.Pod.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if denied, ok := refusal(err); ok {
			return Outcome{Denied: denied}, cleanup, nil
		} else if err != nil {
			return out, cleanup, fmt.Errorf("submitting %s: %w", s, err)
		}
		return Outcome{Pods: []*corev1.Pod{got}}, cleanup, nil
	}
	sub := s
	sub.Pod = s.Pod.DeepCopy()
	if !place {
		sub.Pod.Spec.SchedulingGates = append(sub.Pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: schedulingGate})
	}
	if err := c.create(ctx, sub); err != nil {
		if denied, ok := refusal(err); ok {
			return Outcome{Denied: denied}, cleanup, nil
		}
		return out, cleanup, fmt.Errorf("submitting %s: %w", s, err)
	}
	cleanup = func() { c.remove(context.WithoutCancel(ctx), sub, place) }
	pods, denied, err := c.awaitPods(ctx, sub)
	if err != nil || denied != "" {
		return Outcome{Denied: denied}, cleanup, err
	}
	// A pod behind its tenant's gate is changed first, then placed as it
	// has become; any other is updated once placed.
	if s.gated() && len(pods) > 0 {
		if _, out.UpdateDenied, err = c.applyUpdates(ctx, pods[0], s.Updates); err != nil {
			return out, cleanup, err
		}
	}
	if place {
		if pods, err = c.awaitScheduling(ctx, sub); err != nil {
			return out, cleanup, err
		}
	}
	out.Pods = pods
	if !s.gated() && len(s.Updates) > 0 && len(pods) > 0 {
		// The tenant's own pod, or the first its controller made.
		if pods[0], out.UpdateDenied, err = c.applyUpdates(ctx, pods[0], s.Updates); err != nil {
			return out, cleanup, err
		}
	}
	return out, cleanup, nil
}

// refusal tells admission's refusal (a policy, Pod Security, validation)
// from a failure to ask.
func refusal(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		return err.Error(), true
	}
	return "", false
}

func (c *Cluster) create(ctx context.Context, s Shape) error {
	obj := s.Object()
	ns := s.Pod.Namespace
	var err error
	switch o := obj.(type) {
	case *corev1.Pod:
		_, err = c.Client.CoreV1().Pods(ns).Create(ctx, o, metav1.CreateOptions{})
	default:
		err = createWorkload(ctx, c.Client, ns, obj)
	}
	return err
}

// awaitPods waits for the shape's pods: the pod itself, or the first pod
// its controller creates, or the controller's FailedCreate event saying
// admission refused it.
func (c *Cluster) awaitPods(ctx context.Context, s Shape) ([]*corev1.Pod, string, error) {
	ns, name := s.Pod.Namespace, s.Pod.Name
	sel := labels.Set{LabelShape: name}.String()
	var pods []*corev1.Pod
	var denied string
	err := wait.Every(ctx, fmt.Sprintf("%s %s/%s to have its pod admitted or refused", s.Via, ns, name), c.timeout(), pollInterval, func(ctx context.Context) (bool, string, error) {
		list, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, "", err
		}
		if len(list.Items) > 0 {
			for i := range list.Items {
				pods = append(pods, &list.Items[i])
			}
			return true, "", nil
		}
		if s.Via == ViaPod {
			return false, "no pod yet", nil
		}
		msg, err := c.failedCreate(ctx, s)
		if err != nil || msg != "" {
			denied = msg
			return msg != "", "", err
		}
		return false, "no pod and no FailedCreate event yet", nil
	})
	return pods, denied, err
}

// failedCreate returns the message of the FailedCreate event the shape's
// controller recorded when admission refused its pod ("" none yet). The
// event is on the object that creates pods: the Job or StatefulSet itself,
// a Deployment's ReplicaSet.
func (c *Cluster) failedCreate(ctx context.Context, s Shape) (string, error) {
	ns, owners := s.Pod.Namespace, []string{s.Pod.Name}
	if s.Via == ViaDeployment {
		rss, err := c.Client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{LabelShape: s.Pod.Name}.String()})
		if err != nil {
			return "", err
		}
		owners = owners[:0]
		for _, rs := range rss.Items {
			owners = append(owners, rs.Name)
		}
	}
	for _, owner := range owners {
		evs, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{"involvedObject.name": owner, "reason": "FailedCreate"}.String()})
		if err != nil {
			return "", err
		}
		if len(evs.Items) > 0 {
			return evs.Items[0].Message, nil
		}
	}
	return "", nil
}

// awaitScheduling waits for the scheduler's decision on each of the
// shape's pods: bound, or marked unschedulable (its PodScheduled
// condition), or still held by a gate (admission refused its retarget).
// The pods are listed afresh each time: a controller replaces a pod the
// simulated kubelet failed (a StatefulSet deletes and recreates it), and
// the replacement is what holds the devices then. With no pod left at the
// deadline there is nothing placed to judge.
func (c *Cluster) awaitScheduling(ctx context.Context, s Shape) ([]*corev1.Pod, error) {
	sel := labels.Set{LabelShape: s.Pod.Name}.String()
	var out []*corev1.Pod
	err := wait.Every(ctx, fmt.Sprintf("the scheduler to bind the pods of %s %s/%s or mark them unschedulable", s.Via, s.Pod.Namespace, s.Pod.Name), c.timeout(), pollInterval, func(ctx context.Context) (bool, string, error) {
		list, err := c.Client.CoreV1().Pods(s.Pod.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, "", err
		}
		out = out[:0]
		undecided := 0
		for i := range list.Items {
			p := &list.Items[i]
			out = append(out, p)
			if p.Spec.NodeName == "" && !unschedulable(p) && len(p.Spec.SchedulingGates) == 0 {
				undecided++
			}
		}
		return len(out) > 0 && undecided == 0, fmt.Sprintf("%d pods, %d not yet bound or marked unschedulable", len(out), undecided), nil
	})
	var te *wait.TimeoutError
	if errors.As(err, &te) && len(out) == 0 {
		return nil, nil
	}
	return out, err
}

// unschedulable: the scheduler tried the pod and found no node. A
// SchedulingGated condition is not that: it may outlive the gate.
func unschedulable(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason != corev1.PodReasonSchedulingGated {
			return true
		}
	}
	return false
}

// remove deletes the shape's objects and pods. A placed shape's pods are
// waited for until gone, so the next shape finds the capacity free; gated
// pods hold nothing, and Sweep waits for them at the end.
func (c *Cluster) remove(ctx context.Context, s Shape, wait_ bool) {
	ns, name := s.Pod.Namespace, s.Pod.Name
	zero := int64(0)
	bg := metav1.DeletePropagationBackground
	if s.Via != ViaPod {
		_ = deleteWorkload(ctx, c.Client, ns, name, s.Via, metav1.DeleteOptions{GracePeriodSeconds: &zero, PropagationPolicy: &bg})
	}
	sel := labels.Set{LabelShape: name}.String()
	if !wait_ {
		_ = c.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: sel})
		return
	}
	_ = wait.Every(ctx, fmt.Sprintf("the pods of %s %s/%s to be deleted", s.Via, ns, name), c.timeout(), pollInterval, func(ctx context.Context) (bool, string, error) {
		if err := c.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: sel}); err != nil && !apierrors.IsNotFound(err) {
			return false, "", err
		}
		list, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, "", err
		}
		return len(list.Items) == 0, fmt.Sprintf("%d left", len(list.Items)), nil
	})
}

// Sweep removes every workload and pod of the rule's shapes in the
// namespaces given and waits until the pods are gone (a controller whose
// pod was deleted before the controller itself may have made another).
// Each poll lists each kind once across the namespaces and deletes only
// where something of the rule is left.
func (c *Cluster) Sweep(ctx context.Context, r Rule, namespaces []string) error {
	sel := labels.Set{LabelRule: r.short()}.String()
	zero := int64(0)
	bg := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero, PropagationPolicy: &bg}
	list := metav1.ListOptions{LabelSelector: sel}
	in := func(ns string) bool { return slices.Contains(namespaces, ns) }
	return wait.For(ctx, "the shapes of "+r.Check+" to be deleted", c.timeout(), func(ctx context.Context) (bool, string, error) {
		deploys, err := c.Client.AppsV1().Deployments("").List(ctx, list)
		if err != nil {
			return false, "", err
		}
		sets, err := c.Client.AppsV1().StatefulSets("").List(ctx, list)
		if err != nil {
			return false, "", err
		}
		jobs, err := c.Client.BatchV1().Jobs("").List(ctx, list)
		if err != nil {
			return false, "", err
		}
		pods, err := c.Client.CoreV1().Pods("").List(ctx, list)
		if err != nil {
			return false, "", err
		}
		type target struct {
			ns   string
			kind string
		}
		var todo []target
		add := func(ns, kind string, going bool) {
			if in(ns) && !going && !slices.Contains(todo, target{ns, kind}) {
				todo = append(todo, target{ns, kind})
			}
		}
		for _, o := range deploys.Items {
			add(o.Namespace, ViaDeployment, o.DeletionTimestamp != nil)
		}
		for _, o := range sets.Items {
			add(o.Namespace, ViaStatefulSet, o.DeletionTimestamp != nil)
		}
		for _, o := range jobs.Items {
			add(o.Namespace, ViaJob, o.DeletionTimestamp != nil)
		}
		left := 0
		for _, p := range pods.Items {
			if in(p.Namespace) {
				left++
				add(p.Namespace, ViaPod, p.DeletionTimestamp != nil)
			}
		}
		for _, t := range todo {
			var err error
			switch t.kind {
			case ViaDeployment:
				err = c.Client.AppsV1().Deployments(t.ns).DeleteCollection(ctx, del, list)
			case ViaStatefulSet:
				err = c.Client.AppsV1().StatefulSets(t.ns).DeleteCollection(ctx, del, list)
			case ViaJob:
				err = c.Client.BatchV1().Jobs(t.ns).DeleteCollection(ctx, del, list)
			default:
				err = c.Client.CoreV1().Pods(t.ns).DeleteCollection(ctx, del, list)
			}
			if err != nil && !apierrors.IsNotFound(err) {
				return false, "", err
			}
		}
		return left == 0 && len(todo) == 0, fmt.Sprintf("%d pods left", left), nil
	})
}

func (c *Cluster) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return 20 * time.Second
}

// Node returns the oracle's view of a node by name: one of Nodes, or one
// that came since, read now and kept (shapes are judged one at a time).
func (c *Cluster) Node(ctx context.Context, name string) (Node, bool, error) {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n, true, nil
		}
	}
	if c.Describe == nil {
		return Node{}, false, nil
	}
	got, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Node{}, false, nil // gone since the pod was bound
	} else if err != nil {
		return Node{}, false, fmt.Errorf("reading node %s, where a shape's pod landed: %w", name, err)
	}
	n, ok := c.Describe(got)
	if ok {
		c.Nodes = append(c.Nodes, n)
	}
	return n, ok, nil
}

// PodsOn lists the pods bound to a node.
func (c *Cluster) PodsOn(ctx context.Context, node string) ([]*corev1.Pod, error) {
	list, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func createWorkload(ctx context.Context, cs kubernetes.Interface, ns string, obj runtime.Object) error {
	var err error
	switch o := obj.(type) {
	case *appsv1.Deployment:
		_, err = cs.AppsV1().Deployments(ns).Create(ctx, o, metav1.CreateOptions{})
	case *appsv1.StatefulSet:
		_, err = cs.AppsV1().StatefulSets(ns).Create(ctx, o, metav1.CreateOptions{})
	case *batchv1.Job:
		_, err = cs.BatchV1().Jobs(ns).Create(ctx, o, metav1.CreateOptions{})
	default:
		err = fmt.Errorf("explore: cannot create a %T", obj)
	}
	return err
}

func deleteWorkload(ctx context.Context, cs kubernetes.Interface, ns, name, via string, opt metav1.DeleteOptions) error {
	switch via {
	case ViaDeployment:
		return cs.AppsV1().Deployments(ns).Delete(ctx, name, opt)
	case ViaStatefulSet:
		return cs.AppsV1().StatefulSets(ns).Delete(ctx, name, opt)
	case ViaJob:
		return cs.BatchV1().Jobs(ns).Delete(ctx, name, opt)
	}
	return nil
}

// awaitSight waits until the simulated kubelet has recorded what the
// pod's containers see (fakegpu.AnnotationGPUSight), or the pod ended (a
// kubelet refused it: it sees nothing), or the kubelet holds every
// container unstarted for claims it cannot prepare (it sees nothing).
// A pod on a real kubelet never gets the record: it comes back as it was
// at the deadline, judged as seeing nothing. A pod deleted before its
// kubelet decided comes back nil: it held nothing, and a copy read
// earlier is not what it became. So does a pod whose node is gone before
// its kubelet decided (a node the autoscaler removed since the space was
// read, named by nodeName): no kubelet admitted it, so it holds nothing
// and sees nothing, and it is no tenant's pod on that node any more.
func (c *Cluster) awaitSight(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
	out := p
	var nodeRead time.Time
	err := wait.Every(ctx, fmt.Sprintf("the simulated kubelet to record what pod %s/%s's containers see", p.Namespace, p.Name), c.timeout(), pollInterval, func(ctx context.Context) (bool, string, error) {
		got, err := c.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			out = nil
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		out = got
		sight, recorded, _ := fakegpu.DecodePodSight(got.Annotations)
		ended := got.Status.Phase == corev1.PodFailed || got.Status.Phase == corev1.PodSucceeded
		// A container whose image changed restarts with it, and an
		// ephemeral container starts: each is judged when it does.
		for _, ctr := range got.Spec.Containers {
			if was, ok := sight[ctr.Name]; recorded && ok && was.Image != "" && was.Image != ctr.Image {
				recorded = false
			}
		}
		for _, ctr := range got.Spec.EphemeralContainers {
			if _, ok := sight[ctr.Name]; recorded && !ok {
				recorded = false
			}
		}
		if recorded || ended || refusedToStart(got) {
			return true, "", nil
		}
		// Once a second: most pods are recorded within a poll or two.
		if time.Since(nodeRead) >= time.Second {
			nodeRead = time.Now()
			if _, err := c.Client.CoreV1().Nodes().Get(ctx, got.Spec.NodeName, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				out = nil
				return true, "", nil
			} else if err != nil {
				return false, "", err
			}
		}
		return false, "phase " + string(got.Status.Phase) + ", what its containers see (as they are now) not recorded yet", nil
	})
	var te *wait.TimeoutError
	if errors.As(err, &te) {
		return out, nil
	}
	return out, err
}

// refusedToStart: the simulated kubelet could not prepare the pod's DRA
// claims and holds every container waiting (fakegpu.DRAPrepareFailed): no
// container started, so none sees anything, and none will while the claim
// stays unprepared. It is judged then, as the cluster shows it: held
// unstarted. (A shared claim someone else allocated may still be reserved
// for it later; what its containers would see then is not judged, which
// can miss a violation, never invent one.)
func refusedToStart(p *corev1.Pod) bool {
	if len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != fakegpu.DRAPrepareFailed {
			return false
		}
	}
	return true
}

// holdsOnNode reports whether a pod bound to node holds a GPU there: an
// nvidia.com/ or DeviceClass resource the kubelet admitted it with, or a
// ResourceClaim the scheduler allocated and reserved for it. A pod bound
// by nodeName skips the scheduler, so its claims are never allocated, and
// the kubelet refuses a claim not reserved for the pod (dra-facts §4 "Kubelet
// and the DRA plugin", FailedPrepareDynamicResources): it holds nothing.
// Nor does it hold an extended resource the node does not advertise: the
// kubelet drops those before its fit (kubelet-facts §1.4,
// removeMissingExtendedResources), so a DeviceClass's implicit resource is
// held only through the claim the scheduler made for it, which the pod's
// status names. A claim that cannot be read counts as held, erring toward
// a violation a person reads.
func (c *Cluster) holdsOnNode(ctx context.Context, p *corev1.Pod, node *corev1.Node) bool {
	if p.Status.ExtendedResourceClaimStatus != nil {
		return true
	}
	for name := range GPURequests(p) {
		if node == nil {
			return true
		}
		if _, advertised := node.Status.Allocatable[corev1.ResourceName(name)]; advertised {
			return true
		}
	}
	for _, name := range explain.ClaimNames(p) {
		if name == "" {
			continue // its template's claim was never made
		}
		claim, err := c.Client.ResourceV1().ResourceClaims(p.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return !apierrors.IsNotFound(err)
		}
		if claim.Status.Allocation != nil && slices.ContainsFunc(claim.Status.ReservedFor, func(r resourcev1.ResourceClaimConsumerReference) bool { return r.UID == p.UID }) {
			return true
		}
	}
	return false
}
