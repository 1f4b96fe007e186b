// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package candidate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpupool/gpupool/fakegpu"
)

// The reference twice: hand-written, and as GPU Operator Helm values. The
// simulated stack reads the same configuration from both, except what the
// chart fills in and the hand-written ClusterPolicy leaves to the
// Operator: the operands' versions, the same toolkit in effect.
func TestReferenceTwice(t *testing.T) {
	stack := func(dir string) (*Candidate, *fakegpu.Stack) {
		c, err := Load(dir)
		require.NoError(t, err)
		s, err := fakegpu.StackFromObjects(c.Unstructured(), nil)
		require.NoError(t, err)
		require.NotNil(t, s.Policy, "%s: no ClusterPolicy", dir)
		return c, s
	}
	hand, byHand := stack("../../manifests/candidates/reference")
	helm, byHelm := stack("../../manifests/candidates/reference-helm")

	assert.Equal(t, fakegpu.ToolkitDefaultVersion, byHelm.Policy.ToolkitVersion, "the chart pins the toolkit the Operator defaults to")
	assert.Empty(t, byHand.Policy.ToolkitVersion)
	byHelm.Policy.ToolkitVersion = ""
	assert.Equal(t, byHand, byHelm)

	// The rendered objects replace the reference's, in the reference's
	// places, and say where they came from.
	require.Equal(t, len(hand.Objects), len(helm.Objects))
	rendered := 0
	for i, o := range helm.Objects {
		assert.Equal(t, identity(hand.Objects[i].Unstructured), identity(o.Unstructured))
		if strings.HasPrefix(o.File, "helm template gpu-operator v25.3.4: templates/") {
			rendered++
		}
	}
	assert.Equal(t, 2, rendered, "the ClusterPolicy and the device-plugin ConfigMap")
	assert.NotEqual(t, hand.Fingerprint(), helm.Fingerprint())

	// As loaded, it is a candidate of its own that loads back the same.
	dir := t.TempDir()
	require.NoError(t, helm.WriteLoaded(dir))
	again, err := Load(dir)
	require.NoError(t, err)
	assert.Equal(t, helm.Fingerprint(), again.Fingerprint())
}

// Bad values are refused before any cluster, naming the file or --set and
// the key; nothing of the chart is half-taken.
func TestBadHelmValues(t *testing.T) {
	cases := []struct {
		name, meta, values string
		want               []string
	}{
		{
			name:   "a typo in a values file",
			meta:   "gpuOperator: {valuesFiles: [values.yaml]}",
			values: "devicePlugin:\n  confg: {name: x}\n",
			want:   []string{"spec.gpuOperator.valuesFiles[0] (values.yaml): devicePlugin.confg: the gpu-operator chart v25.3.4 has no such value", "devicePlugin has: args, config,"},
		},
		{
			name: "a typo in a --set",
			meta: "gpuOperator: {set: [mig.stratgy=mixed]}",
			want: []string{`spec.gpuOperator.set[0] ("mig.stratgy=mixed"): mig.stratgy: the gpu-operator chart v25.3.4 has no such value (mig has: strategy)`},
		},
		{
			name: "a --set helm cannot parse",
			meta: "gpuOperator: {set: ['devicePlugin.env[0]name=x']}",
			want: []string{`spec.gpuOperator.set[0] ("devicePlugin.env[0]name=x")`},
		},
		{
			name: "another chart version",
			meta: "gpuOperator: {version: v25.10.0}",
			want: []string{`spec.gpuOperator.version: "v25.10.0": gpupool simulates the GPU Operator v25.3.4`},
		},
		{
			name: "a values file that is not there",
			meta: "gpuOperator: {valuesFiles: [missing.yaml]}",
			want: []string{"spec.gpuOperator.valuesFiles[0] (missing.yaml)", "no such file"},
		},
		{
			name: "a ConfigMap the chart renders without a name",
			meta: "gpuOperator: {set: [devicePlugin.config.create=true, 'devicePlugin.config.data.default=version: v1']}",
			want: []string{"spec.gpuOperator: the chart's templates/plugin_config.yaml rendered with these values"},
		},
		{
			name:   "an object both hand-written and rendered",
			meta:   "gpuOperator: {}",
			values: "",
			want:   []string{"spec.gpuOperator renders ClusterPolicy cluster-policy, which 10-cp.yaml (document 1, ClusterPolicy cluster-policy) also defines"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			meta := "apiVersion: gpupool.dev/v1alpha1\nkind: Candidate\nmetadata: {name: c}\nspec:\n  " + tc.meta + "\n"
			require.NoError(t, os.WriteFile(filepath.Join(dir, MetaFile), []byte(meta), 0o644))
			if tc.values != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "values.yaml"), []byte(tc.values), 0o644))
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, "10-cp.yaml"), []byte("apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\nspec: {}\n"), 0o644))
			_, err := Load(dir)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// Broken candidates written as values changes break what their object
// forms break: the stack reads the same from both, and both list the
// same checks (make mutants holds each to its list).
func TestHelmMutantsMatchTheirObjectForms(t *testing.T) {
	for helmForm, objectForm := range map[string]string{
		"broken-helm-mig-strategy-single":  "broken-mig-strategy-single",
		"broken-helm-mig-manager-disabled": "broken-mig-manager-disabled",
		"broken-helm-default-timesliced":   "broken-default-timesliced",
	} {
		t.Run(helmForm, func(t *testing.T) {
			load := func(name string) (*Candidate, *fakegpu.Stack) {
				c, err := Load(filepath.Join("../../manifests/candidates", name))
				require.NoError(t, err)
				s, err := fakegpu.StackFromObjects(c.Unstructured(), nil)
				require.NoError(t, err)
				require.NotNil(t, s.Policy)
				s.Policy.ToolkitVersion = ""
				return c, s
			}
			h, byHelm := load(helmForm)
			o, byObjects := load(objectForm)
			assert.Equal(t, byObjects, byHelm)
			assert.Equal(t, o.Meta.Spec.Breaks, h.Meta.Spec.Breaks)
		})
	}
}

// A candidate of Helm values alone gets what the install makes: the
// release's namespace (--create-namespace), the ClusterPolicy, and the
// RuntimeClass the Operator then makes from it (stack-facts §6).
func TestHelmValuesAlone(t *testing.T) {
	dir := t.TempDir()
	meta := "apiVersion: gpupool.dev/v1alpha1\nkind: Candidate\nmetadata: {name: c}\nspec:\n  gpuOperator: {set: [operator.runtimeClass=nvidia-gpu]}\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, MetaFile), []byte(meta), 0o644))
	c, err := Load(dir)
	require.NoError(t, err)
	var got []string
	for _, o := range c.Objects {
		got = append(got, o.GetKind()+" "+o.GetName())
	}
	assert.Equal(t, []string{"Namespace gpu-operator", "RuntimeClass nvidia-gpu", "ClusterPolicy cluster-policy"}, got)
	assert.Equal(t, "nvidia-gpu", c.Objects[1].Object["handler"])
}
