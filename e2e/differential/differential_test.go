// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package differential

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/workload"
)

const rejected = `Pod was rejected: Allocate failed due to rpc error: code = Unknown desc = invalid allocation request for "nvidia.com/gpu.shared": invalid request: maximum request size for shared resources is 1; found 2, which is unexpected`

func TestTheCorpusLoads(t *testing.T) {
	shapes, err := Load(filepath.Join("..", "..", "manifests", DefaultCorpus))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Shape{}
	for _, s := range shapes {
		byName[s.Name] = s
	}
	// The shapes the differential test exists for (issue #12).
	for _, want := range []string{
		"one-container-one-shared", "one-container-two-shared", "two-containers-one-shared-each",
		"init-two-shared", "sidecar-and-main-one-shared-each", "init-then-main-one-shared-each",
		"exclusive-two-containers-one-and-two", "wrong-runtime-handler",
	} {
		if _, ok := byName[want]; !ok {
			t.Errorf("the corpus has no shape %s", want)
		}
	}
	// Grouped by pool mode, so the real node changes pools as rarely as it can.
	seen := map[string]bool{}
	for i, s := range shapes {
		if i > 0 && s.Mode != shapes[i-1].Mode && seen[s.Mode] {
			t.Errorf("shape %s (%s) comes after shapes of another mode: the corpus is not grouped by pool mode", s.Name, s.Mode)
		}
		seen[s.Mode] = true
	}
	if ct := byName["dra-two-claims-one-unreferenced"].ClaimTemplates; len(ct) != 1 || ct[0].Spec.Spec.Devices.Requests[0].Exactly.DeviceClassName != PoolClass {
		t.Errorf("dra-two-claims-one-unreferenced brings ResourceClaimTemplates %v, want one asking the pool's class", ct)
	}
	if rc := byName["wrong-runtime-handler"].RuntimeClasses; len(rc) != 1 || rc[0].Handler != "runc" {
		t.Errorf("wrong-runtime-handler brings RuntimeClasses %v, want one with handler runc", rc)
	}
}

func TestParseRefusesWhatIsNotAShape(t *testing.T) {
	pod := func(extra string) string {
		return "# probes something\napiVersion: v1\nkind: Pod\nmetadata:\n  annotations: {differential.gpupool.dev/pool: exclusive}\nspec:\n" + extra +
			"  containers:\n    - name: main\n      resources: {limits: {gpupool.dev/pool-resource: 1}}\n"
	}
	for name, c := range map[string]struct{ file, data, want string }{
		"no comment":           {"a.yaml", strings.TrimPrefix(pod(""), "# probes something\n"), "open with a comment"},
		"bad mode":             {"a.yaml", strings.Replace(pod(""), "exclusive", "shared", 1), "sharing mode"},
		"placement":            {"a.yaml", pod("  tolerations: [{operator: Exists}]\n"), "placement"},
		"selector unbound":     {"a.yaml", pod("  nodeSelector: {sku: h100}\n"), "only a shape bound"},
		"bad placement":        {"a.yaml", strings.Replace(pod(""), "exclusive}", "exclusive, differential.gpupool.dev/placement: scheduler}", 1), "want nodeSelector or nodeName"},
		"two pods":             {"a.yaml", pod("") + "---\n" + pod(""), "second Pod"},
		"other kind":           {"a.yaml", "# x\napiVersion: v1\nkind: Secret\nmetadata: {name: x}\n", "Secret"},
		"configmap namespace":  {"a.yaml", "# x\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: y}\n---\n" + pod(""), "namespace is the harness's"},
		"name":                 {"a.yaml", strings.Replace(pod(""), "metadata:\n", "metadata:\n  name: b\n", 1), "named by its file"},
		"bad file name":        {"A_b.yaml", pod(""), "DNS label"},
		"unknown fields":       {"a.yaml", pod("  colour: blue\n"), "colour"},
		"template off DRA":     {"a.yaml", "# x\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: t}\nspec: {spec: {}}\n---\n" + pod(""), "needs a DRA pool"},
		"claim of no template": {"a.yaml", strings.Replace(pod("  resourceClaims: [{name: gpu, resourceClaimName: mine}]\n"), "exclusive", "dra", 1), "one of the shape's ResourceClaimTemplates"},
		"template twice":       {"a.yaml", strings.Repeat("# x\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: t}\nspec: {spec: {}}\n---\n", 2) + pod(""), "already the shape's"},
		"template namespace":   {"a.yaml", "# x\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: t, namespace: x}\nspec: {spec: {}}\n---\n" + pod(""), "metadata.namespace is the harness's"},
	} {
		if _, err := Parse(c.file, []byte(c.data)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Parse = %v, want an error containing %q", name, err, c.want)
		}
	}
}

func sharedPool() (fleet.Pool, *fleet.TrustDomain) {
	d := fleet.TrustDomain{Name: "tenant-a", Labels: map[string]string{"trust": "tenant-a"},
		Taints: []corev1.Taint{{Key: "trust", Value: "tenant-a", Effect: corev1.TaintEffectNoSchedule}}}
	p := fleet.Pool{Name: "gpu-l4-shared", SKU: "l4", GPUsPerNode: 1, Labels: map[string]string{"sku": "l4"},
		Taints: []corev1.Taint{{Key: "sku", Value: "l4-shared", Effect: corev1.TaintEffectNoSchedule}}, TrustDomains: []fleet.TrustDomain{d}}
	return p, &d
}

func TestPodForFillsWhatTheHarnessOwns(t *testing.T) {
	s, err := Parse("init-sidecar.yaml", []byte(`# an init container, a sidecar and the app container
apiVersion: v1
kind: Pod
metadata:
  annotations: {differential.gpupool.dev/pool: time-slicing}
spec:
  initContainers:
    - name: init
      resources: {limits: {gpupool.dev/pool-resource: 1}}
    - name: sidecar
      restartPolicy: Always
      resources: {limits: {gpupool.dev/pool-resource: 1}}
  containers:
    - name: main
      resources: {limits: {gpupool.dev/pool-resource: 1, cpu: 100m}}
`))
	if err != nil {
		t.Fatal(err)
	}
	pool, domain := sharedPool()
	p := s.PodFor(Target{Side: SideSim, Check: "kubelet.simulator-agrees", Namespace: "tenant-a", Pool: pool, Domain: domain,
		Node: "kwok-l4-0", Resource: "nvidia.com/gpu.shared", Image: "img@sha256:0", Variables: []string{"FAKEGPU_DEVICE_IDS", "NVIDIA_VISIBLE_DEVICES"}})
	if p.Name != "init-sidecar-sim" || p.Namespace != "tenant-a" {
		t.Errorf("pod %s/%s, want tenant-a/init-sidecar-sim", p.Namespace, p.Name)
	}
	if p.Labels[LabelShape] != "init-sidecar" || p.Labels[workload.LabelCheck] != "kubelet.simulator-agrees" {
		t.Errorf("labels %v lack the shape or the check", p.Labels)
	}
	if p.Spec.RuntimeClassName == nil || *p.Spec.RuntimeClassName != "nvidia" {
		t.Errorf("runtimeClassName %v, want nvidia", p.Spec.RuntimeClassName)
	}
	for k, v := range map[string]string{"sku": "l4", "trust": "tenant-a", corev1.LabelHostname: "kwok-l4-0"} {
		if p.Spec.NodeSelector[k] != v {
			t.Errorf("nodeSelector %v: want %s=%s", p.Spec.NodeSelector, k, v)
		}
	}
	if len(p.Spec.Tolerations) != 2 {
		t.Errorf("tolerations %v, want the pool's and the trust domain's taints", p.Spec.Tolerations)
	}
	if p.Spec.ServiceAccountName != workload.ServiceAccount || p.Spec.SecurityContext == nil {
		t.Errorf("service account %q, pod security context %v: want the check pods' own", p.Spec.ServiceAccountName, p.Spec.SecurityContext)
	}
	args := map[string]string{}
	for _, c := range allContainers(p) {
		args[c.Name] = strings.Join(c.Args, " ")
		if c.Image != "img@sha256:0" || c.SecurityContext == nil {
			t.Errorf("container %s: image %q, security context %v", c.Name, c.Image, c.SecurityContext)
		}
		if _, left := c.Resources.Limits[PoolResource]; left {
			t.Errorf("container %s still limits the placeholder %s", c.Name, PoolResource)
		}
		if q := c.Resources.Limits["nvidia.com/gpu.shared"]; q.Value() != 1 {
			t.Errorf("container %s limits %v, want 1 nvidia.com/gpu.shared", c.Name, c.Resources.Limits)
		}
	}
	want := map[string]string{"init": "probe-once FAKEGPU_DEVICE_IDS NVIDIA_VISIBLE_DEVICES", "sidecar": "probe FAKEGPU_DEVICE_IDS NVIDIA_VISIBLE_DEVICES", "main": "probe FAKEGPU_DEVICE_IDS NVIDIA_VISIBLE_DEVICES"}
	for name, a := range want {
		if args[name] != a {
			t.Errorf("container %s runs %q, want %q (an init container must exit, the others keep running)", name, args[name], a)
		}
	}
	if q := p.Spec.Containers[0].Resources.Limits["cpu"]; q.String() != "100m" {
		t.Errorf("the shape's other limits are lost: %v", p.Spec.Containers[0].Resources.Limits)
	}
	if _, kept := s.Pod.Spec.Containers[0].Resources.Limits[PoolResource]; !kept || s.Pod.Spec.NodeSelector != nil || s.Pod.Name != "" {
		t.Error("PodFor changed the shape's template: the other side would get this side's pod")
	}
}

// A bound shape's pods name their node in spec.nodeName, with the pool's
// selector and the shape's own, and no hostname selector: the kubelet,
// not the scheduler, judges them.
func TestPodForBindsABoundShape(t *testing.T) {
	s, err := Parse("bound.yaml", []byte(`# bound to a node its selector does not match
apiVersion: v1
kind: Pod
metadata:
  annotations: {differential.gpupool.dev/pool: time-slicing, differential.gpupool.dev/placement: nodeName}
spec:
  nodeSelector: {elsewhere: "true"}
  containers:
    - name: main
      resources: {limits: {gpupool.dev/pool-resource: 1}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if !s.Bound {
		t.Fatal("the shape is not bound")
	}
	pool, domain := sharedPool()
	p := s.PodFor(Target{Side: SideReal, Namespace: "tenant-a", Pool: pool, Domain: domain, Node: "kind-0", Resource: "nvidia.com/gpu.shared"})
	if p.Spec.NodeName != "kind-0" {
		t.Errorf("nodeName %q, want kind-0", p.Spec.NodeName)
	}
	if _, pinned := p.Spec.NodeSelector[corev1.LabelHostname]; pinned || p.Spec.NodeSelector["elsewhere"] != "true" || p.Spec.NodeSelector["trust"] != "tenant-a" {
		t.Errorf("nodeSelector %v: want the pool's and the shape's, no hostname", p.Spec.NodeSelector)
	}
	if s.Pod.Spec.NodeSelector["elsewhere"] != "true" || s.Pod.Spec.NodeName != "" {
		t.Error("PodFor changed the shape's template")
	}
}

// The node's own figures in an OutOf<resource> message differ between a
// kind node and a KWOK node and are not compared; what the pod asked is.
func TestCompareMasksTheNodesSizes(t *testing.T) {
	msg := func(req, used, capacity int) string {
		return fmt.Sprintf("Pod was rejected: Node didn't have enough resource: cpu, requested: %d, used: %d, capacity: %d", req, used, capacity)
	}
	real := Outcome{Phase: corev1.PodFailed, Reason: "OutOfcpu", Message: msg(100000000, 950, 2000)}
	sim := real
	sim.Message = msg(100000000, 0, 64000)
	if err := Compare(Shape{Name: "bound-cpu-over-node"}, real, sim); err != nil {
		t.Errorf("the node's sizes were compared: %v", err)
	}
	sim.Message = msg(5, 0, 64000)
	if err := Compare(Shape{Name: "bound-cpu-over-node"}, real, sim); err == nil {
		t.Error("a different request agreed")
	}
}

func TestClaimTemplatesForFillsTheClassAndNamespace(t *testing.T) {
	s, err := Parse("c.yaml", []byte("# x\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: one}\n"+
		"spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpupool.dev/pool-class}}, {name: any, firstAvailable: [{name: a, deviceClassName: gpupool.dev/pool-class}]}]}}}\n---\n"+
		"apiVersion: v1\nkind: Pod\nmetadata: {annotations: {differential.gpupool.dev/pool: dra}}\n"+
		"spec: {resourceClaims: [{name: gpu, resourceClaimTemplateName: one}], containers: [{name: main, resources: {claims: [{name: gpu}]}}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := s.ClaimTemplatesFor(Target{Check: "kubelet.simulator-agrees", Namespace: "tenant-a", Class: "gpu.nvidia.com"})
	if len(got) != 1 {
		t.Fatalf("got %d templates, want 1", len(got))
	}
	tmpl := got[0]
	if tmpl.Namespace != "tenant-a" || tmpl.Labels[LabelShape] != "c" || tmpl.Labels["gpupool.dev/check"] == "" {
		t.Errorf("template %s/%s labels %v: want the target's namespace, the shape and the check", tmpl.Namespace, tmpl.Name, tmpl.Labels)
	}
	reqs := tmpl.Spec.Spec.Devices.Requests
	if reqs[0].Exactly.DeviceClassName != "gpu.nvidia.com" || reqs[1].FirstAvailable[0].DeviceClassName != "gpu.nvidia.com" {
		t.Errorf("requests %+v: want the pool's class where the shape says %s", reqs, PoolClass)
	}
	if s.ClaimTemplates[0].Spec.Spec.Devices.Requests[0].Exactly.DeviceClassName != PoolClass {
		t.Error("ClaimTemplatesFor changed the shape itself")
	}
}

func TestPodForKeepsTheShapesNamespaceAndRuntimeClass(t *testing.T) {
	shapes, err := Load(filepath.Join("..", "..", "manifests", DefaultCorpus))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range shapes {
		if s.Name != "wrong-runtime-handler" {
			continue
		}
		p := s.PodFor(Target{Side: SideReal, Namespace: "check-ns", Node: "kind-worker", Resource: "nvidia.com/gpu"})
		if p.Namespace != "gpu-operator" || *p.Spec.RuntimeClassName != "gpupool-differential-runc" {
			t.Errorf("pod %s/%s under %s: want the shape's namespace gpu-operator and RuntimeClass gpupool-differential-runc", p.Namespace, p.Name, *p.Spec.RuntimeClassName)
		}
		return
	}
	t.Fatal("no wrong-runtime-handler shape")
}

func TestCompareAgrees(t *testing.T) {
	s := Shape{Name: "one-container-two-shared"}
	out := Outcome{Phase: corev1.PodFailed, Reason: "UnexpectedAdmissionError", Message: rejected}
	// Container state is not compared: kind has no NVIDIA runtime.
	sim := out
	sim.Containers = "main waiting: CrashLoopBackOff"
	if err := Compare(s, out, sim); err != nil {
		t.Errorf("equal outcomes: %v", err)
	}
}

// A wrong simulated outcome fails the check, naming the shape and both
// outcomes: the proof that the differential test can fail.
func TestCompareNamesTheShapeAndBothOutcomes(t *testing.T) {
	s := Shape{Name: "one-container-two-shared", File: "manifests/differential/one-container-two-shared.yaml"}
	real := Outcome{Phase: corev1.PodFailed, Reason: "UnexpectedAdmissionError", Message: rejected}
	for name, c := range map[string]struct {
		sim  Outcome
		want []string
	}{
		"the simulator admits what the kubelet rejects": {
			Outcome{Phase: corev1.PodRunning, Devices: 2},
			[]string{"on phase, reason, message, device count", "phase Running, reason none, message none, 2 distinct devices", "phase Failed, reason UnexpectedAdmissionError"},
		},
		"another message": {
			Outcome{Phase: corev1.PodFailed, Reason: "UnexpectedAdmissionError", Message: "Allocate failed: too many"},
			[]string{"on message\n", `message "Allocate failed: too many"`, "found 2, which is unexpected"},
		},
		"another device count": {
			Outcome{Phase: corev1.PodFailed, Reason: "UnexpectedAdmissionError", Message: rejected, Devices: 1},
			[]string{"on device count", "1 distinct devices", "0 distinct devices"},
		},
	} {
		err := Compare(s, real, c.sim)
		if err == nil {
			t.Errorf("%s: Compare agreed", name)
			continue
		}
		for _, w := range append(c.want, "pod shape one-container-two-shared (manifests/differential/one-container-two-shared.yaml)", "real kubelet:", "simulated kubelet:") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", name, err, w)
			}
		}
	}
}

func TestParseDevices(t *testing.T) {
	for log, want := range map[string]struct {
		ids []string
		ok  bool
	}{
		"NVIDIA_VISIBLE_DEVICES=GPU-a::0,GPU-a::1\n": {[]string{"GPU-a::0", "GPU-a::1"}, true},
		"NVIDIA_VISIBLE_DEVICES=<unset>\n":           {nil, true},
		"starting\n":                                 {nil, false},
		"":                                           {nil, false},
	} {
		ids, ok := ParseDevices(log, "NVIDIA_VISIBLE_DEVICES")
		if ok != want.ok || strings.Join(ids, ",") != strings.Join(want.ids, ",") {
			t.Errorf("ParseDevices(%q) = %v, %v; want %v, %v", log, ids, ok, want.ids, want.ok)
		}
	}
	if n := Distinct([]string{"GPU-a", "GPU-a", "GPU-b", ""}); n != 2 {
		t.Errorf("Distinct = %d, want 2 (an init container's device reused by the app container counts once)", n)
	}
}

func TestObserveReportsContainersWithoutComparingThem(t *testing.T) {
	p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning,
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}},
		ContainerStatuses:     []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}},
	}}
	o := Observe(p, []string{"GPU-a", "GPU-a"}, nil)
	if o.Devices != 1 || o.Phase != corev1.PodRunning || o.Containers != "init terminated: Completed; main waiting: CrashLoopBackOff" {
		t.Errorf("Observe = %+v", o)
	}
}

func TestSightIsCompared(t *testing.T) {
	if got, want := SightOf("main", []string{"GPU-a", "GPU-b"}, []string{"GPU-a::1"}), (ContainerSight{"main", 2, 1}); got != want {
		t.Errorf("SightOf = %+v, want %+v", got, want)
	}
	log := "FAKEGPU_DEVICE_IDS=GPU-a\nfakegpu-sees=<no NVIDIA runtime>\n"
	if gpus, runtime, ok := ParseSight(log); len(gpus) != 0 || runtime || !ok {
		t.Errorf("ParseSight(%q) = %v, %v, %v; want none, no runtime, ok", log, gpus, runtime, ok)
	}
	run := Outcome{Phase: corev1.PodRunning, Sight: []ContainerSight{{"main", 1, 0}}}
	sees := run
	sees.Sight = []ContainerSight{{"main", 2, 1}}
	if err := Compare(Shape{Name: "s"}, run, sees); err == nil || !strings.Contains(err.Error(), "what the containers see") {
		t.Errorf("Compare of different sight = %v, want a disagreement on what the containers see", err)
	}
	if err := Compare(Shape{Name: "s"}, run, run); err != nil {
		t.Errorf("Compare of the same sight: %v", err)
	}
}
