// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build e2e && kind

// End-to-end tests that need a kind cluster (a real kubelet): run by
// `make test-kind` (go test -tags 'e2e kind' ./cmd/gpupool).
package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/scale"
	"github.com/gpupool/gpupool/reports"
)

// --simulate-pools with --kwok-image and --fakegpu-image runs the
// simulated stack inside the cluster, as a cluster far bigger than this
// machine needs: here a kind cluster 'gpupool up' made with only CPU
// nodes, whose node already holds the images (elsewhere they are pulled).
// The reference fleet joins, looked after by a kwok and a fakegpu
// controller running as Deployments in a namespace of the run's; every
// check passes, the disruptive ones included; nothing of the run's runs on
// this machine; afterwards the cluster has exactly the objects it had. A
// scale run of 200 nodes does the same.
func TestSimulatedStackRunsInTheCluster(t *testing.T) {
	dir, state, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	fleetFile := cpuOnlyFleet(t, dir)
	images := map[string]string{}
	b, err := os.ReadFile(harness.KindImagesFile())
	require.NoError(t, err, "make build-kind writes the images")
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			images[k] = v
		}
	}
	require.NotEmpty(t, images["kwok"])
	require.NotEmpty(t, images["fakegpu-controller"])
	require.NotEmpty(t, images["karpenter"])

	env := append(os.Environ(), "GPUPOOL_STATE="+state, "TMPDIR="+tmp)
	// A cluster with nothing of the reference's but the GPU Operator's
	// namespace, where a kind cluster runs its device plugin: the run
	// installs the rest, Karpenter's CRDs and NodePools with it, and a run
	// installs only what is new there.
	kubeconfig, stopUp := upCluster(t, gpupoolBin, repoRoot, env, "--provider", "kind", "--candidate", bareCandidate(t, dir, fleetFile, "gpu-operator"))
	before := clusterObjects(t, kubeconfig)
	ref := filepath.Join(dir, "reference-in-place")
	require.NoError(t, os.MkdirAll(ref, 0o755))
	base, err := filepath.Rel(ref, filepath.Join(repoRoot, "manifests", "candidates", "reference"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(ref, "candidate.yaml"), []byte("apiVersion: gpupool.dev/v1alpha1\nkind: Candidate\nmetadata: {name: reference-in-place}\nspec:\n  description: the reference but its gpu-operator namespace\n  base: "+base+"\n  omit:\n    - {kind: Namespace, name: gpu-operator}\n"), 0o644))

	// The whole stack in the cluster, Karpenter too: every check, the
	// autoscaling ones on nodes Karpenter makes from inside.
	r := invoke(t, gpupoolBin, repoRoot, env, state, "run", "--kubeconfig", kubeconfig, "--simulate-pools", "--candidate", ref,
		"--kwok-image", images["kwok"], "--fakegpu-image", images["fakegpu-controller"], "--karpenter-image", images["karpenter"], "--explore-budget", "20/10s")
	require.Equal(t, 0, r.exit)
	s, err := reports.ReadSummary(r.out)
	require.NoError(t, err)
	assert.Equal(t, "pass", s.Result)
	passed := map[string]bool{}
	for _, c := range s.Checks {
		assert.Equal(t, "pass", c.Result, c.ID)
		passed[c.ID] = c.Result == "pass"
	}
	for _, c := range checks.All() {
		if c.NeedsAutoscaler {
			assert.True(t, passed[c.ID], "%s is made with the run's Karpenter in the cluster", c.ID)
		}
	}
	assert.Regexp(t, `autoscaler: Karpenter \S+ started from its chart, release gpupool-sim-[0-9a-f]+/gpupool-kp-[0-9a-f]+`, r.stderr)
	assert.Regexp(t, `simulated stack: kwok and fakegpu controllers running in .* \(namespace gpupool-sim-[0-9a-f]+\)`, r.stderr)
	assert.Contains(t, r.stderr, "simulated nodes joined")
	assert.Regexp(t, `removed the [1-9][0-9]* objects run`, r.stderr)
	// The cluster's own DaemonSets put pods on Karpenter's nodes too.
	assert.Regexp(t, `removed [1-9][0-9]* pods of the cluster's own \(DaemonSets'\) left on nodes Karpenter made`, r.stderr)
	assert.Equal(t, before, clusterObjects(t, kubeconfig), "the run left objects behind, or removed some")
	assertNoKwokOf(t, "") // none ran here

	// A scale run the same way: nodes looked after from inside the
	// cluster, the contract held in bulk, nothing left behind. A fifth of
	// scale-200 and of the correctness workload: the in-cluster wiring is
	// what this proves (200 nodes took 3.5 min here, 1,000 pods bound at
	// kind's scheduler pace); 200 nodes in bulk are make test-scale's.
	fleetFile40, workloadFile := fifthOfScale200(t, dir)
	sr := invoke(t, gpupoolBin, repoRoot, env, state, "scale", "--kubeconfig", kubeconfig, "--candidate", ref,
		"--kwok-image", images["kwok"], "--fakegpu-image", images["fakegpu-controller"],
		"--fleets", fleetFile40, "--workload", workloadFile, "--out", t.TempDir())
	require.Equal(t, 0, sr.exit)
	assert.Contains(t, sr.stderr, "simulated stack: kwok and fakegpu controllers running in")
	assert.Contains(t, sr.stderr, "40 simulated nodes joined")
	assert.Regexp(t, `phase burst: .* 0 contract violations`, sr.stderr)
	assert.Equal(t, before, clusterObjects(t, kubeconfig), "the scale run left objects behind, or removed some")
	assertNoKwokOf(t, "")

	stopUp()
	assertNothingLeft(t, state, "")
}

// fifthOfScale200 writes the built-in fleet scale-200 with a fifth of its
// nodes (40) and the correctness workload with a fifth of its burst and
// churn and no autoscale phase, through the project's own types and
// loaders (both read back), and returns their paths.
func fifthOfScale200(t *testing.T, dir string) (fleetFile, workloadFile string) {
	t.Helper()
	fifth := func(what string, v int) int {
		require.Zero(t, v%5, "%s: %d is not a multiple of 5", what, v)
		return v / 5
	}
	write := func(name string, v any) string {
		b, err := yaml.Marshal(v)
		require.NoError(t, err)
		p := filepath.Join(dir, name+".yaml")
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}

	f, err := fleet.Load(filepath.Join(repoRoot, "manifests", "fleets", "scale-200.yaml"))
	require.NoError(t, err)
	f.Metadata.Name = "scale-40"
	for i := range f.Spec.Pools {
		p := &f.Spec.Pools[i]
		p.Nodes = fifth("pool "+p.Name, p.Nodes)
		for j := range p.TrustDomains {
			p.TrustDomains[j].Nodes = fifth("trust domain "+p.TrustDomains[j].Name, p.TrustDomains[j].Nodes)
		}
	}
	fleetFile = write(f.Metadata.Name, f)
	_, err = fleet.Load(fleetFile)
	require.NoError(t, err, "the fifth of scale-200 must be a valid fleet")

	w, err := scale.LoadWorkload(filepath.Join(repoRoot, "manifests", "workloads", "correctness.yaml"))
	require.NoError(t, err)
	// Its autoscaler is the one gpupool runs beside a cluster it makes:
	// a run in an existing cluster takes no autoscale phase.
	dropAutoscale(t, w)
	w.Metadata.Name = "correctness-fifth"
	for i := range w.Spec.Phases {
		ph := &w.Spec.Phases[i]
		ph.Pods = fifth("phase "+ph.Name+" pods", ph.Pods)
		ph.Duration.Duration /= 5
	}
	workloadFile = write(w.Metadata.Name, w)
	_, err = scale.LoadWorkload(workloadFile)
	require.NoError(t, err, "the fifth of correctness must be a valid workload")
	return fleetFile, workloadFile
}
