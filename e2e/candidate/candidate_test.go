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
)

func writeFiles(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	return dir
}

func TestReferenceCandidateLoadsInFileOrder(t *testing.T) {
	c, err := Load(filepath.Join("..", "..", "manifests", "candidates", "reference"))
	require.NoError(t, err)
	assert.Equal(t, "reference", c.Name)
	require.NotEmpty(t, c.Objects)
	assert.Equal(t, "Namespace", c.Objects[0].GetKind(), "00-namespaces.yaml comes first")
	index := map[string]int{}
	for i, o := range c.Objects {
		index[o.File] = i
	}
	assert.Less(t, index["40-device-plugin-config.yaml"], index["50-clusterpolicy.yaml"], "files apply in name order")
	assert.Contains(t, c.FleetPath(), filepath.Join("fleets", "reference.yaml"))
}

func TestBadCandidatesNameFileAndDocument(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"malformed YAML", map[string]string{"10-a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: [\n"},
			[]string{"10-a.yaml", "document 2", "malformed YAML"}},
		{"missing kind and name", map[string]string{"10-a.yaml": "apiVersion: v1\nmetadata: {}\n"},
			[]string{"10-a.yaml", "document 1", "kind, metadata.name: required"}},
		{"defined twice", map[string]string{"10-a.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n", "20-b.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n"},
			[]string{"20-b.yaml", "Namespace x is defined twice", "10-a.yaml"}},
		{"empty", map[string]string{"README.md": "hi"}, []string{"no manifests"}},
		{"bad candidate.yaml", map[string]string{"candidate.yaml": "apiVersion: gpupool.dev/v1alpha1\nkind: Candidate\nspec: {fleeet: x}\n"},
			[]string{"candidate.yaml", "malformed", "fleeet"}},
		{"omit without base", map[string]string{"candidate.yaml": "apiVersion: gpupool.dev/v1alpha1\nkind: Candidate\nspec: {omit: [{kind: A, name: b}]}\n",
			"10-a.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n"}, []string{"spec.omit needs spec.base"}},
		{"patch target missing", map[string]string{"candidate.yaml": "apiVersion: gpupool.dev/v1alpha1\nkind: Candidate\nspec: {patches: [{target: {kind: Namespace, name: why}, patch: {}}]}\n",
			"10-a.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n"}, []string{"spec.patches[0].target: no Namespace why"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, tc.files)
			_, err := Load(dir)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestBaseOmitReplaceAndPatch(t *testing.T) {
	root := writeFiles(t, map[string]string{
		"base/candidate.yaml": "apiVersion: gpupool.dev/v1alpha1\nkind: Candidate\nspec: {fleet: fleet.yaml}\n",
		"base/10-ns.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n",
		"base/20-cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: a}\ndata: {k: v, drop: me}\n",
		"child/candidate.yaml": `apiVersion: gpupool.dev/v1alpha1
kind: Candidate
metadata: {name: child}
spec:
  base: ../base
  omit: [{kind: Namespace, name: b}]
  patches:
    - target: {kind: ConfigMap, name: c}
      patch: {data: {k: patched, drop: null}}
  breaks: [some.check]
`,
		"child/10-ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {own: \"true\"}}\n",
	})
	c, err := Load(filepath.Join(root, "child"))
	require.NoError(t, err)
	assert.Equal(t, "child", c.Name)
	assert.Equal(t, filepath.Join(root, "base", "fleet.yaml"), c.FleetPath(), "the base's fleet is inherited")
	require.Len(t, c.Objects, 2)
	assert.Equal(t, "true", c.Objects[0].GetLabels()["own"], "own objects replace the base's")
	assert.Equal(t, map[string]any{"k": "patched"}, c.Objects[1].Object["data"])
	assert.Equal(t, []string{"some.check"}, c.Meta.Spec.Breaks)

	bad := writeFiles(t, map[string]string{
		"candidate.yaml": "apiVersion: gpupool.dev/v1alpha1\nkind: Candidate\nspec: {base: " + filepath.Join(root, "base") + ", omit: [{kind: Namespace, name: zzz}]}\n",
	})
	_, err = Load(bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.omit[0]: the base has no Namespace zzz")
}

// A Fleet among the manifests is refused at load, the file named, not
// applied to wait for an API no cluster serves.
func TestFleetAmongManifestsIsRefused(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"10-ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n",
		"fleet.yaml": "apiVersion: gpupool.dev/v1alpha1\nkind: Fleet\nmetadata: {name: mine}\nspec: {pools: [{name: cpu, nodes: 1}]}\n",
	})
	_, err := Load(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "fleet.yaml")+", document 1: kind Fleet: a gpupool file, not a manifest for the cluster")
}

// Autoscaler settings come from the base, a child's gates over the
// base's gate by gate, and they are part of the fingerprint: the same
// objects under another Karpenter are another candidate.
func TestAutoscalerSettingsInheritAndFingerprint(t *testing.T) {
	root := writeFiles(t, map[string]string{
		"base/candidate.yaml": "apiVersion: gpupool.dev/v1alpha1\nkind: Candidate\nspec: {autoscaler: {featureGates: {NodeOverlay: true, NodeRepair: true}}}\n",
		"base/10-ns.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n",
		"same/candidate.yaml": "apiVersion: gpupool.dev/v1alpha1\nkind: Candidate\nspec: {base: ../base}\n",
		"off/candidate.yaml":  "apiVersion: gpupool.dev/v1alpha1\nkind: Candidate\nspec: {base: ../base, autoscaler: {featureGates: {NodeOverlay: false}}}\n",
	})
	base, err := Load(filepath.Join(root, "base"))
	require.NoError(t, err)
	same, err := Load(filepath.Join(root, "same"))
	require.NoError(t, err)
	off, err := Load(filepath.Join(root, "off"))
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"NodeOverlay": true, "NodeRepair": true}, same.Meta.Spec.Autoscaler.FeatureGates)
	assert.Equal(t, map[string]bool{"NodeOverlay": false, "NodeRepair": true}, off.Meta.Spec.Autoscaler.FeatureGates)
	assert.Equal(t, base.Fingerprint(), same.Fingerprint())
	assert.NotEqual(t, base.Fingerprint(), off.Fingerprint())

	// Written as loaded, the settings stay.
	dir := t.TempDir()
	require.NoError(t, off.WriteLoaded(dir))
	back, err := Load(dir)
	require.NoError(t, err)
	assert.Equal(t, off.Fingerprint(), back.Fingerprint())
}

// The refused candidate.yaml files of e2e/apis/v1alpha1/testdata/invalid
// are refused by Load too, in a directory with a manifest, with the same
// errors and the file named.
func TestLoadRefusesInvalidMeta(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "apis", "v1alpha1", "testdata", "invalid", "candidate-*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, p := range files {
		t.Run(strings.TrimSuffix(filepath.Base(p), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			dir := writeFiles(t, map[string]string{
				MetaFile:     string(data),
				"10-cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: b}\n",
			})
			_, err = Load(dir)
			require.Error(t, err)
			assert.Contains(t, err.Error(), filepath.Join(dir, MetaFile))
			for _, line := range strings.Split(string(data), "\n") {
				if w, ok := strings.CutPrefix(line, "# want: "); ok {
					assert.Contains(t, err.Error(), w)
				}
			}
		})
	}
}
