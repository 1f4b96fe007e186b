// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package explore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"pgregory.net/rapid"

	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/fakegpu"
)

func TestParseBudget(t *testing.T) {
	for _, tc := range []struct {
		in     string
		shapes int
		time   time.Duration
		shrink time.Duration
		err    string
	}{
		{"", DefaultBudget.Shapes, DefaultBudget.Time, DefaultBudget.ShrinkTime, ""},
		{"0", 0, DefaultBudget.Time, DefaultBudget.ShrinkTime, ""},
		{"30", 30, DefaultBudget.Time, DefaultBudget.ShrinkTime, ""},
		{"600", 600, 10 * DefaultBudget.Time, DefaultBudget.ShrinkTime, ""}, // time grows with the shapes
		{"600/3m", 600, 3 * time.Minute, DefaultBudget.ShrinkTime, ""},
		{"60/20s/0s", 60, 20 * time.Second, 0, ""},
		{"-1", 0, 0, 0, "whole number"},
		{"many", 0, 0, 0, "whole number"},
		{"60/soon", 0, 0, 0, "positive duration"},
		{"60/20s/-1s", 0, 0, 0, "shrink time"},
		{"60/20s/0s/x", 0, 0, 0, "too many parts"},
	} {
		b, err := ParseBudget(tc.in)
		if tc.err != "" {
			require.Error(t, err, tc.in)
			assert.Contains(t, err.Error(), tc.err)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.shapes, b.Shapes, tc.in)
		assert.Equal(t, tc.time, b.Time, tc.in)
		assert.Equal(t, tc.shrink, b.ShrinkTime, tc.in)
	}
}

func gpuContainer(name, res string, n int64) corev1.Container {
	return corev1.Container{Name: name, Image: "img", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceName(res): *resource.NewQuantity(n, resource.DecimalSI)}}}
}

func TestGPURequestsCountEveryContainerList(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sidecar := gpuContainer("side", "nvidia.com/gpu.shared", 1)
	sidecar.RestartPolicy = &always
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want map[string]int64
	}{
		{"container", corev1.PodSpec{Containers: []corev1.Container{gpuContainer("c", "nvidia.com/gpu", 2)}}, map[string]int64{"nvidia.com/gpu": 2}},
		{"init container only: held while it runs", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}, InitContainers: []corev1.Container{gpuContainer("i", "nvidia.com/gpu", 1)}}, map[string]int64{"nvidia.com/gpu": 1}},
		{"sidecar adds to the containers", corev1.PodSpec{Containers: []corev1.Container{gpuContainer("c", "nvidia.com/gpu.shared", 1)}, InitContainers: []corev1.Container{sidecar}}, map[string]int64{"nvidia.com/gpu.shared": 2}},
		{"other resources are not GPUs", corev1.PodSpec{Containers: []corev1.Container{gpuContainer("c", "example.com/fpga", 1)}}, map[string]int64{}},
		{"zero holds nothing", corev1.PodSpec{Containers: []corev1.Container{gpuContainer("c", "nvidia.com/gpu", 0)}}, map[string]int64{}},
	} {
		p := &corev1.Pod{Spec: tc.spec}
		assert.Equal(t, tc.want, GPURequests(p), tc.name)
	}
}

func TestOraclesJudgeEveryContainerList(t *testing.T) {
	nvidia, other := "nvidia", "gpupool-explore-runc"
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "tenant-a"}, Spec: corev1.PodSpec{
		Containers:     []corev1.Container{{Name: "main", Image: "img@sha256:" + strings.Repeat("a", 64)}},
		InitContainers: []corev1.Container{gpuContainer("gpu", "nvidia.com/gpu", 1)},
	}}
	pod.Spec.InitContainers[0].Image = "img:tag"

	assert.Contains(t, RuntimeClassViolation(pod), "no runtimeClassName while it holds 1 nvidia.com/gpu (in init container gpu)")
	pod.Spec.RuntimeClassName = &other
	assert.Contains(t, RuntimeClassViolation(pod), "runtimeClassName gpupool-explore-runc")
	pod.Spec.RuntimeClassName = &nvidia
	assert.Empty(t, RuntimeClassViolation(pod))

	assert.Contains(t, ImagesPinnedViolation(pod), `init container gpu's image "img:tag" not pinned by digest`)
	pod.Spec.InitContainers[0].Image = "img@sha256:" + strings.Repeat("b", 64)
	assert.Empty(t, ImagesPinnedViolation(pod))
	pod.Spec.InitContainers[0].Image = "img@sha256:short"
	assert.NotEmpty(t, ImagesPinnedViolation(pod), "a digest is 64 hex digits")

	assert.Contains(t, OwnServiceAccountViolation(pod), "default service account")
	pod.Spec.ServiceAccountName = "default"
	assert.NotEmpty(t, OwnServiceAccountViolation(pod))
	pod.Spec.ServiceAccountName = "trainer"
	assert.Empty(t, OwnServiceAccountViolation(pod))

	cpu := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:tag"}}}}
	assert.Empty(t, RuntimeClassViolation(cpu)+ImagesPinnedViolation(cpu)+OwnServiceAccountViolation(cpu), "CPU pods are none of these rules' business")
}

// A pod that gets its device through DRA is a GPU pod to every oracle: a
// claim from a template, referenced by a container or by none, and a
// DeviceClass's implicit extended resource (dra-facts §1 "DeviceClass").
func TestOraclesCountDevicesThroughDRA(t *testing.T) {
	tpl := "explore-gpu.nvidia.com"
	claim := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "tenant-a"}, Spec: corev1.PodSpec{
		ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tpl}},
		Containers:     []corev1.Container{{Name: "main", Image: "img:tag", Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
	}}
	assert.Equal(t, "pod tenant-a/c was admitted with no runtimeClassName while it holds the devices of claim gpu (from template explore-gpu.nvidia.com) (in container main)", RuntimeClassViolation(claim))
	assert.Contains(t, ImagesPinnedViolation(claim), `container main's image "img:tag"`)

	claim.Spec.Containers[0].Resources.Claims = nil
	assert.Contains(t, OwnServiceAccountViolation(claim), "(in the pod's claims, which no container references)", "an unreferenced claim is still allocated for the pod")

	implicit := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "i", Namespace: "tenant-a"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{gpuContainer("main", "deviceclass.resource.kubernetes.io/gpu.nvidia.com", 2)},
	}}
	assert.Equal(t, map[string]int64{"deviceclass.resource.kubernetes.io/gpu.nvidia.com": 2}, GPURequests(implicit))
	assert.Contains(t, RuntimeClassViolation(implicit), "holds 2 deviceclass.resource.kubernetes.io/gpu.nvidia.com (in container main)")

	// The reproduction of a claim shape creates its template.
	needs := Needs(Shape{Via: ViaPod, Pod: claim}, nil, nil, nil, "own", testSpace().Claims)
	require.Len(t, needs, 1)
	assert.Contains(t, fmt.Sprintf("%+v", needs[0]), "gpu.nvidia.com")
}

func node(name, pool string, labels map[string]string) Node {
	return Node{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, Pool: pool, GPU: pool != "cpu"}
}

func TestSKUPoolViolationReadsSelectionAsTheSchedulerDoes(t *testing.T) {
	nodes := []Node{
		node("h-0", "h100", map[string]string{"sku": "h100"}),
		node("l-0", "l4", map[string]string{"sku": "l4"}),
		node("c-0", "cpu", map[string]string{}),
	}
	pod := func(mut func(*corev1.PodSpec)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: []corev1.Container{gpuContainer("c", "nvidia.com/gpu", 1)}}}
		mut(&p.Spec)
		return p
	}
	assert.Empty(t, SKUPoolViolation(pod(func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"sku": "h100"} }), nodes))
	assert.Contains(t, SKUPoolViolation(pod(func(*corev1.PodSpec) {}), nodes), "2 pools: h100 (1 nodes), l4 (1 nodes)")
	exists := pod(func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "sku", Operator: corev1.NodeSelectorOpExists}}}}}}}
	})
	assert.NotEmpty(t, SKUPoolViolation(exists, nodes), "sku Exists admits every pool")
	assert.Empty(t, SKUPoolViolation(pod(func(s *corev1.PodSpec) { s.NodeName = "l-0" }), nodes), "nodeName narrows to one node")
	assert.Empty(t, SKUPoolViolation(pod(func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"sku": "none"} }), nodes), "a selector matching nothing selects no pool: Pending is another check's business")
}

func TestTrustViolation(t *testing.T) {
	domainOf := map[string]string{"tenant-a": "tenant-a", "tenant-b": "tenant-b"}
	n := node("l4-0", "l4", map[string]string{"trust": "tenant-a"})
	n.SharedGPU, n.Domain = true, "tenant-a"
	mk := func(ns, name string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name)},
			Spec:   corev1.PodSpec{InitContainers: []corev1.Container{gpuContainer("gpu", "nvidia.com/gpu.shared", 1)}, Containers: []corev1.Container{{Name: "main"}}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	resident := mk("tenant-a", "resident", corev1.PodRunning)
	stray := mk("tenant-b", "stray", corev1.PodPending)
	v := TrustViolation(stray, n, []*corev1.Pod{resident, stray}, domainOf, HoldsGPU)
	assert.Contains(t, v, "pod tenant-b/stray of trust domain tenant-b, holding 1 nvidia.com/gpu.shared (in init container gpu), was admitted and placed on shared-GPU node l4-0 (reserved for trust domain tenant-a) beside trust domain tenant-a's tenant-a/resident")
	assert.Contains(t, TrustViolation(stray, n, []*corev1.Pod{stray}, domainOf, HoldsGPU), "placed on shared-GPU node l4-0 (reserved for trust domain tenant-a)", "alone on another domain's node is a violation too")
	assert.Empty(t, TrustViolation(mk("tenant-a", "own", corev1.PodPending), n, []*corev1.Pod{resident}, domainOf, HoldsGPU))
	resident.Status.Phase = corev1.PodFailed
	unreserved := n
	unreserved.Domain = ""
	assert.Empty(t, TrustViolation(stray, unreserved, []*corev1.Pod{resident, stray}, domainOf, HoldsGPU), "a failed pod holds no GPU")
	exclusive := n
	exclusive.SharedGPU = false
	assert.Empty(t, TrustViolation(stray, exclusive, []*corev1.Pod{stray}, domainOf, HoldsGPU), "the rule is about shared-GPU nodes")
	refused := mk("tenant-b", "bound", corev1.PodFailed)
	refused.Status.Reason = "NodeAffinity"
	assert.Empty(t, TrustViolation(refused, n, []*corev1.Pod{refused}, domainOf, HoldsGPU), "a pod bound by nodeName that the node's kubelet refused holds nothing there")
	assert.Equal(t, "namespace scratch (no trust domain)", Identity("scratch", domainOf))
	unprepared := mk("tenant-b", "claim", corev1.PodRunning)
	unprepared.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	unprepared.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu"}}
	holds := func(p *corev1.Pod) bool { return p.UID != unprepared.UID && HoldsGPU(p) }
	assert.Empty(t, TrustViolation(unprepared, n, []*corev1.Pod{resident, unprepared}, domainOf, holds), "a pod whose claims were never allocated to it holds nothing there")
}

func testSpace() *Space {
	l4 := fleet.Pool{Name: "gpu-l4-shared", SKU: "l4", Nodes: 2, GPUsPerNode: 1, Labels: map[string]string{"sku": "l4"},
		Taints: []corev1.Taint{{Key: "sku", Value: "l4", Effect: corev1.TaintEffectNoSchedule}},
		TrustDomains: []fleet.TrustDomain{
			{Name: "tenant-a", Nodes: 1, Labels: map[string]string{"trust": "tenant-a"}, Taints: []corev1.Taint{{Key: "trust", Value: "tenant-a", Effect: corev1.TaintEffectNoSchedule}}},
			{Name: "tenant-b", Nodes: 1, Labels: map[string]string{"trust": "tenant-b"}, Taints: []corev1.Taint{{Key: "trust", Value: "tenant-b", Effect: corev1.TaintEffectNoSchedule}}},
		}}
	h100 := fleet.Pool{Name: "gpu-h100", SKU: "h100-80gb", Nodes: 1, GPUsPerNode: 8, Labels: map[string]string{"sku": "h100"},
		Taints: []corev1.Taint{{Key: "sku", Value: "h100", Effect: corev1.TaintEffectNoSchedule}}}
	return &Space{
		Pools: []PoolSpace{
			{Pool: h100, Resource: "nvidia.com/gpu", Nodes: []string{"h-0"}},
			{Pool: l4, Resource: "nvidia.com/gpu.shared", Nodes: []string{"l-0", "l-1"}, Domains: []DomainSpace{
				{Domain: l4.TrustDomains[0], Namespace: "tenant-a", Nodes: []string{"l-0"}},
				{Domain: l4.TrustDomains[1], Namespace: "tenant-b", Nodes: []string{"l-1"}},
			}},
		},
		Advertised: []string{"nvidia.com/gpu", "nvidia.com/gpu.shared"},
		Unlabelled: "scratch", OtherRuntimeClass: "runc-class", MissingRuntimeClass: "missing",
		Image: "img@sha256:" + strings.Repeat("a", 64), TagImage: "img:1", ServiceAccount: "own",
		Labels: map[string]string{"gpupool.dev/check": "test"},
		Claims: []ClaimSpace{{Class: "gpu.nvidia.com", Template: "explore-gpu.nvidia.com"}},
	}
}

// Every shape the generator draws is a pod a person could submit: one
// container list asks for the device, names are unique, and what the
// shape says of itself matches what it is.
func TestShapesAreCoherent(t *testing.T) {
	space := testSpace()
	n := 0
	focus := Focus{Explore: []string{DimSlot, DimAim, DimHome, DimToleration, DimVia, DimSelector, DimNodeName, DimAsk}, NodeName: true}
	gen := space.Shapes(focus, "test", func() string { n++; return "shape-" + string(rune('a'+n%26)) })
	rapid.Check(t, func(t *rapid.T) {
		s := gen.Draw(t, "shape")
		p := s.Pod
		names := map[string]bool{}
		asking := 0
		for _, list := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
			for _, c := range list {
				if names[c.Name] {
					t.Fatalf("container name %s twice", c.Name)
				}
				names[c.Name] = true
				if asksGPU(c) {
					asking++
				}
			}
		}
		unreferenced := asking == 0 && len(p.Spec.ResourceClaims) == 1
		if asking != 1 && !unreferenced {
			t.Fatalf("%d containers ask for a device, want 1 (or a claim no container references): %s", asking, s)
		}
		if !HoldsGPU(p) {
			t.Fatalf("the shape holds no device: %s", s)
		}
		if (len(p.Spec.ResourceClaims) > 0) != strings.Contains(strings.Join(s.Choices, ";"), "ResourceClaim from template") {
			t.Fatalf("the shape's words do not say it claims: %s", s)
		}
		words := strings.Join(s.Choices, ";")
		if (len(p.Spec.ResourceClaims) > 0 || strings.Contains(words, "implicit extended resource")) &&
			(strings.Contains(words, "asks for") || strings.Contains(words, "requests")) {
			t.Fatalf("a shape asking through DRA still describes the limit it replaced: %s", s)
		}
		if (len(p.Spec.InitContainers) > 0) != strings.Contains(strings.Join(s.Choices, ";"), "GPU limit in") {
			t.Fatalf("the shape's words do not say where its GPU is: %s", s)
		}
		if len(s.Choices) == 0 && (p.Spec.RuntimeClassName == nil || *p.Spec.RuntimeClassName != "nvidia" || p.Spec.ServiceAccountName != "own" || p.Spec.NodeSelector["sku"] == "") {
			t.Fatalf("a shape with no departures is not well-formed: %s", s)
		}
		if s.Pod.Labels[LabelRule] != "test" || s.Pod.Labels["gpupool.dev/check"] != "test" {
			t.Fatalf("labels %v lack the rule or the space's labels", s.Pod.Labels)
		}
	})
}

// A reproduction read back as a corpus case is the same shape: what a
// run writes, the corpus replays.
func TestReproductionRoundTripsThroughTheCorpus(t *testing.T) {
	space := testSpace()
	dir := t.TempDir()
	n := 0
	gen := space.Shapes(Focus{Explore: []string{DimSlot, DimVia}}, "test", func() string { n++; return "rt" })
	rapid.Check(t, func(rt *rapid.T) {
		s := gen.Draw(rt, "shape")
		ce := &Counterexample{Shape: s, Violation: Violation{Message: "a test violation"}, Tries: 1}
		path, data, err := ce.Write(filepath.Join(dir, "explore.rt"), "explore.rt", 42, nil)
		if err != nil {
			rt.Fatal(err)
		}
		if !strings.Contains(string(data), "--explore-seed 42") || !strings.HasPrefix(string(data), "# gpupool exploration") {
			rt.Fatalf("header missing: %s", data)
		}
		cases, err := LoadCorpus(dir, "explore.rt")
		if err != nil || len(cases) != 1 {
			rt.Fatalf("reading %s back: %d cases, %v", path, len(cases), err)
		}
		got := cases[0].Shape
		if got.Via != s.Via {
			rt.Fatalf("via %s read back as %s", s.Via, got.Via)
		}
		want := s.Object()
		back := got
		back.Pod.Name = s.Pod.Name
		back.Pod.Labels = s.Pod.Labels
		wantPod, gotPod := specOf(want), specOf(back.Object())
		// The harness's zero grace period is left out of reproductions.
		wantPod.TerminationGracePeriodSeconds, gotPod.TerminationGracePeriodSeconds = nil, nil
		if !apiequality.Semantic.DeepEqual(wantPod, gotPod) {
			rt.Fatalf("spec differs after the round trip:\nwant %+v\ngot  %+v", wantPod, gotPod)
		}
		_ = os.Remove(path)
	})
}

func specOf(o runtime.Object) corev1.PodSpec {
	switch v := o.(type) {
	case *corev1.Pod:
		return v.Spec
	case *appsv1.Deployment:
		return v.Spec.Template.Spec
	case *appsv1.StatefulSet:
		return v.Spec.Template.Spec
	case *batchv1.Job:
		return v.Spec.Template.Spec
	}
	panic(fmt.Sprintf("no pod spec in %T", o))
}

// The affinity operators a tenant can widen a selection with are found from
// the fleet's own labels, not from names the generator knows.
func TestSelectionsFromTheNodesLabels(t *testing.T) {
	s := testSpace()
	s.NodeLabels = map[string]map[string]string{"gpu-l4-shared": {"sku": "l4", "vendor.example/gpu.count": "1", "zone": "a"}}
	l4 := s.Pools[1]
	k, below := s.numericLabel(l4)
	assert.Equal(t, "vendor.example/gpu.count", k)
	assert.Equal(t, int64(0), below)
	k, _ = s.numericLabel(s.Pools[0])
	assert.Empty(t, k, "no labels known for the pool: no Gt selection")
	s.Pools[0].Pool.Labels["accelerator"] = "h100"
	assert.Equal(t, "accelerator", s.labelNotOn(l4))
}

// A pod whose claims the simulated kubelet cannot prepare has every
// container held waiting: what it sees is decided (nothing), so the sight
// rule judges it then, not at its wait's deadline. One container that
// started, or none reported yet, is not that.
func TestRefusedToStart(t *testing.T) {
	waiting := func(reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
	}
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	pod := func(cs ...corev1.ContainerStatus) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: cs}}
	}
	assert.True(t, refusedToStart(pod(waiting(fakegpu.DRAPrepareFailed), waiting(fakegpu.DRAPrepareFailed))))
	assert.False(t, refusedToStart(pod(waiting(fakegpu.DRAPrepareFailed), running)), "one container runs")
	assert.False(t, refusedToStart(pod(waiting("ContainerCreating"))), "not refused, only not started yet")
	assert.False(t, refusedToStart(pod()), "no status reported yet")
}

// A pod bound by nodeName holds, on a shared-GPU node, only what its
// kubelet gives it: a resource the node advertises, or a DeviceClass's
// implicit one through the claim the scheduler made (kubelet-facts §1.4).
// Seen in make test: a tenant pod naming another tenant's L4 node with a
// limit of deviceclass.resource.kubernetes.io/mig.nvidia.com, which that
// node never advertises, was taken as sharing its GPU.
func TestHoldsOnNodeOnlyWhatTheKubeletGives(t *testing.T) {
	l4 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "l4-0"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		"nvidia.com/gpu.shared": *resource.NewQuantity(4, resource.DecimalSI)}}}
	c := &Cluster{Client: fake.NewClientset()}
	mk := func(res string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "tenant-b"},
			Spec: corev1.PodSpec{NodeName: "l4-0", Containers: []corev1.Container{gpuContainer("main", res, 1)}}}
	}
	ctx := context.Background()
	assert.True(t, c.holdsOnNode(ctx, mk("nvidia.com/gpu.shared"), l4), "the device plugin's resource, advertised")
	assert.False(t, c.holdsOnNode(ctx, mk("nvidia.com/mig-1g.5gb"), l4), "a device plugin resource the node does not advertise is dropped")
	implicit := mk("deviceclass.resource.kubernetes.io/mig.nvidia.com")
	assert.False(t, c.holdsOnNode(ctx, implicit, l4), "bound by nodeName: no claim was made for the implicit resource")
	implicit.Status.ExtendedResourceClaimStatus = &corev1.PodExtendedResourceClaimStatus{ResourceClaimName: "p-extended-resources-x"}
	assert.True(t, c.holdsOnNode(ctx, implicit, l4), "placed by the scheduler, which made its claim")
	assert.True(t, c.holdsOnNode(ctx, mk("nvidia.com/mig-1g.5gb"), nil), "no node to read: held, erring toward a violation")
}

// A pod can land on a node the autoscaler made after the exploration
// began: the oracles read it then, and judge it as a node of its pool.
func TestNodeReadsANodeThatCameLater(t *testing.T) {
	node := func(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	c := &Cluster{
		Client: fake.NewClientset(node("burst-1"), node("stranger")),
		Nodes:  []Node{{Node: node("h100-0"), Pool: "h100", GPU: true}},
		Describe: func(n *corev1.Node) (Node, bool) {
			return Node{Node: n, Pool: "burst", GPU: true}, n.Name != "stranger"
		},
	}
	ctx := context.Background()
	n, ok, err := c.Node(ctx, "h100-0")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "h100", n.Pool)
	n, ok, err = c.Node(ctx, "burst-1")
	require.NoError(t, err)
	assert.True(t, ok, "a node that came later is read")
	assert.Equal(t, "burst", n.Pool)
	assert.Len(t, c.Nodes, 2, "and kept")
	_, ok, err = c.Node(ctx, "stranger")
	require.NoError(t, err)
	assert.False(t, ok, "a node of no pool of the fleet")
	_, ok, err = c.Node(ctx, "gone")
	require.NoError(t, err)
	assert.False(t, ok, "a node deleted since the pod was bound")
	c.Describe = nil
	_, ok, err = c.Node(ctx, "burst-2")
	require.NoError(t, err)
	assert.False(t, ok, "no Describe: no node comes")
}

// A pod bound by nodeName to a node the autoscaler removed before its
// kubelet decided holds nothing there: it is not judged as living on the
// node's copy the space read (seen as a false trust violation on a
// reference run, seed 5176830074596035099).
func TestAwaitSightOfAPodWhoseNodeIsGone(t *testing.T) {
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant-a"}, Spec: corev1.PodSpec{NodeName: node}}
	}
	orphan, waiting := pod("orphan", "burst-gone"), pod("waiting", "burst-1")
	c := &Cluster{Client: fake.NewClientset(orphan, waiting, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "burst-1"}}), Timeout: 300 * time.Millisecond}
	ctx := context.Background()
	start := time.Now()
	got, err := c.awaitSight(ctx, orphan)
	require.NoError(t, err)
	assert.Nil(t, got, "no kubelet admitted it: it holds and sees nothing")
	assert.Less(t, time.Since(start), 250*time.Millisecond, "judged at once, not at the deadline")
	got, err = c.awaitSight(ctx, waiting)
	require.NoError(t, err)
	require.NotNil(t, got, "a node that is there, a kubelet that never records: judged as it was at the deadline")
	assert.Equal(t, "waiting", got.Name)
}

func TestReportSaysWhichPoolsTheBudgetReached(t *testing.T) {
	r := Report{Rule: "explore.x", Seed: 1, Judged: 3, Drawn: 3, Placed: map[string]int{"gpu-l4-shared-burst": 1, "gpu-h100-exclusive": 2}}
	assert.Contains(t, r.String(), "pods judged where they landed, by pool: gpu-h100-exclusive 2, gpu-l4-shared-burst 1")
	assert.NotContains(t, Report{Rule: "explore.x"}.String(), "by pool")
}
