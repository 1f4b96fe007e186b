// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpupool/gpupool/fakegpu"
)

const header = "apiVersion: gpupool.dev/v1alpha1\nkind: Fleet\nmetadata: {name: t}\n"

func TestReferenceFleetLoads(t *testing.T) {
	f, err := Load(filepath.Join("..", "..", "manifests", "fleets", "reference.yaml"))
	require.NoError(t, err)
	assert.Equal(t, []string{"cpu", "gpu-a100-mig", "gpu-h100-dra", "gpu-h100-exclusive", "gpu-l4-dra-shared", "gpu-l4-shared"}, f.PoolNames())
	assert.Equal(t, 18, f.TotalNodes())
	dra, ok := f.Pool("gpu-h100-dra")
	require.True(t, ok)
	assert.Equal(t, &DRA{Mode: "gpu", DeviceClasses: []string{"h100.gpu.nvidia.com"}}, dra.DRA)
	assert.False(t, dra.SharesDevices())
	shared, ok := f.Pool("gpu-l4-dra-shared")
	require.True(t, ok)
	assert.True(t, shared.SharesDevices(), "a DRA pool with consumable shares hands a GPU to several claims")
	l4, ok := f.Pool("gpu-l4-shared")
	require.True(t, ok)
	assert.Equal(t, ModeTimeSlicing, l4.Mode())
	assert.Equal(t, 4, l4.Replicated().Replicas)
}

func TestBadFleetsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"unknown SKU lists the catalog", "spec:\n  pools:\n    - {name: gpu, sku: h900, nodes: 1, gpusPerNode: 8}\n",
			[]string{"spec.pools[0] (gpu).sku", `unknown GPU SKU "h900"`, strings.Join(fakegpu.SKUKeys(), ", ")}},
		{"unknown field", "spec:\n  pools:\n    - {name: gpu, sku: l4, nodes: 1, gpusPerNode: 1, gpus: 3}\n",
			[]string{"malformed fleet", "gpus"}},
		{"malformed YAML", "spec: [\n", []string{"malformed fleet"}},
		{"no pools", "spec: {pools: []}\n", []string{"spec.pools: at least one pool"}},
		{"GPU pool without GPUs", "spec:\n  pools:\n    - {name: gpu, sku: l4, nodes: 1}\n", []string{"gpusPerNode: must be 1 to 16"}},
		{"two billion GPUs on a node", "spec:\n  pools:\n    - {name: gpu, sku: h100-80gb, nodes: 1, gpusPerNode: 2000000000}\n",
			[]string{"spec.pools[0] (gpu).gpusPerNode: must be 1 to 16 for a GPU pool, got 2000000000"}},
		{"replicas past the bound", "spec:\n  pools:\n    - {name: gpu, sku: l4, nodes: 1, gpusPerNode: 1, sharing: {mode: time-slicing, timeSlicing: {config: ts, replicas: 100000}}}\n",
			[]string{"sharing.timeSlicing.replicas: at most 128, got 100000"}},
		{"maxPods past the bound", "spec:\n  pools:\n    - {name: cpu, nodes: 1, maxPods: 1000000}\n", []string{"maxPods: must be 0 (110) to 1000"}},
		{"unknown sharing mode", "spec:\n  pools:\n    - {name: gpu, sku: l4, nodes: 1, gpusPerNode: 1, sharing: {mode: vgpu}}\n",
			[]string{"sharing.mode: unknown mode \"vgpu\"", "exclusive, mig, time-slicing, mps"}},
		{"MIG on a GPU without MIG", "spec:\n  pools:\n    - {name: gpu, sku: l4, nodes: 1, gpusPerNode: 1, sharing: {mode: mig, mig: {config: all-1g.5gb, strategy: mixed}}}\n",
			[]string{"l4 is not MIG-capable"}},
		{"time-slicing without replicas", "spec:\n  pools:\n    - {name: gpu, sku: l4, nodes: 1, gpusPerNode: 1, sharing: {mode: time-slicing, timeSlicing: {config: ts}}}\n",
			[]string{"sharing.timeSlicing.replicas: must be >= 2"}},
		{"trust domains do not add up", "spec:\n  pools:\n    - name: gpu\n      sku: l4\n      nodes: 4\n      gpusPerNode: 1\n      trustDomains: [{name: a, nodes: 1}]\n",
			[]string{"trustDomains: node counts add up to 1, but the pool has 4 nodes"}},
		{"bad taint effect", "spec:\n  pools:\n    - {name: cpu, nodes: 1, taints: [{key: a, value: b, effect: Never}]}\n",
			[]string{"taints[0].effect", "Never"}},
		{"unknown DRA mode", "spec:\n  pools:\n    - {name: gpu, sku: h100-80gb, nodes: 1, gpusPerNode: 1, dra: {mode: vgpu}}\n",
			[]string{`spec.pools[0] (gpu).dra.mode: unknown DRA mode "vgpu" (known: gpu, static-mig, dynamic-mig)`}},
		{"dynamic MIG on a GPU without MIG", "spec:\n  pools:\n    - {name: gpu, sku: l4, nodes: 1, gpusPerNode: 1, dra: {mode: dynamic-mig}}\n",
			[]string{"spec.pools[0] (gpu).dra.mode: dynamic-mig needs a MIG-capable GPU; l4 is not"}},
		{"bad consumable shares", "spec:\n  pools:\n    - {name: gpu, sku: l4, nodes: 1, gpusPerNode: 1, dra: {mode: gpu, consumableShares: lots}}\n",
			[]string{`spec.pools[0] (gpu).dra.consumableShares: want memory, unlimited or a count >= 1, got "lots"`}},
		{"bad DeviceClass name", "spec:\n  pools:\n    - {name: gpu, sku: l4, nodes: 1, gpusPerNode: 1, dra: {mode: gpu, deviceClasses: [L4_GPUs]}}\n",
			[]string{`spec.pools[0] (gpu).dra.deviceClasses[0]: "L4_GPUs" is not a DeviceClass name`}},
		{"DRA on a CPU pool", "spec:\n  pools:\n    - {name: cpu, nodes: 1, dra: {mode: gpu}}\n", []string{"sku: required when gpusPerNode, sharing or dra is set"}},
		{"duplicate pool", "spec:\n  pools:\n    - {name: cpu, nodes: 1}\n    - {name: cpu, nodes: 1}\n", []string{"duplicate pool name"}},
		{"two documents", "spec:\n  pools:\n    - {name: cpu, nodes: 1}\n---\n" + header, []string{"want one Fleet document, found 2"}},
		{"bad image reference", "spec:\n  pools:\n    - {name: cpu, nodes: 1}\n  images:\n    - {image: Team/Trainer, env: []}\n",
			[]string{`spec.images[0].image: "Team/Trainer" is not an image reference`}},
		{"image ENV from a secret", "spec:\n  pools:\n    - {name: cpu, nodes: 1}\n  images:\n    - {image: team/trainer, env: [{name: NVIDIA_VISIBLE_DEVICES, valueFrom: {secretKeyRef: {name: s, key: k}}}]}\n",
			[]string{"spec.images[0].env[0] (NVIDIA_VISIBLE_DEVICES): an image's ENV has a value"}},
		{"image declared twice", "spec:\n  pools:\n    - {name: cpu, nodes: 1}\n  images:\n    - {image: team/trainer, env: []}\n    - {image: docker.io/team/trainer, env: []}\n",
			[]string{`spec.images[1].image: "docker.io/team/trainer" is declared twice`}},
		{"autoscaled pool with nodes", "spec:\n  pools:\n    - {name: cpu, nodes: 1}\n  autoscaledPools:\n    - {name: burst, sku: h100-80gb, nodes: 2, gpusPerNode: 8, nodePool: burst, maxNodes: 2}\n",
			[]string{"spec.autoscaledPools[0] (burst).nodes: an autoscaled pool starts at zero nodes"}},
		{"autoscaled pool without a limit or NodePool", "spec:\n  pools:\n    - {name: cpu, nodes: 1}\n  autoscaledPools:\n    - {name: burst, sku: h100-80gb, gpusPerNode: 8}\n",
			[]string{"spec.autoscaledPools[0] (burst).maxNodes: must be 1 to 1000, got 0", "spec.autoscaledPools[0] (burst).nodePool: required"}},
		{"autoscaled CPU pool", "spec:\n  pools:\n    - {name: cpu, nodes: 1}\n  autoscaledPools:\n    - {name: burst, nodePool: burst, maxNodes: 1}\n",
			[]string{"spec.autoscaledPools[0] (burst).sku: an autoscaled pool is a GPU pool"}},
		{"one NodePool for two pools", "spec:\n  pools:\n    - {name: cpu, nodes: 1}\n  autoscaledPools:\n    - {name: a, sku: l4, gpusPerNode: 1, nodePool: np, maxNodes: 1}\n    - {name: b, sku: l4, gpusPerNode: 1, nodePool: np, maxNodes: 1}\n",
			[]string{`spec.autoscaledPools[1] (b).nodePool: NodePool "np" already scales pool a`}},
		{"autoscaled pool named as a fixed one", "spec:\n  pools:\n    - {name: cpu, nodes: 1}\n  autoscaledPools:\n    - {name: cpu, sku: l4, gpusPerNode: 1, nodePool: np, maxNodes: 1}\n",
			[]string{`spec.autoscaledPools[0] (cpu).name: duplicate pool name "cpu"`}},
		{"autoscaled pool's unknown field", "spec:\n  pools:\n    - {name: cpu, nodes: 1}\n  autoscaledPools:\n    - {name: a, sku: l4, gpusPerNode: 1, nodePool: np, maxNodes: 1, minNodes: 1}\n",
			[]string{"malformed fleet", "minNodes"}},
		{"bad ENV name", "spec:\n  pools:\n    - {name: cpu, nodes: 1}\n  images:\n    - {image: team/trainer, env: [{name: 1X, value: a}]}\n",
			[]string{`spec.images[0].env[0].name: "1X" is not an environment variable name`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fleet.yaml")
			require.NoError(t, os.WriteFile(path, []byte(header+tc.body), 0o644))
			_, err := Load(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), path)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// A DRA pool's nodes name their driver for fakegpu and, unless the pool
// says otherwise, keep the device plugin off.
func TestDRAPoolNodes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"device plugin off by default", nil, "false"},
		{"the pool's own label wins", map[string]string{fakegpu.LabelDeployDevicePlugin: "true"}, "true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &Fleet{Spec: Spec{Pools: []Pool{{Name: "dra", SKU: "h100-80gb", Nodes: 1, GPUsPerNode: 8, Labels: tc.labels,
				DRA: &DRA{Mode: fakegpu.DRAWholeGPU, ConsumableShares: "4"}}}}}
			n, err := NodeSpecs(f)[0].Node()
			require.NoError(t, err)
			assert.Equal(t, fakegpu.DRAWholeGPU, n.Annotations[fakegpu.AnnotationDRA])
			assert.Equal(t, "4", n.Annotations[fakegpu.AnnotationDRAShares])
			assert.Equal(t, tc.want, n.Labels[fakegpu.LabelDeployDevicePlugin])
		})
	}
}

func TestNodeSpecsSplitTrustDomains(t *testing.T) {
	f, err := Parse([]byte(header + `spec:
  pools:
    - name: l4
      sku: l4
      nodes: 3
      gpusPerNode: 1
      taints: [{key: sku, value: l4, effect: NoSchedule}]
      trustDomains:
        - {name: a, nodes: 1, labels: {trust: a}, taints: [{key: trust, value: a, effect: NoSchedule}]}
        - {name: b, nodes: 2, labels: {trust: b}}
`))
	require.NoError(t, err)
	specs := NodeSpecs(f)
	require.Len(t, specs, 3)
	var got []string
	for _, s := range specs {
		got = append(got, s.Name+"="+s.TrustDomain.Name)
	}
	assert.Equal(t, []string{"l4-0=a", "l4-1=b", "l4-2=b"}, got)

	n, err := specs[0].Node()
	require.NoError(t, err)
	assert.Equal(t, "a", n.Labels["trust"])
	assert.Equal(t, "a", n.Labels[LabelTrustDomain])
	assert.Equal(t, "fake", n.Annotations[AnnotationKwokNode])
	assert.Equal(t, "l4", n.Annotations[fakegpu.AnnotationSKU])
	assert.Equal(t, "1", n.Annotations[fakegpu.AnnotationGPUs])
	assert.Len(t, n.Spec.Taints, 2, "pool taint plus trust taint")
	_, hasGPU := n.Status.Allocatable["nvidia.com/gpu"]
	assert.False(t, hasGPU, "GPU resources are the simulated stack's to publish, not the fleet's")
}

func TestPatchedChangesOnePoolAndRevalidates(t *testing.T) {
	f, err := Load(filepath.Join("..", "..", "manifests", "fleets", "reference.yaml"))
	require.NoError(t, err)
	l4Before, _ := f.Pool("gpu-l4-shared")

	got, err := Patched(f, "c/candidate.yaml", []PoolPatch{{Pool: "gpu-l4-shared", Patch: map[string]any{"taints": []any{}}}})
	require.NoError(t, err)
	l4, _ := got.Pool("gpu-l4-shared")
	assert.Empty(t, l4.Taints, "the patched pool lost its taints")
	assert.Len(t, l4.TrustDomains, 2, "fields the patch does not name are kept")
	again, _ := f.Pool("gpu-l4-shared")
	assert.Equal(t, l4Before, again, "the original fleet is unchanged")

	// An autoscaled pool is patched as a fixed one is.
	got, err = Patched(f, "c/candidate.yaml", []PoolPatch{{Pool: "gpu-h100-burst", Patch: map[string]any{"maxNodes": 3}}})
	require.NoError(t, err)
	burst, ok := got.AutoscaledPoolFor("gpu-h100-burst")
	require.True(t, ok)
	assert.Equal(t, 3, burst.MaxNodes)
	assert.Equal(t, "h100-80gb", burst.SKU, "fields the patch does not name are kept")

	for _, tc := range []struct {
		name  string
		patch PoolPatch
		want  []string
	}{
		{"unknown pool", PoolPatch{Pool: "gpu-l40", Patch: map[string]any{}},
			[]string{"c/candidate.yaml: spec.fleetPatches[0].pool", `no pool "gpu-l40"`, "gpu-l4-shared", "gpu-h100-burst (autoscaled)"}},
		{"autoscaled pool grown from one node", PoolPatch{Pool: "gpu-h100-burst", Patch: map[string]any{"nodes": 1}},
			[]string{"spec.autoscaledPools[0] (gpu-h100-burst).nodes"}},
		{"unknown field", PoolPatch{Pool: "cpu", Patch: map[string]any{"taint": []any{}}},
			[]string{"spec.fleetPatches[0].patch", "taint"}},
		{"invalid result", PoolPatch{Pool: "gpu-h100-exclusive", Patch: map[string]any{"sku": "h900"}},
			[]string{"as patched by c/candidate.yaml", "spec.pools[0] (gpu-h100-exclusive).sku", `unknown GPU SKU "h900"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Patched(f, "c/candidate.yaml", []PoolPatch{tc.patch})
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// Declared images reach every GPU node as the runtime reads them, and
// only GPU nodes.
func TestDeclaredImagesReachGPUNodes(t *testing.T) {
	f, err := Parse([]byte(header + `spec:
  pools:
    - {name: cpu, nodes: 1}
    - {name: gpu, sku: l4, nodes: 1, gpusPerNode: 1}
  images:
    - image: registry.example.com:5000/ml/trainer:v2
      env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]
`))
	require.NoError(t, err)
	v, ok := f.Spec.Images[0].SetsVisibleDevices()
	assert.True(t, ok)
	assert.Equal(t, "all", v)
	for _, ns := range NodeSpecs(f) {
		n, err := ns.Node()
		require.NoError(t, err)
		env, err := fakegpu.DecodeImageEnvs(n.Annotations)
		require.NoError(t, err)
		if ns.Pool.GPU() {
			assert.Equal(t, "all", env.Env("registry.example.com:5000/ml/trainer:v2")[0].Value, "node %s", n.Name)
		} else {
			assert.Nil(t, env, "a CPU node has no NVIDIA runtime: node %s", n.Name)
		}
	}
}

// A fleet a run writes (patched by its candidate, say) loads back as the
// same fleet.
func TestWriteFileLoadsBackTheSameFleet(t *testing.T) {
	for _, name := range []string{"reference.yaml", "scale-dra-500.yaml", "scale-200.yaml"} {
		f, err := Load(filepath.Join("..", "..", "manifests", "fleets", name))
		require.NoError(t, err, name)
		path := filepath.Join(t.TempDir(), "fleet.yaml")
		require.NoError(t, WriteFile(f, path), name)
		back, err := Load(path)
		require.NoError(t, err, name)
		back.File = f.File
		assert.Equal(t, f, back, name)
	}
}

// An autoscaled pool split into trust domains is scaled domain by domain:
// Autoscaled gives one pool per domain, with the domain's labels, taints,
// NodePool and maxNodes, and AutoscaledPoolFor finds it by its NodePool.
func TestAutoscaledTrustDomainsScaleApart(t *testing.T) {
	f, err := Load("../../manifests/fleets/reference.yaml")
	require.NoError(t, err)
	var domains []AutoscaledPool
	for _, p := range f.Autoscaled() {
		if p.Name == "gpu-l4-shared-burst" {
			domains = append(domains, p)
		}
	}
	require.Len(t, domains, 2)
	a := domains[0]
	assert.Equal(t, "gpu-l4-burst-tenant-a", a.NodePool)
	assert.Equal(t, 1, a.MaxNodes)
	assert.Equal(t, map[string]string{"sku": "l4-burst", "pool": "interactive-burst", "trust": "tenant-a"}, a.Labels)
	assert.Len(t, a.Taints, 2)
	require.Len(t, a.TrustDomains, 1)
	assert.Equal(t, "tenant-a", a.TrustDomains[0].Name)

	b, ok := f.AutoscaledPoolFor("gpu-l4-burst-tenant-b")
	require.True(t, ok)
	assert.Equal(t, "tenant-b", b.Labels["trust"])
	assert.Equal(t, "tenant-b", b.TrustDomains[0].Name)
	// The fleet itself is unchanged: the pool keeps its own labels.
	assert.NotContains(t, f.Spec.AutoscaledPools[2].Labels, "trust")
}

// A node labelled with an autoscaled pool's name is judged by that pool's
// design, its trust domains whole, as a fixed pool's node is.
func TestDesignCoversAutoscaledPools(t *testing.T) {
	f, err := Load("../../manifests/fleets/reference.yaml")
	require.NoError(t, err)
	p, ok := f.Design("gpu-h100-exclusive")
	require.True(t, ok)
	assert.Equal(t, 4, p.Nodes)
	p, ok = f.Design("gpu-l4-shared-burst")
	require.True(t, ok)
	assert.Equal(t, ModeTimeSlicing, p.Mode())
	assert.Len(t, p.TrustDomains, 2)
	assert.NotContains(t, p.Labels, "trust")
	_, ok = f.Design("gpu-l4-burst-tenant-a")
	assert.False(t, ok, "a NodePool's name is not a pool's")
}
