// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package expect

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The taint-eviction controller's words (k8s v1.37.2
// pkg/controller/tainteviction/taint_eviction.go): the event it records on
// a pod it deletes, and the condition it sets on the pod first
// (addConditionAndDeletePod).
const (
	ReasonTaintEviction   = "TaintManagerEviction"
	markedForDeletion     = "Marking for deletion"
	ReasonDeletionByTaint = "DeletionByTaintManager"
)

// TaintEvicted says whether the events record the taint-eviction
// controller marking this pod for deletion, and returns the event's
// message. The controller names the pod by namespace and name only, no
// UID (emitPodDeletionEvent), and the events of one name aggregate, so a
// pod of the same name made again would inherit its predecessor's: an
// event counts when it was last seen no earlier than the pod's creation,
// both to the second.
func TaintEvicted(events []corev1.Event, pod *corev1.Pod) (string, bool) {
	created := pod.CreationTimestamp.Time.Unix()
	for _, e := range events {
		if e.Reason != ReasonTaintEviction || !strings.HasPrefix(e.Message, markedForDeletion) ||
			e.InvolvedObject.Kind != "Pod" || e.InvolvedObject.Namespace != pod.Namespace || e.InvolvedObject.Name != pod.Name {
			continue
		}
		if (e.InvolvedObject.UID == "" || e.InvolvedObject.UID == pod.UID) && lastSeen(e).Unix() >= created {
			return e.Message, true
		}
	}
	return "", false
}

// DeletingForTaint says whether a pod still visible is being deleted by
// the taint-eviction controller: the DisruptionTarget condition it sets
// before it deletes.
func DeletingForTaint(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == ReasonDeletionByTaint {
			return true
		}
	}
	return false
}

// lastSeen is when an event was last recorded, however its recorder
// wrote it.
func lastSeen(e corev1.Event) time.Time {
	latest := eventTime(e)
	if e.Series != nil && e.Series.LastObservedTime.After(latest) {
		latest = e.Series.LastObservedTime.Time
	}
	if e.LastTimestamp.After(latest) {
		latest = e.LastTimestamp.Time
	}
	return latest
}
