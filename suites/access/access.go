// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package access

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/wait"
	"github.com/gpupool/gpupool/e2e/workload"
	"github.com/gpupool/gpupool/fakegpu"
	"github.com/gpupool/gpupool/fakegpu/controller"
)

// sightTimeout bounds the wait for the simulated kubelet to record what a
// bound pod's containers see. A verdict never waits for it (the record is
// what is judged), only a record that never comes does: 20 s ran out once
// for the last of 60 pods with two mutants and an exploration run beside
// (2026-12-05), so it leaves room for a loaded machine.
const sightTimeout = 45 * time.Second

// tenantPod is one way a tenant writes a pod that names GPUs without
// asking for one.
type tenantPod struct {
	name string
	// what says how it names GPUs, for the failure message.
	what  string
	build func(p workload.Pod, uuids string) workload.Pod
	// crossToo: also tried from another trust domain's namespace.
	crossToo bool
	// bound: the pod names its node (spec.nodeName) instead of selecting
	// and tolerating the pool; the kubelet checks only NoExecute taints
	// (kubelet-facts §1), so a NoSchedule taint does not keep it off.
	bound bool
	// source is a ConfigMap (or Secret, if secret) the pod reads its env from.
	source map[string]string
	secret bool
}

func setEnv(p workload.Pod, name, value string) workload.Pod {
	p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: name, Value: value})
	return p
}

func image(p workload.Pod, img string) workload.Pod {
	p.Spec.Containers[0].Image = img
	return p
}

// tenantPods are the ways in of access §8.1: the variable from
// the image, env, envFrom and valueFrom, each value form, with and without
// the RuntimeClass; and each image the fleet declares whose ENV sets the
// variable (an image a team built FROM CUDA under its own name), tried
// as the CUDA image is.
func tenantPods(source string, images []fleet.Image) []tenantPod {
	rc := func(p workload.Pod) workload.Pod { return p.RuntimeClass(workload.RuntimeClass) }
	var declared []tenantPod
	for i, im := range images {
		v, sets := im.SetsVisibleDevices()
		if !sets {
			continue
		}
		ref := im.Image
		declared = append(declared, tenantPod{name: fmt.Sprintf("declared-image-%d", i), crossToo: true,
			what:  fmt.Sprintf("the fleet's image %s (ENV NVIDIA_VISIBLE_DEVICES=%s), no RuntimeClass", ref, v),
			build: func(p workload.Pod, _ string) workload.Pod { return image(p, ref) }})
	}
	return append(declared, []tenantPod{
		{name: "cuda-image", what: "a CUDA image (ENV NVIDIA_VISIBLE_DEVICES=all), no RuntimeClass", crossToo: true,
			build: func(p workload.Pod, _ string) workload.Pod { return image(p, workload.CUDAImage) }},
		{name: "cuda-image-rc", what: "a CUDA image under RuntimeClass nvidia",
			build: func(p workload.Pod, _ string) workload.Pod { return rc(image(p, workload.CUDAImage)) }},
		{name: "env-all", what: "env NVIDIA_VISIBLE_DEVICES=all, no RuntimeClass",
			build: func(p workload.Pod, _ string) workload.Pod { return setEnv(p, fakegpu.EnvVisibleDevices, "all") }},
		{name: "env-index-rc", what: "env NVIDIA_VISIBLE_DEVICES=0 under RuntimeClass nvidia", crossToo: true,
			build: func(p workload.Pod, _ string) workload.Pod { return rc(setEnv(p, fakegpu.EnvVisibleDevices, "0")) }},
		{name: "env-uuid", what: "env NVIDIA_VISIBLE_DEVICES=<the pool's GPU UUIDs>, no RuntimeClass",
			build: func(p workload.Pod, uuids string) workload.Pod { return setEnv(p, fakegpu.EnvVisibleDevices, uuids) }},
		{name: "envfrom-cm-cdi-rc", what: "envFrom a ConfigMap naming CDI devices (management.nvidia.com/gpu=all) under RuntimeClass nvidia",
			source: map[string]string{fakegpu.EnvVisibleDevices: fakegpu.CDIKindManagement + "=all"},
			build: func(p workload.Pod, _ string) workload.Pod {
				p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: source}}}}
				return rc(p)
			}},
		{name: "envfrom-secret-all", what: "envFrom a Secret with NVIDIA_VISIBLE_DEVICES=all, no RuntimeClass", secret: true, crossToo: true,
			source: map[string]string{fakegpu.EnvVisibleDevices: "all"},
			build: func(p workload.Pod, _ string) workload.Pod {
				p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: source}}}}
				return p
			}},
		{name: "valuefrom-cm-all-rc", what: "env valueFrom a ConfigMap key holding all, under RuntimeClass nvidia",
			source: map[string]string{"devices": "all"},
			build: func(p workload.Pod, _ string) workload.Pod {
				p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: fakegpu.EnvVisibleDevices, ValueFrom: &corev1.EnvVarSource{
					ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: source + "-key"}, Key: "devices"}}})
				return rc(p)
			}},
		{name: "sys-admin-env-all", what: "a container adding SYS_ADMIN (privileged to the toolkit) with env NVIDIA_VISIBLE_DEVICES=all",
			build: func(p workload.Pod, _ string) workload.Pod {
				p = setEnv(p, fakegpu.EnvVisibleDevices, "all")
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}
				return p
			}},
		{name: "hostpath-dev-null", what: "a hostPath /dev/null mounted where the device plugin's volume-mounts requests go, naming the pool's GPU UUIDs",
			build: func(p workload.Pod, uuids string) workload.Pod {
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "dev-null", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/dev/null"}}})
				for _, id := range strings.Split(uuids, ",") {
					p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{
						Name: "dev-null", MountPath: fakegpu.VolumeMountDir + "/" + id, ReadOnly: true})
				}
				return p
			}},
		{name: "nodename-env-all", what: "spec.nodeName set to a node of the pool (no selector, no toleration) and env NVIDIA_VISIBLE_DEVICES=all", bound: true, crossToo: true,
			build: func(p workload.Pod, _ string) workload.Pod { return setEnv(p, fakegpu.EnvVisibleDevices, "all") }},
	}...)
}

// target is where a check's pods for one pool go: the namespace, and the
// trust domain whose nodes they aim at.
type target struct {
	pool   fleet.Pool
	ns     string
	domain *fleet.TrustDomain
	cross  bool // the namespace belongs to another trust domain
}

// targets are the pool's own namespace (its first trust domain's, on a
// split pool) and, on a split pool, another trust domain's namespace aimed
// at the first domain's nodes.
func targets(ctx context.Context, t *testing.T, r *harness.Run, p fleet.Pool) []target {
	ns, domain, err := suite.NamespaceFor(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	out := []target{{pool: p, ns: ns, domain: domain}}
	if len(p.TrustDomains) > 1 {
		// A candidate with no namespace of the other domain has no tenant
		// there to try; sharing and dra judge the domains themselves.
		other, err := r.TrustNamespace(ctx, p.TrustDomains[1])
		if err != nil {
			t.Logf("pool %s: no pod from another trust domain tried: %v", p.Name, err)
			return out
		}
		out = append(out, target{pool: p, ns: other, domain: domain, cross: true})
	}
	return out
}

// poolUUIDs are the GPU UUIDs of every node of the pool, as nvidia-smi -L
// in any pod on them prints them: what a tenant can name.
func poolUUIDs(ctx context.Context, r *harness.Run, p fleet.Pool) (string, error) {
	nodes, err := r.PoolNodes(ctx, p.Name, nil)
	if err != nil {
		return "", err
	}
	var ids []string
	for _, n := range nodes {
		inv, ok, err := fakegpu.Inventory(n.Annotations)
		if err != nil || !ok {
			continue
		}
		ids = append(ids, fakegpu.DeviceIDs(n.Name, fakegpu.ResourceGPU, int64(inv.Count), 1)...)
	}
	return strings.Join(ids, ","), nil
}

// sourceObjects creates the ConfigMaps and Secrets the tenant pods read,
// labelled with the check so teardown removes them, and owned by the run
// so a run killed before its teardown leaves them to 'gpupool down'.
func sourceObjects(ctx context.Context, r *harness.Run, check, ns, name string) error {
	meta := func(n string) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: n, Namespace: ns, Labels: map[string]string{workload.LabelCheck: check}}
		harness.Own(&m)
		return m
	}
	for _, tp := range tenantPods(name, nil) {
		if tp.source == nil {
			continue
		}
		var err error
		switch {
		case tp.secret:
			_, err = r.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: meta(name), StringData: tp.source}, metav1.CreateOptions{})
		case tp.name == "valuefrom-cm-all-rc":
			_, err = r.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta(name + "-key"), Data: tp.source}, metav1.CreateOptions{})
		default:
			_, err = r.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta(name), Data: tp.source}, metav1.CreateOptions{})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the env source of pod shape %s in %s: %w", tp.name, ns, err)
		}
	}
	return nil
}

// removeSourcesOf is the teardown of a check that made env sources.
func removeSourcesOf(check string) features.Func {
	return func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
		if err := removeSources(ctx, suite.From(ctx), check); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		return ctx
	}
}

// removeSources deletes the check's ConfigMaps and Secrets in every namespace.
func removeSources(ctx context.Context, r *harness.Run, check string) error {
	sel := labels.Set{workload.LabelCheck: check}.String()
	cms, err := r.Client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return err
	}
	for _, o := range cms.Items {
		if err := r.Client.CoreV1().ConfigMaps(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	secs, err := r.Client.CoreV1().Secrets("").List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return err
	}
	for _, o := range secs.Items {
		if err := r.Client.CoreV1().Secrets(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// createAt is how many pods createAll has in flight: each create waits on
// the candidate's admission policies, about 0.2 s loaded, and one tenant
// pod does not depend on another's admission.
const createAt = 8

// createAll creates the pods side by side and returns, in the order
// given, those admitted; a pod denied at admission is counted in refused
// (it sees nothing).
func createAll(ctx context.Context, r *harness.Run, tries []created) (admitted []created, refused int, err error) {
	got := make([]*corev1.Pod, len(tries))
	errs := make([]error, len(tries))
	var wg sync.WaitGroup
	slots := make(chan struct{}, createAt)
	for i, c := range tries {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			got[i], errs[i] = r.Client.CoreV1().Pods(c.pod.Namespace).Create(ctx, c.pod, metav1.CreateOptions{})
		})
	}
	wg.Wait()
	for i, c := range tries {
		switch err := errs[i]; {
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
			refused++
		case err != nil:
			return nil, 0, fmt.Errorf("creating pod %s/%s: %w", c.pod.Namespace, c.pod.Name, err)
		default:
			admitted = append(admitted, created{got[i], c.what})
		}
	}
	return admitted, refused, nil
}

// created is a pod the apiserver admitted, with what it tries.
type created struct {
	pod  *corev1.Pod
	what string
}

// sightsOf waits until every admitted pod is bound or refused for good by
// the scheduler, then until the simulated kubelet has recorded what the
// bound ones' containers see, or ended them before they started (a
// kubelet refusal: ended names them with why). One list of the check's
// pods a poll. Pods the scheduler refuses and pods on real kubelets
// (whose runtime the simulator does not judge) are in neither.
func sightsOf(ctx context.Context, r *harness.Run, pods []created) (sights map[string]fakegpu.PodSight, ended map[string]string, err error) {
	var list []*corev1.Pod
	for _, c := range pods {
		list = append(list, c.pod)
	}
	if _, err := expect.ScheduledOrRefused(ctx, r.Client, list); err != nil {
		return nil, nil, err
	}
	sights, ended = map[string]fakegpu.PodSight{}, map[string]string{}
	if len(pods) == 0 {
		return sights, ended, nil
	}
	want := map[string]bool{}
	for _, c := range pods {
		want[c.pod.Namespace+"/"+c.pod.Name] = true
	}
	sel := labels.Set{workload.LabelCheck: pods[0].pod.Labels[workload.LabelCheck]}.String()
	real := map[string]bool{}
	err = wait.For(ctx, fmt.Sprintf("the simulated kubelet to record what the containers of %d pods see (%s)", len(pods), fakegpu.AnnotationGPUSight), sightTimeout, func(ctx context.Context) (bool, string, error) {
		got, err := r.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, "", err
		}
		var left []string
		for i := range got.Items {
			p := &got.Items[i]
			key := p.Namespace + "/" + p.Name
			if !want[key] || p.Spec.NodeName == "" {
				continue // not one of these, or refused by the scheduler: it runs nowhere
			}
			if _, done := sights[key]; done {
				continue
			}
			if _, seen := real[p.Spec.NodeName]; !seen {
				n, err := r.Client.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				real[p.Spec.NodeName] = fakegpu.RealKubelet(n.Annotations)
			}
			if real[p.Spec.NodeName] {
				continue
			}
			s, ok, err := fakegpu.DecodePodSight(p.Annotations)
			if err != nil {
				return false, "", err
			}
			switch why, never := stuckReason(p); {
			case ok:
				sights[key] = s
			case never:
				ended[key] = why // no container started: it sees nothing
			default:
				left = append(left, key+" ("+expect.Describe(p)+")")
			}
		}
		sort.Strings(left)
		if len(left) > 3 {
			left = append(left[:3], fmt.Sprintf("and %d more", len(left)-3))
		}
		return len(left) == 0, "not recorded yet: " + strings.Join(left, "; "), nil
	})
	return sights, ended, err
}

// stuckReason reports a pod that ended before its containers started.
func stuckReason(p *corev1.Pod) (string, bool) {
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return fmt.Sprintf("phase %s, reason %s: %s", p.Status.Phase, p.Status.Reason, p.Status.Message), true
	}
	return "", false
}

func TestNoGPUWithoutAllocation(t *testing.T) {
	c := checks.AccessNoGPUWithoutAllocation
	f := suite.Feature(c).
		Assess("tenant pods that ask for no GPU but name GPUs see none on any GPU pool", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			source := "gpupool-visible-devices"
			var tries []created // built in order, created side by side
			for _, p := range r.Fleet.Spec.Pools {
				if !p.GPU() {
					continue
				}
				uuids, err := poolUUIDs(ctx, r, p)
				if err != nil {
					t.Fatal(err)
				}
				for _, tg := range targets(ctx, t, r, p) {
					if err := sourceObjects(ctx, r, c.ID, tg.ns, source); err != nil {
						t.Fatal(err)
					}
					nodes, err := r.PoolNodes(ctx, p.Name, tg.domain)
					if err != nil {
						t.Fatal(err)
					}
					for _, tp := range tenantPods(source, r.Fleet.Spec.Images) {
						// Across trust domains a few shapes say enough.
						if tg.cross && !tp.crossToo {
							continue
						}
						name := p.Name + "-" + tp.name
						what := tp.what
						if tg.cross {
							name = p.Name + "-x-" + tp.name
							what += fmt.Sprintf(", from namespace %s aimed at trust domain %s's nodes", tg.ns, tg.domain.Name)
						}
						pod := workload.New(c.ID, tg.ns, name)
						if tp.bound {
							pod.Spec.NodeName = nodes[0].Name
						} else {
							pod = pod.ForPool(p, tg.domain)
						}
						tries = append(tries, created{tp.build(pod, uuids).Pod, what})
					}
				}
			}
			pods, refused, err := createAll(ctx, r, tries)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d tenant pods admitted, %d denied at admission", len(pods), refused)
			sights, _, err := sightsOf(ctx, r, pods)
			if err != nil {
				t.Fatal(err)
			}
			for _, cp := range pods {
				key := cp.pod.Namespace + "/" + cp.pod.Name
				for ctr, s := range sights[key] {
					if len(s.Sees) > 0 {
						t.Errorf("expected pod %s (%s, no GPU requested) to see no GPU, but container %s on node %s sees %s via %s",
							key, cp.what, ctr, nodeOf(ctx, r, cp.pod), brief(s.Sees), s.Via)
					}
				}
			}
			return ctx
		}).
		Assess("a tenant who changes its pod after admission still sees no GPU: an image swapped for a CUDA image, an ephemeral container naming all GPUs", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			afterAdmission(ctx, t, c.ID)
			return ctx
		}).
		Teardown(removeSourcesOf(c.ID)).Feature()
	testenv.Test(t, f)
}

func nodeOf(ctx context.Context, r *harness.Run, p *corev1.Pod) string {
	got, err := r.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		return "?"
	}
	return got.Spec.NodeName
}

// gpuPods creates, for every GPU pool, well-formed GPU pods changed by each
// of shapes (nil shapes: the pod as is), and waits for what they see.
func gpuPods(ctx context.Context, t *testing.T, check string, shapes map[string]func(workload.Pod) workload.Pod) ([]created, map[string]fakegpu.PodSight, map[string]string) {
	r := suite.From(ctx)
	var pods []created
	for _, p := range r.Fleet.Spec.Pools {
		if !p.GPU() {
			continue
		}
		res, err := r.IntendedResource(p)
		if err != nil {
			t.Fatal(err)
		}
		names := make([]string, 0, len(shapes))
		for n := range shapes {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, shape := range names {
			base, err := suite.WellFormedPod(ctx, r, check, p, p.Name+"-"+shape)
			if err != nil {
				t.Fatal(err)
			}
			pod := shapes[shape](workload.Pod{Pod: base}).Pod
			got, err := expect.Admitted(ctx, r.Client, pod)
			if err != nil {
				t.Fatalf("a well-formed GPU pod of pool %s (%s): %v", p.Name, shape, err)
			}
			pods = append(pods, created{got, fmt.Sprintf("one %s of pool %s, %s", res, p.Name, shape)})
		}
	}
	if err := expect.AllScheduled(ctx, r.Client, podsOf(pods)); err != nil {
		t.Fatal(err)
	}
	sights, ended, err := sightsOf(ctx, r, pods)
	if err != nil {
		t.Fatal(err)
	}
	return pods, sights, ended
}

func podsOf(cs []created) []*corev1.Pod {
	var out []*corev1.Pod
	for _, c := range cs {
		out = append(out, c.pod)
	}
	return out
}

func TestAllocationBoundsSight(t *testing.T) {
	c := checks.AccessAllocationBoundsSight
	const source = "gpupool-all-devices"
	f := suite.Feature(c).
		Assess("GPU pods that set NVIDIA_VISIBLE_DEVICES=all see only what they were allocated", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			for _, p := range r.Fleet.Spec.Pools {
				if !p.GPU() {
					continue
				}
				ns, _, err := suite.NamespaceFor(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				cm := &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: source, Namespace: ns, Labels: map[string]string{workload.LabelCheck: c.ID}},
					Data:       map[string]string{fakegpu.EnvVisibleDevices: "all"},
				}
				harness.Own(&cm.ObjectMeta) // left to 'gpupool down' by a killed run
				_, err = r.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					t.Fatal(err)
				}
			}
			pods, sights, _ := gpuPods(ctx, t, c.ID, map[string]func(workload.Pod) workload.Pod{
				"env-all": func(p workload.Pod) workload.Pod { return setEnv(p, fakegpu.EnvVisibleDevices, "all") },
				"envfrom-all": func(p workload.Pod) workload.Pod {
					p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: source}}}}
					return p
				},
			})
			for _, cp := range pods {
				key := cp.pod.Namespace + "/" + cp.pod.Name
				for ctr, s := range sights[key] {
					if len(s.Unallocated) > 0 {
						t.Errorf("expected pod %s (%s) to see only its allocation %s, but container %s also sees %s via %s",
							key, cp.what, strings.Join(s.Allocated, ","), ctr, brief(s.Unallocated), s.Via)
					}
				}
			}
			return ctx
		}).
		Teardown(removeSourcesOf(c.ID)).Feature()
	testenv.Test(t, f)
}

func TestGPUPodsSeeTheirGPU(t *testing.T) {
	c := checks.AccessGPUPodsSeeTheirGPU
	f := suite.Feature(c).
		Assess("a well-formed GPU pod on each GPU pool sees every device it was allocated", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			pods, sights, ended := gpuPods(ctx, t, c.ID, map[string]func(workload.Pod) workload.Pod{
				"plain":      func(p workload.Pod) workload.Pod { return p },
				"cuda-image": func(p workload.Pod) workload.Pod { return image(p, workload.CUDAImage) },
			})
			for _, cp := range pods {
				key := cp.pod.Namespace + "/" + cp.pod.Name
				if why, ok := ended[key]; ok {
					t.Errorf("expected pod %s (%s) to run seeing its GPU, but it never started: %s", key, cp.what, why)
					continue
				}
				s, ok := sights[key]
				if !ok {
					continue // on a real kubelet
				}
				allocated := 0
				for ctr, cs := range s {
					allocated += len(cs.Allocated)
					var missing []string
					for _, d := range cs.Allocated {
						if !slices.Contains(cs.Sees, d) {
							missing = append(missing, d)
						}
					}
					if len(missing) > 0 {
						t.Errorf("expected pod %s (%s) to see its GPU, but container %s does not see %s (it sees %q): %s",
							key, cp.what, ctr, strings.Join(missing, ","), strings.Join(cs.Sees, ","), cs.Via)
					}
				}
				if allocated == 0 {
					t.Errorf("expected pod %s (%s) to hold a device, but no container of it was allocated one", key, cp.what)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// brief names up to two devices of a list and counts the rest.
func brief(ids []string) string {
	if len(ids) <= 2 {
		return strings.Join(ids, ",")
	}
	return fmt.Sprintf("%d GPUs (%s, ...)", len(ids), strings.Join(ids[:2], ", "))
}

func TestToolkitMeetsCVEFloor(t *testing.T) {
	c := checks.AccessToolkitCVEFloor
	f := suite.Feature(c).
		Assess("the toolkit the ClusterPolicy deploys has every confirmed CVE fix", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			dyn, err := dynamic.NewForConfig(r.Cluster.REST)
			if err != nil {
				t.Fatal(err)
			}
			list, err := dyn.Resource(controller.ClusterPolicies).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("listing ClusterPolicies: %v", err)
			}
			if len(list.Items) == 0 {
				t.Fatal("expected a ClusterPolicy, but the cluster has none: no toolkit is deployed")
			}
			for _, cp := range list.Items {
				tag, _, _ := unstructured.NestedString(cp.Object, "spec", "toolkit", "version")
				where := "spec.toolkit.version " + tag
				if tag == "" {
					tag, where = fakegpu.ToolkitDefaultVersion, "the Operator's default toolkit "+fakegpu.ToolkitDefaultVersion+" (spec.toolkit.version unset)"
				}
				failures, advisories, err := fakegpu.ToolkitBelowFloor(tag)
				if err != nil {
					// "latest", or any tag without a release: what runs
					// changes under the cluster, and no floor can be read.
					t.Errorf("expected ClusterPolicy %s to deploy a toolkit pinned to a release, but it deploys %s, which names none (%v)", cp.GetName(), where, err)
					continue
				}
				for _, a := range advisories {
					t.Logf("advisory: ClusterPolicy %s deploys %s, which lacks %s", cp.GetName(), where, a)
				}
				for _, f := range failures {
					t.Errorf("expected ClusterPolicy %s's toolkit to be at the CVE floor, but it deploys %s, which lacks %s", cp.GetName(), where, f)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// afterAdmission admits a plain pod with no GPU request on every GPU pool,
// then changes it as the API lets its tenant: the main container's image
// for a CUDA image (the kubelet restarts it with that image's ENV), and an
// ephemeral container with NVIDIA_VISIBLE_DEVICES=all (kubectl debug's
// way in; in a namespace without Pod Security also with SYS_ADMIN, which
// the toolkit takes as privileged). Whatever the cluster admits must see
// no GPU once started.
func afterAdmission(ctx context.Context, t *testing.T, check string) {
	r := suite.From(ctx)
	type changed struct {
		pod       *corev1.Pod
		image     string
		ephemeral []string
	}
	var pods []changed
	for _, p := range r.Fleet.Spec.Pools {
		if !p.GPU() {
			continue
		}
		ns, domain, err := suite.NamespaceFor(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		pod, err := expect.Admitted(ctx, r.Client, workload.New(check, ns, p.Name+"-changed-later").ForPool(p, domain).Pod)
		if err != nil {
			t.Fatalf("a plain pod aimed at pool %s: %v", p.Name, err)
		}
		pods = append(pods, changed{pod: pod})
	}
	started, _, err := sightsOf(ctx, r, createdOf(pods, func(c changed) *corev1.Pod { return c.pod }))
	if err != nil {
		t.Fatal(err)
	}
	// A pod the scheduler refused (or one on a real kubelet) has no
	// container to change: it runs nowhere the simulator judges.
	pods = slices.DeleteFunc(pods, func(c changed) bool {
		_, ok := started[c.pod.Namespace+"/"+c.pod.Name]
		if !ok {
			t.Logf("pod %s/%s never started on a simulated node: not changed", c.pod.Namespace, c.pod.Name)
		}
		return !ok
	})
	restricted := func() *corev1.SecurityContext {
		return &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	}
	for i := range pods {
		cp := &pods[i]
		key := cp.pod.Namespace + "/" + cp.pod.Name
		pods := r.Client.CoreV1().Pods(cp.pod.Namespace)
		// Each change is made on a fresh read: the simulated kubelet and
		// kwok write the pod too.
		change := func(what string, update func(*corev1.Pod) error) (bool, error) {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				got, err := pods.Get(ctx, cp.pod.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				return update(got)
			})
			switch {
			case err == nil:
				return true, nil
			case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
				t.Logf("pod %s: %s refused: %v", key, what, err)
				return false, nil
			}
			return false, fmt.Errorf("pod %s: %s: %w", key, what, err)
		}
		ok, err := change("its image changed to a CUDA image", func(p *corev1.Pod) error {
			p.Spec.Containers[0].Image = workload.CUDAImage
			_, err := pods.Update(ctx, p, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			cp.image = workload.CUDAImage
		}
		debug := []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", Image: workload.Image, SecurityContext: restricted(),
			Env: []corev1.EnvVar{{Name: fakegpu.EnvVisibleDevices, Value: "all"}},
		}}}
		if !enforcesPodSecurity(ctx, r, cp.pod.Namespace) {
			debug = append(debug, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug-admin", Image: workload.Image,
				SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}},
				Env:             []corev1.EnvVar{{Name: fakegpu.EnvVisibleDevices, Value: "all"}},
			}})
		}
		for _, e := range debug {
			ok, err := change("ephemeral container "+e.Name+" added", func(p *corev1.Pod) error {
				p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, e)
				_, err := pods.UpdateEphemeralContainers(ctx, p.Name, p, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				cp.ephemeral = append(cp.ephemeral, e.Name)
			}
		}
	}
	// Wait until the simulated kubelet has judged every container that
	// started after admission, then judge them all.
	var last string
	err = wait.For(ctx, "the simulated kubelet to record what the changed pods' containers see", sightTimeout, func(ctx context.Context) (bool, string, error) {
		var left []string
		for _, cp := range pods {
			p, err := r.Client.CoreV1().Pods(cp.pod.Namespace).Get(ctx, cp.pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			sight, _, err := fakegpu.DecodePodSight(p.Annotations)
			if err != nil {
				return false, "", err
			}
			if cp.image != "" && sight[p.Spec.Containers[0].Name].Image != cp.image {
				left = append(left, p.Name+" (its new image)")
			}
			for _, e := range cp.ephemeral {
				if _, ok := sight[e]; !ok {
					left = append(left, p.Name+" ("+e+")")
				}
			}
		}
		last = strings.Join(left, ", ")
		return len(left) == 0, "not recorded yet: " + last, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range pods {
		p, err := r.Client.CoreV1().Pods(cp.pod.Namespace).Get(ctx, cp.pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sight, _, _ := fakegpu.DecodePodSight(p.Annotations)
		for ctr, s := range sight {
			if len(s.Sees) > 0 {
				t.Errorf("expected pod %s/%s (no GPU requested, changed after admission) to see no GPU, but container %s (image %s) on node %s sees %s via %s",
					p.Namespace, p.Name, ctr, s.Image, p.Spec.NodeName, brief(s.Sees), s.Via)
			}
		}
	}
}

func createdOf[T any](items []T, pod func(T) *corev1.Pod) []created {
	var out []created
	for _, it := range items {
		out = append(out, created{pod: pod(it)})
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// enforcesPodSecurity reports a namespace whose Pod Security admission
// enforces baseline or restricted (which refuse SYS_ADMIN).
func enforcesPodSecurity(ctx context.Context, r *harness.Run, ns string) bool {
	o, err := r.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return false
	}
	level := o.Labels["pod-security.kubernetes.io/enforce"]
	return level == "baseline" || level == "restricted"
}
