// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package explore

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A counterexample's updates survive its reproduction: the corpus case
// read back makes the same updates, and its pod no longer carries them.
func TestUpdatesRoundTripThroughTheCorpus(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "img@sha256:0"}}}}
	eph := &corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "img@sha256:0",
		Env: []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}}, SecurityContext: &corev1.SecurityContext{Privileged: ptr(true)}}}
	retarget := Update{Kind: UpdateRetarget, Why: "aimed at pool l4", Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		NodeSelector: map[string]string{"trust": "tenant-a"}}
	want := []Update{{Kind: UpdateImage, Container: "main", Image: "img:1"}, {Kind: UpdateEphemeral, Ephemeral: eph}, retarget}
	data, err := Reproduction("a case", Shape{Via: ViaPod, Pod: pod, Updates: want}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := splitYAML(data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := shapeOf(docs[len(docs)-1])
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Updates) != 3 || !reflect.DeepEqual(got.Updates[0], want[0]) || got.Updates[1].Ephemeral.Name != "debug" || !*got.Updates[1].Ephemeral.SecurityContext.Privileged ||
		!reflect.DeepEqual(got.Updates[2], retarget) {
		t.Errorf("updates read back %+v, want %+v", got.Updates, want)
	}
	if _, ok := got.Pod.Annotations[AnnotationUpdates]; ok {
		t.Error("the pod is submitted with the updates' annotation still on it")
	}
	if s := got.Updates[1].String(); !strings.Contains(s, "privileged") || !strings.Contains(s, "NVIDIA_VISIBLE_DEVICES=all") {
		t.Errorf("the update says %q", s)
	}
	if s := got.Updates[2].String(); !strings.Contains(s, "still gated") || !strings.Contains(s, "trust:tenant-a") {
		t.Errorf("the retarget says %q", s)
	}
	bad := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationUpdates: `[{"kind":"image"}]`}}}
	if _, err := takeUpdates(bad); err == nil {
		t.Error("an image update naming no container: want an error")
	}
}

// A retarget only adds, and ungates: what the API allows a gated pod
// (pod-update-facts §1.3, §2), so the update is never refused as invalid.
func TestRetargetOnlyAddsAndUngates(t *testing.T) {
	spec := corev1.PodSpec{
		NodeSelector:    map[string]string{"sku": "l4"},
		Tolerations:     []corev1.Toleration{{Key: "sku", Operator: corev1.TolerationOpEqual, Value: "l4", Effect: corev1.TaintEffectNoSchedule}},
		SchedulingGates: []corev1.PodSchedulingGate{{Name: TenantGate}},
	}
	aff := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "trust", Operator: corev1.NodeSelectorOpIn, Values: []string{"tenant-a"}}}}}}
	retarget(&spec, Update{Kind: UpdateRetarget, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, NodeSelector: map[string]string{"pool": "x"}, Affinity: aff})
	if spec.SchedulingGates != nil {
		t.Error("the gate stays")
	}
	if len(spec.Tolerations) != 2 || spec.Tolerations[0].Key != "sku" {
		t.Errorf("tolerations %v: want the old one kept and one added", spec.Tolerations)
	}
	if !reflect.DeepEqual(spec.NodeSelector, map[string]string{"sku": "l4", "pool": "x"}) {
		t.Errorf("nodeSelector %v", spec.NodeSelector)
	}
	if !reflect.DeepEqual(spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution, aff) {
		t.Errorf("affinity %v", spec.Affinity)
	}
}
