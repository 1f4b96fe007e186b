// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package expect

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The controller's event names the pod without a UID; it counts for the
// pod alive when it was last recorded, not for a pod of the same name
// made after it, and its cancelling twin does not count.
func TestTaintEvicted(t *testing.T) {
	at := time.Date(2026, 12, 6, 22, 47, 40, 0, time.UTC)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "p", UID: "u2", CreationTimestamp: metav1.NewTime(at)}}
	event := func(msg string, last time.Time) corev1.Event {
		return corev1.Event{
			InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "t", Name: "p"},
			Reason:         ReasonTaintEviction, Message: msg, LastTimestamp: metav1.NewTime(last),
		}
	}
	_, ok := TaintEvicted([]corev1.Event{event("Marking for deletion Pod t/p", at.Add(500*time.Millisecond))}, pod)
	assert.True(t, ok, "an event of this pod's life, named without a UID")
	_, ok = TaintEvicted([]corev1.Event{event("Marking for deletion Pod t/p", at.Add(-2*time.Second))}, pod)
	assert.False(t, ok, "a predecessor's event")
	_, ok = TaintEvicted([]corev1.Event{event("Cancelling deletion of Pod t/p", at.Add(time.Second))}, pod)
	assert.False(t, ok, "a cancelled deletion")
	other := event("Marking for deletion Pod t/p", at.Add(time.Second))
	other.InvolvedObject.UID = "u1"
	_, ok = TaintEvicted([]corev1.Event{other}, pod)
	assert.False(t, ok, "an event naming another pod's UID")
}

func TestDeletingForTaint(t *testing.T) {
	p := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: ReasonDeletionByTaint}}}}
	assert.True(t, DeletingForTaint(p))
	p.Status.Conditions[0].Reason = "EvictionByEvictionAPI"
	assert.False(t, DeletingForTaint(p))
}
