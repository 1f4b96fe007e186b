package explore

import (
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
	want := []Update{{Kind: UpdateImage, Container: "main", Image: "img:1"}, {Kind: UpdateEphemeral, Ephemeral: eph}}
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
	if len(got.Updates) != 2 || got.Updates[0] != want[0] || got.Updates[1].Ephemeral.Name != "debug" || !*got.Updates[1].Ephemeral.SecurityContext.Privileged {
		t.Errorf("updates read back %+v, want %+v", got.Updates, want)
	}
	if _, ok := got.Pod.Annotations[AnnotationUpdates]; ok {
		t.Error("the pod is submitted with the updates' annotation still on it")
	}
	if s := got.Updates[1].String(); !strings.Contains(s, "privileged") || !strings.Contains(s, "NVIDIA_VISIBLE_DEVICES=all") {
		t.Errorf("the update says %q", s)
	}
	bad := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationUpdates: `[{"kind":"image"}]`}}}
	if _, err := takeUpdates(bad); err == nil {
		t.Error("an image update naming no container: want an error")
	}
}
