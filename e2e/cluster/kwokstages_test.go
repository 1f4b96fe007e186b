// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"text/template"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	stagev1alpha1 "sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	"sigs.k8s.io/yaml"
)

// kwok's pod Stages, made conditional, patch the status kwok's own
// template renders and, beside it, the resourceVersion of the pod read.
func TestPodStagesPatchOnlyThePodTheyRead(t *testing.T) {
	got, err := podStagesConditional([]string{podfast.DefaultPodReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete})
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, podfast.DefaultPodDelete, got[2], "a Stage that writes no status passes through")

	// kwok renders a template against the object as JSON and reads the
	// result as YAML (gotpl.Renderer.ToJSON); these stand in for the
	// functions kwok's templates call.
	funcs := template.FuncMap{
		"Quote":       func(s any) string { return strconv.Quote(fmt.Sprint(s)) },
		"Now":         func() string { return "2026-12-04T00:00:00Z" },
		"NodeIPsWith": func(string) []string { return []string{"10.0.0.1"} },
		"PodIPsWith":  func(string, bool, string, string, string) []string { return []string{"10.0.0.2"} },
	}
	render := func(text string, obj any) ([]byte, error) {
		tpl, err := template.New("").Funcs(funcs).Parse(text)
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		var data any
		if err := json.Unmarshal(raw, &data); err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if err := tpl.Execute(&buf, data); err != nil {
			return nil, err
		}
		return yaml.YAMLToJSON(buf.Bytes())
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u", ResourceVersion: "42"},
		Spec:       corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "main", Image: "img"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "main", Image: "img", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		}}},
	}
	for i, raw := range []string{podfast.DefaultPodReady, podfast.DefaultPodComplete} {
		var before, after stagev1alpha1.Stage
		require.NoError(t, yaml.Unmarshal([]byte(raw), &before))
		require.NoError(t, yaml.UnmarshalStrict([]byte(got[i]), &after))
		require.Len(t, after.Spec.Next.Patches, 1, before.Name)
		p := after.Spec.Next.Patches[0]
		assert.Equal(t, "status", p.Subresource)
		assert.Empty(t, after.Spec.Next.StatusTemplate)
		assert.Equal(t, before.Spec.Selector, after.Spec.Selector, "the same pods match")

		want, err := render(before.Spec.Next.StatusTemplate, pod)
		require.NoError(t, err, before.Name)
		patch, err := render(p.Template, pod)
		require.NoError(t, err, before.Name)
		var body struct {
			Metadata map[string]any  `json:"metadata"`
			Status   json.RawMessage `json:"status"`
		}
		require.NoError(t, json.Unmarshal(patch, &body), string(patch))
		assert.Equal(t, map[string]any{"resourceVersion": "42"}, body.Metadata, before.Name)
		assert.JSONEq(t, string(want), string(body.Status), before.Name)
	}
}
