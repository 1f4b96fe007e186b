// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// The caches keep objects without managed fields; what is not an object
// (a deletion tombstone) passes through untouched.
func TestStripManagedFields(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kwok"}}}}
	out, err := StripManagedFields(pod)
	if err != nil || out.(*corev1.Pod).ManagedFields != nil {
		t.Fatalf("managed fields kept: %v, %v", out.(*corev1.Pod).ManagedFields, err)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}
	if out, err := StripManagedFields(tomb); err != nil || out != any(tomb) {
		t.Fatalf("a tombstone came back changed: %v, %v", out, err)
	}
}
