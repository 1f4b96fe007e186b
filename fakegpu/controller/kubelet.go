// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/gpupool/gpupool/fakegpu"
)

// reconcilePod plays the kubelet for GPU pods bound to simulated GPU
// nodes: it judges every pod on the pod's node (memory on a shared GPU
// depends on the neighbours) and applies the verdicts not yet applied.
func (c *Controller) reconcilePod(ctx context.Context, key string) (time.Duration, error) {
	obj, exists, err := c.pods.GetStore().GetByKey(key)
	if err != nil || !exists {
		return 0, err
	}
	pod := obj.(*corev1.Pod)
	nobj, exists, err := c.nodes.GetStore().GetByKey(pod.Spec.NodeName)
	if err != nil || !exists {
		return 0, err
	}
	node := nobj.(*corev1.Node)
	inv, isGPU, err := fakegpu.Inventory(node.Annotations)
	if !isGPU || err != nil || fakegpu.RealKubelet(node.Annotations) {
		return 0, nil
	}
	stack, _, stackErr := c.currentStack()
	if stackErr != nil {
		return 0, nil
	}
	onNode, err := c.pods.GetIndexer().ByIndex("spec.nodeName", node.Name)
	if err != nil {
		onNode = c.podsOnNodeSlow(node.Name)
	}
	pods := make([]*corev1.Pod, 0, len(onNode))
	for _, o := range onNode {
		pods = append(pods, o.(*corev1.Pod))
	}
	if refused, err := c.admitOnce(ctx, node, pods, pod); refused || err != nil {
		return 0, err
	}
	var requeue time.Duration
	if len(podClaimNames(pod)) > 0 {
		if requeue, err = c.reconcileClaims(ctx, node, pod); err != nil {
			return 0, err
		}
	}
	judged := judgeNode(stack, node, inv, pods, c.gpuPod, c.checkpoint, time.Now().UnixNano())
	// A real kubelet's device manager and its node's status agree. The
	// informer's node may not show yet a write the scheduler already bound
	// the pod on (the stack's own: a MIG layout applied, an autoscaled
	// node taken over): a refusal judged on such a node is no kubelet's.
	// The pod is refused only on the node as the apiserver has it; a
	// newer one requeues it (its update requeues the node's pods too).
	for _, j := range judged {
		if j.pod.UID == pod.UID && j.verdict.Outcome == fakegpu.OutcomeAdmissionRejected && !alreadyJudged(j.pod, j.verdict.Outcome) {
			fresh, err := c.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
			if err != nil {
				return 0, ignoreNotFound(err)
			}
			if fresh.ResourceVersion != node.ResourceVersion {
				return 100 * time.Millisecond, nil
			}
		}
	}
	// A write that fails for a neighbour (a conflict with kwok, mostly) is
	// retried under the neighbour's own key: it must not hold back this
	// pod's record, nor put this pod's retries behind its backoff.
	var own error
	for _, j := range judged {
		if err := ignoreNotFound(c.applyJudgement(ctx, node, j)); err != nil {
			if j.pod.UID == pod.UID {
				own = err
			} else {
				if !apierrors.IsConflict(err) {
					c.trace("fakegpu: %s/%s: %v", j.pod.Namespace, j.pod.Name, err)
				}
				c.podQueue.AddRateLimited(j.pod.Namespace + "/" + j.pod.Name)
			}
		}
	}
	if own != nil {
		return 0, own
	}
	for _, j := range judged {
		if j.pod.UID == pod.UID {
			var v *fakegpu.Verdict
			if anyGPULimit(j.pod) {
				v = &j.verdict
			}
			if err := c.recordSight(ctx, stack, node, inv, j.pod, v); err != nil {
				return 0, ignoreNotFound(err)
			}
		}
	}
	return requeue, nil
}

// applyJudgement writes a pod's allocation record, when not written yet,
// and the status its verdict calls for.
func (c *Controller) applyJudgement(ctx context.Context, node *corev1.Node, j judgement) error {
	p, v := j.pod, j.verdict
	if j.record != nil && !c.opt.SkipDeviceRecords {
		patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{
			fakegpu.AnnotationVisibleDevices: strings.Join(j.record.devices, ","),
			fakegpu.AnnotationAllocatedAt:    strconv.FormatInt(j.record.at, 10),
			fakegpu.AnnotationNoGPU:          nilIfEmpty(j.record.noGPU),
		}}}
		b, _ := json.Marshal(patch)
		if _, err := c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, b, metav1.PatchOptions{FieldManager: "fakegpu"}); err != nil {
			return err
		}
	}
	if v.Outcome == fakegpu.OutcomeRunning || alreadyJudged(p, v.Outcome) {
		return nil
	}
	// A running container can crash or be OOMKilled only once kwok has
	// started it; judged earlier, kwok's pod-ready stage would overwrite
	// the verdict. The pod's next update requeues it.
	if v.Outcome != fakegpu.OutcomeAdmissionRejected && p.Status.Phase != corev1.PodRunning {
		return nil
	}
	if err := c.applyVerdict(ctx, p, v); err != nil {
		return err
	}
	c.trace("fakegpu: pod %s/%s on %s: %s", p.Namespace, p.Name, node.Name, v.Outcome)
	return nil
}

// judgement is the simulated kubelet's decision for one pod: its verdict
// and, when the pod does not carry its allocation yet, the record to write.
type judgement struct {
	pod     *corev1.Pod
	verdict fakegpu.Verdict
	record  *allocation
}

// judgeNode judges the live GPU pods on one node, as the informer shows
// them, in arrival order. An allocation is made once per pod and kept in
// the checkpoint before it is written: the informer may not show the
// controller's own writes yet, and allocating again from that stale view
// would hand a device already given away to a second pod.
func judgeNode(stack *fakegpu.Stack, node *corev1.Node, inv fakegpu.NodeInventory, onNode []*corev1.Pod, gpuPod func(*corev1.Pod) fakegpu.GPUPod, cp *deviceCheckpoint, now int64) []judgement {
	var gpuPods []fakegpu.GPUPod
	created := map[string]int64{}
	byKey := map[string]*corev1.Pod{}
	for _, p := range onNode {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded || alreadyJudged(p, fakegpu.OutcomeOOMKilled) {
			continue
		}
		gp := gpuPod(p)
		if a, ok := cp.get(p.UID); ok {
			gp.Devices, gp.AllocatedAt = a.devices, a.at
		}
		gpuPods = append(gpuPods, gp)
		created[gp.Key] = p.CreationTimestamp.UnixNano()
		byKey[gp.Key] = p
	}
	fakegpu.SortPods(gpuPods, created)
	capacity := nvidiaCapacity(node)
	unhealthy := map[string]bool{}
	for _, id := range strings.Split(node.Annotations[fakegpu.AnnotationUnhealthyDevices], ",") {
		if id != "" {
			unhealthy[id] = true
		}
	}
	verdicts := stack.KubeletOn(fakegpu.KubeletNode{Name: node.Name, Labels: node.Labels, Capacity: capacity, Inventory: inv, Unhealthy: unhealthy}, gpuPods)
	var out []judgement
	for i, gp := range gpuPods { // in arrival order, so allocation times keep it
		p, v := byKey[gp.Key], verdicts[gp.Key]
		j := judgement{pod: p, verdict: v}
		if len(v.Devices) > 0 {
			a, ok := cp.get(p.UID)
			if !ok {
				a = allocation{devices: v.Devices, at: now + int64(i)}
				if v.Outcome == fakegpu.OutcomeNoGPUVisible {
					a.noGPU = v.Message
				}
				cp.put(p.UID, a)
			}
			if p.Annotations[fakegpu.AnnotationVisibleDevices] == "" {
				j.record = &a
			}
		}
		out = append(out, j)
	}
	return out
}

func (c *Controller) podsOnNodeSlow(node string) []any {
	var out []any
	for _, o := range c.pods.GetStore().List() {
		if o.(*corev1.Pod).Spec.NodeName == node {
			out = append(out, o)
		}
	}
	return out
}

func (c *Controller) gpuPod(p *corev1.Pod) fakegpu.GPUPod {
	gp := fakegpu.GPUPod{Key: p.Namespace + "/" + p.Name, Containers: deviceManagerRequests(p)}
	if rc := p.Spec.RuntimeClassName; rc != nil {
		if o, ok, _ := c.rcs.GetStore().GetByKey(*rc); ok {
			gp.RuntimeHandler = handlerOf(o)
		}
	}
	if v, err := strconv.ParseInt(p.Annotations[fakegpu.AnnotationGPUMemory], 10, 64); err == nil {
		gp.MemoryMiB = v
	}
	if d := p.Annotations[fakegpu.AnnotationVisibleDevices]; d != "" {
		gp.Devices = strings.Split(d, ",")
		gp.AllocatedAt, _ = strconv.ParseInt(p.Annotations[fakegpu.AnnotationAllocatedAt], 10, 64)
	}
	return gp
}

// ContainerRequests lists a pod's containers' nvidia.com/ limits in the
// order the kubelet allocates devices: init containers, then the others.
func ContainerRequests(p *corev1.Pod) []fakegpu.ContainerRequest {
	var out []fakegpu.ContainerRequest
	add := func(ctrs []corev1.Container, init bool) {
		for _, ctr := range ctrs {
			c := fakegpu.ContainerRequest{Name: ctr.Name, Init: init, Limits: map[string]int64{}}
			c.Restartable = init && ctr.RestartPolicy != nil && *ctr.RestartPolicy == corev1.ContainerRestartPolicyAlways
			for name, q := range ctr.Resources.Limits {
				if strings.HasPrefix(string(name), fakegpu.LabelPrefix) {
					c.Limits[string(name)] = q.Value()
				}
			}
			out = append(out, c)
		}
	}
	add(p.Spec.InitContainers, true)
	add(p.Spec.Containers, false)
	return out
}

// deviceManagerRequests are ContainerRequests less the limits the
// scheduler mapped to the pod's DRA claim: those the kubelet's device
// manager skips (dra-facts §3 "Kubelet").
func deviceManagerRequests(p *corev1.Pod) []fakegpu.ContainerRequest {
	reqs := ContainerRequests(p)
	served := draServedLimits(p)
	for _, r := range reqs {
		for name := range served[r.Name] {
			delete(r.Limits, name)
		}
	}
	return reqs
}

// alreadyJudged reports whether the pod's status already shows the outcome.
func alreadyJudged(p *corev1.Pod, outcome string) bool {
	switch outcome {
	case fakegpu.OutcomeAdmissionRejected:
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == outcome
	case fakegpu.OutcomeNoGPUVisible:
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Waiting != nil && cs.State.Waiting.Reason == outcome {
				return true
			}
		}
	case fakegpu.OutcomeOOMKilled:
		for _, cs := range p.Status.ContainerStatuses {
			if (cs.State.Terminated != nil && cs.State.Terminated.Reason == outcome) || (cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.Reason == outcome) {
				return true
			}
		}
	}
	return false
}

// applyVerdict writes the pod status a real kubelet would report.
func (c *Controller) applyVerdict(ctx context.Context, p *corev1.Pod, v fakegpu.Verdict) error {
	now := metav1.Now()
	status := p.Status.DeepCopy()
	switch v.Outcome {
	case fakegpu.OutcomeAdmissionRejected:
		// Kubelet admission: the pod never starts and is not retried.
		status.Phase, status.Reason, status.Message = corev1.PodFailed, v.Outcome, v.Message
		status.ContainerStatuses = nil
		setCondition(status, corev1.PodReady, corev1.ConditionFalse, v.Outcome, now)
	case fakegpu.OutcomeNoGPUVisible:
		status.ContainerStatuses = containerStatuses(p, func(cs *corev1.ContainerStatus) {
			cs.Ready, cs.Started = false, ptr(false)
			cs.RestartCount++
			cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: v.Message, FinishedAt: now}}
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: v.Outcome, Message: "back-off restarting failed container: " + v.Message}}
		})
		setCondition(status, corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", now)
		setCondition(status, corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady", now)
	case fakegpu.OutcomeOOMKilled:
		term := &corev1.ContainerStateTerminated{ExitCode: 137, Reason: v.Outcome, Message: v.Message, FinishedAt: now}
		restart := p.Spec.RestartPolicy != corev1.RestartPolicyNever
		status.ContainerStatuses = containerStatuses(p, func(cs *corev1.ContainerStatus) {
			cs.Ready = false
			if restart {
				cs.RestartCount++
				cs.LastTerminationState = corev1.ContainerState{Terminated: term}
				cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off restarting OOMKilled container"}}
			} else {
				cs.State = corev1.ContainerState{Terminated: term}
			}
		})
		if !restart {
			status.Phase = corev1.PodFailed
		}
		setCondition(status, corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", now)
	default:
		return nil
	}
	p = p.DeepCopy()
	p.Status = *status
	_, err := c.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: "fakegpu"})
	return err
}

// failPodsOnRepartition marks GPU pods on a node whose MIG layout changed
// under them as failed: their devices are gone. The MIG manager does not
// evict (MP: mig-manager), so this is what a missing drain costs.
func (c *Controller) failPodsOnRepartition(ctx context.Context, node *corev1.Node, from, to string) error {
	pods, err := c.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node.Name).String()})
	if err != nil {
		return err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded || !anyGPULimit(p) {
			continue
		}
		msg := fmt.Sprintf("the MIG layout of node %s changed from %s to %s while the pod ran; its GPU devices no longer exist", node.Name, from, to)
		if err := c.failPod(ctx, p, "GPUDevicesRemoved", msg); err != nil {
			return err
		}
	}
	return nil
}

// failPod ends a running GPU pod whose devices went away: Failed, each
// container terminated with reason, and an event saying why. The pod is
// re-read on a conflict: a crash-looping pod's status is written by others
// too, and the layout change that called for this happens once, so a lost
// write would leave the pod running on devices that no longer exist.
func (c *Controller) failPod(ctx context.Context, p *corev1.Pod, reason, msg string) error {
	failed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		now := metav1.Now()
		p = p.DeepCopy()
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return nil
		}
		p.Status.Phase = corev1.PodFailed
		p.Status.Reason = reason
		p.Status.Message = msg
		p.Status.ContainerStatuses = containerStatuses(p, func(cs *corev1.ContainerStatus) {
			cs.Ready = false
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: reason, Message: msg, FinishedAt: now}}
		})
		setCondition(&p.Status, corev1.PodReady, corev1.ConditionFalse, reason, now)
		_, err := c.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: "fakegpu"})
		if apierrors.IsConflict(err) {
			fresh, gerr := c.client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			p = fresh
		}
		failed = err == nil
		return err
	})
	if err != nil {
		return ignoreNotFound(err)
	}
	if failed {
		c.recorder.Eventf(p, corev1.EventTypeWarning, reason, "%s", msg)
	}
	return nil
}

func anyGPULimit(p *corev1.Pod) bool {
	for _, c := range deviceManagerRequests(p) {
		for _, n := range c.Limits {
			if n > 0 {
				return true
			}
		}
	}
	return false
}

// containerStatuses returns a status per container (creating missing
// ones), each passed through edit.
func containerStatuses(p *corev1.Pod, edit func(*corev1.ContainerStatus)) []corev1.ContainerStatus {
	byName := map[string]corev1.ContainerStatus{}
	for _, cs := range p.Status.ContainerStatuses {
		byName[cs.Name] = cs
	}
	var out []corev1.ContainerStatus
	for _, ctr := range p.Spec.Containers {
		cs, ok := byName[ctr.Name]
		if !ok {
			cs = corev1.ContainerStatus{Name: ctr.Name, Image: ctr.Image}
		}
		edit(&cs)
		out = append(out, cs)
	}
	return out
}

func setCondition(s *corev1.PodStatus, t corev1.PodConditionType, st corev1.ConditionStatus, reason string, now metav1.Time) {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			if s.Conditions[i].Status != st {
				s.Conditions[i].LastTransitionTime = now
			}
			s.Conditions[i].Status, s.Conditions[i].Reason = st, reason
			return
		}
	}
	s.Conditions = append(s.Conditions, corev1.PodCondition{Type: t, Status: st, Reason: reason, LastTransitionTime: now})
}

func ptr[T any](v T) *T { return &v }

// nilIfEmpty is v for a merge patch, nil (delete) when empty.
func nilIfEmpty(v string) any {
	if v == "" {
		return nil
	}
	return v
}
