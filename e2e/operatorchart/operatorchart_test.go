// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package operatorchart

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpupool/gpupool/e2e/apis/v1alpha1"
)

func render(t *testing.T, set ...string) *Release {
	t.Helper()
	rel, err := Render(Chart, v1alpha1.DefaultGPUOperatorNamespace, "v1.37.2", Values{Set: set, Field: "spec.gpuOperator"})
	require.NoError(t, err)
	return rel
}

func find(ms []Manifest, kind string) *unstructured.Unstructured {
	for _, m := range ms {
		if m.Object.GetKind() == kind {
			return m.Object
		}
	}
	return nil
}

// With no values the chart renders what `helm install gpu-operator` puts
// in: a ClusterPolicy with the chart's defaults (MIG strategy single,
// stack-facts §6), the operator, its RBAC; no ConfigMap of configs.
func TestDefaults(t *testing.T) {
	rel := render(t)
	assert.Equal(t, "v25.3.4", rel.Version)
	cp := find(rel.ForTheStack(), "ClusterPolicy")
	require.NotNil(t, cp)
	strategy, _, _ := unstructured.NestedString(cp.Object, "spec", "mig", "strategy")
	assert.Equal(t, "single", strategy)
	version, _, _ := unstructured.NestedString(cp.Object, "spec", "toolkit", "version")
	assert.Equal(t, "v1.17.8-ubuntu20.04", version, "the chart pins the toolkit (stack-facts §6)")
	assert.Nil(t, find(rel.ForTheStack(), "ConfigMap"))
	assert.NotNil(t, find(rel.Manifests, "Deployment"), "the operator is rendered, not taken")
	assert.Nil(t, find(rel.ForTheStack(), "Deployment"))
	for _, m := range rel.Manifests {
		assert.NotContains(t, m.Template, "charts/", "a dependency's objects are left out")
	}
}

// devicePlugin.config.create with data renders the device-plugin
// ConfigMap into the release's namespace, and the ClusterPolicy names it.
func TestDevicePluginConfigMap(t *testing.T) {
	rel := render(t, "devicePlugin.config.create=true", "devicePlugin.config.name=dp", "devicePlugin.config.default=any",
		"devicePlugin.config.data.any=version: v1")
	cm := find(rel.ForTheStack(), "ConfigMap")
	require.NotNil(t, cm)
	assert.Equal(t, "dp", cm.GetName())
	assert.Equal(t, v1alpha1.DefaultGPUOperatorNamespace, cm.GetNamespace())
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	assert.Equal(t, map[string]string{"any": "version: v1"}, data)
	cp := find(rel.ForTheStack(), "ClusterPolicy")
	name, _, _ := unstructured.NestedString(cp.Object, "spec", "devicePlugin", "config", "name")
	assert.Equal(t, "dp", name)
}

// Free-form values take any key: a list, an empty map, a dependency's.
func TestFreeFormValues(t *testing.T) {
	render(t, "toolkit.env[0].name=A", "toolkit.env[0].value=b", "devicePlugin.resources.limits.cpu=1",
		"node-feature-discovery.anything=1", "global.whatever=x")
}
