// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/differential"
	"github.com/gpupool/gpupool/e2e/dirs"
	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/wait"
	"github.com/gpupool/gpupool/e2e/workload"
	"github.com/gpupool/gpupool/fakegpu"
	"github.com/gpupool/gpupool/fakegpu/kubeletplugin"
	"github.com/gpupool/gpupool/fakegpu/nvidiaruntime"
)

// TestKubeletSimulatorAgrees is the differential test: each pod shape of
// the corpus runs on the real node and on a KWOK node of the same pool,
// one shape at a time from the same free capacity, and the simulated
// kubelet must do what the real one did.
func TestKubeletSimulatorAgrees(t *testing.T) {
	c := checks.KubeletSimulatorAgrees
	f := suite.Feature(c)
	shapes, err := loadCorpus()
	if err != nil {
		f = f.Assess("the differential corpus loads", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			t.Fatal(err)
			return ctx
		})
		testenv.Test(t, f.Feature())
		return
	}
	d := &differentialRun{check: c.ID, cannotJoin: map[string]error{}}
	for _, s := range shapes {
		// t.Error, not t.Fatal: a shape that fails must not keep the
		// shapes after it from running (e2e-framework stops a feature's
		// assessments at the first FailNow).
		f = f.Assess(fmt.Sprintf("pod shape %s gets the same outcome from the simulated kubelet as from a real kubelet", s.Name), func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if err := d.run(ctx, t, s); err != nil {
				t.Error(err)
			}
			return ctx
		})
	}
	f = f.Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
		d.e.leave(ctx, t)
		return ctx
	})
	testenv.Test(t, f.Feature())
}

func loadCorpus() ([]differential.Shape, error) {
	dir, err := dirs.ManifestPath(differential.DefaultCorpus)
	if err != nil {
		return nil, err
	}
	return differential.Load(dir)
}

// differentialRun carries the real node from shape to shape: it stays in
// a pool while the shapes of that pool's mode run.
type differentialRun struct {
	check string
	e     *enlisted
	// cannotJoin records, per mode, why the real node could not join a
	// pool of it, so the next shapes of that mode fail at once.
	cannotJoin map[string]error
}

// run runs one shape on both sides and compares the outcomes. A shape the
// candidate's admission refuses is an error, not a skip: the check's rule
// is about every shape of the corpus, and a skip would hide from CI a
// shape nothing compared (as checks that need a tenant fail without one).
func (d *differentialRun) run(ctx context.Context, t *testing.T, s differential.Shape) error {
	r := suite.From(ctx)
	t.Logf("%s: %s", s.Name, s.Probes)
	e, err := d.join(ctx, t, s.Mode)
	if err != nil {
		return err
	}
	node, err := d.kwokNode(ctx, r, e)
	if err != nil {
		return err
	}
	if err := sameFreeCapacity(ctx, r, e, node); err != nil {
		return err
	}
	for _, rc := range s.RuntimeClasses {
		rc = rc.DeepCopy()
		harness.Own(&rc.ObjectMeta)
		_, err := r.Client.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue // the cluster's own: used, not removed
		}
		if err != nil {
			return fmt.Errorf("creating the shape's RuntimeClass %s: %w", rc.Name, err)
		}
		defer func() {
			if err := r.Client.NodeV1().RuntimeClasses().Delete(context.WithoutCancel(ctx), rc.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("removing the shape's RuntimeClass %s: %v", rc.Name, err)
			}
		}()
	}
	target := differential.Target{Check: d.check, Namespace: e.ns, Pool: e.pool, Domain: e.domain,
		Resource: e.resource, Image: e.image, Variables: []string{kubeletplugin.EnvDeviceIDs, kubeletplugin.EnvVisibleDevices}}
	if s.RunsCUDA() {
		if target.CUDA, err = r.CUDAProbeImage(ctx, e.node); err != nil {
			return fmt.Errorf("the shape runs a CUDA image: %w", err)
		}
	}
	if len(s.ClaimTemplates) > 0 {
		if target.Class, err = r.DeviceClassMapping(ctx, e.resource); err != nil {
			return fmt.Errorf("the shape's claims ask the DeviceClass that maps %s: %w", e.resource, err)
		}
	}
	// The templates are the shape's, shared by both sides: each pod gets
	// claims of its own from them.
	for _, tmpl := range s.ClaimTemplatesFor(target) {
		api := r.Client.ResourceV1().ResourceClaimTemplates(tmpl.Namespace)
		remove, err := createForShape(ctx, t, "ResourceClaimTemplate", tmpl, api.Create, api.Delete)
		if err != nil {
			return err
		}
		defer remove()
	}
	for _, cm := range s.ConfigMapsFor(target) {
		api := r.Client.CoreV1().ConfigMaps(cm.Namespace)
		remove, err := createForShape(ctx, t, "ConfigMap", cm, api.Create, api.Delete)
		if err != nil {
			return err
		}
		defer remove()
	}
	realT, simT := target, target
	realT.Side, realT.Node = differential.SideReal, e.node
	simT.Side, simT.Node = differential.SideSim, node
	realPod, simPod := s.PodFor(realT), s.PodFor(simT)
	dra := s.Mode == differential.ModeDRA
	// Both pods go, and are gone, before the next shape starts from the
	// same free capacity. A DRA shape's pods go gracefully: forced, the
	// real node's claims would still be prepared when the next shape's
	// are allocated the same devices (deleteGracefully).
	defer func() {
		if dra {
			if err := deleteGracefully(context.WithoutCancel(ctx), r, realPod.Namespace, realPod.Name, simPod.Name); err != nil {
				t.Errorf("removing the pods of shape %s: %v", s.Name, err)
			}
			return
		}
		sel := labels.Set{workload.LabelCheck: d.check, differential.LabelShape: s.Name}.String()
		if err := expect.DeletePods(context.WithoutCancel(ctx), r.Client, sel, realPod.Namespace); err != nil {
			t.Errorf("removing the pods of shape %s: %v", s.Name, err)
		}
	}()

	if _, err := r.Client.CoreV1().Pods(realPod.Namespace).Create(ctx, realPod, metav1.CreateOptions{}); err != nil {
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			// Not a kubelet's verdict: the candidate stops the shape
			// before any kubelet sees it, and is not weakened to let it by.
			return fmt.Errorf("pod shape %s could not be compared: the candidate's admission refuses it in namespace %s: %w", s.Name, realPod.Namespace, err)
		}
		return fmt.Errorf("creating pod %s/%s: %w", realPod.Namespace, realPod.Name, err)
	}
	if _, err := expect.Admitted(ctx, r.Client, simPod); err != nil {
		return fmt.Errorf("admission let the real node's pod of shape %s by and not the KWOK node's: %w", s.Name, err)
	}

	realOut, err := realOutcome(ctx, r, realPod, dra)
	if err != nil {
		return fmt.Errorf("pod shape %s on the real kubelet of %s: %w", s.Name, e.node, err)
	}
	simOut, err := simOutcome(ctx, r, simPod, dra)
	if err != nil {
		return fmt.Errorf("pod shape %s on the simulated kubelet of %s: %w", s.Name, node, err)
	}
	if err := differential.Compare(s, realOut, simOut); err != nil {
		return err
	}
	t.Logf("%s agrees: real kubelet on %s: %s; simulated kubelet on %s: %s", s.Name, e.node, realOut, node, simOut)
	return nil
}

// createForShape creates one of a shape's namespaced objects, owned by
// gpupool, and returns what removes it after the shape.
func createForShape[T metav1.Object](ctx context.Context, t *testing.T, kind string, obj T,
	create func(context.Context, T, metav1.CreateOptions) (T, error), del func(context.Context, string, metav1.DeleteOptions) error) (func(), error) {
	harness.Own(obj)
	where := obj.GetNamespace() + "/" + obj.GetName()
	if _, err := create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating the shape's %s %s: %w", kind, where, err)
	}
	return func() {
		if err := del(context.WithoutCancel(ctx), obj.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("removing the shape's %s %s: %v", kind, where, err)
		}
	}, nil
}

// join has the real node in the fleet's first pool of mode (a fleet
// without one skips the shape), moving it out of the pool it is in.
func (d *differentialRun) join(ctx context.Context, t *testing.T, mode string) (*enlisted, error) {
	r := suite.From(ctx)
	var pool fleet.Pool
	if mode == differential.ModeDRA {
		pool = r.FirstDRAPool(t)
	} else {
		pool = r.FirstPool(t, mode)
	}
	if d.e != nil && d.e.pool.Name == pool.Name {
		return d.e, nil
	}
	if err := d.cannotJoin[mode]; err != nil {
		return nil, fmt.Errorf("the real node could not join a %s pool for an earlier shape: %w", mode, err)
	}
	d.e.leave(ctx, t)
	d.e = nil
	e, err := enlistIn(ctx, r, pool)
	if err != nil {
		err = fmt.Errorf("the real node could not join pool %s: %w", pool.Name, err)
		d.cannotJoin[mode] = err
		return nil, err
	}
	d.e = e
	return e, nil
}

// enlistIn is enlist for a given pool, returning its failure.
func enlistIn(ctx context.Context, r *harness.Run, pool fleet.Pool) (*enlisted, error) {
	var err error
	e := &enlisted{pool: pool}
	if e.node, err = realNode(ctx, r); err != nil {
		return nil, err
	}
	if e.resource, err = r.IntendedResource(pool); err != nil {
		return nil, err
	}
	if e.ns, e.domain, err = suite.NamespaceFor(ctx, pool); err != nil {
		return nil, err
	}
	if e.image, err = r.ProbeImage(ctx, e.node); err != nil {
		return nil, err
	}
	_, err = r.DevicePluginPod(ctx, e.node)
	e.hadPlugin = err == nil
	if e.advertised, e.restore, err = r.EnlistRealNode(ctx, e.node, pool, e.domain, e.resource); err != nil {
		return nil, err
	}
	return e, nil
}

// realNode is harness.RealNode without a *testing.T.
func realNode(ctx context.Context, r *harness.Run) (string, error) {
	nodes, err := r.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for _, n := range nodes.Items {
		if _, fake := n.Annotations[fleet.AnnotationKwokNode]; !fake {
			return n.Name, nil
		}
	}
	return "", errors.New("the cluster has no node with a real kubelet (only KWOK nodes): the differential test needs the kind provider")
}

// kwokNode picks the KWOK node the shape's other pod runs on: one of the
// real node's pool and trust domain that holds none of the resource.
func (d *differentialRun) kwokNode(ctx context.Context, r *harness.Run, e *enlisted) (string, error) {
	nodes, err := r.PoolNodes(ctx, e.pool.Name, e.domain)
	if err != nil {
		return "", err
	}
	var busy []string
	for _, n := range nodes {
		if _, fake := n.Annotations[fleet.AnnotationKwokNode]; !fake || n.Name == e.node {
			continue
		}
		held, err := holding(ctx, r, n.Name, e.resource)
		if err != nil {
			return "", err
		}
		if len(held) == 0 {
			return n.Name, nil
		}
		busy = append(busy, fmt.Sprintf("%s (%s)", n.Name, strings.Join(held, ", ")))
	}
	return "", fmt.Errorf("no KWOK node of pool %s is free to run the shape beside the real node: %s", e.pool.Name, orNone(busy))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "the pool has no KWOK node"
	}
	return strings.Join(s, "; ")
}

// holding lists the live pods on node that hold resource.
func holding(ctx context.Context, r *harness.Run, node, resource string) ([]string, error) {
	pods, err := r.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
			if q, ok := c.Resources.Limits[corev1.ResourceName(resource)]; ok && !q.IsZero() {
				out = append(out, p.Namespace+"/"+p.Name)
				break
			}
		}
	}
	return out, nil
}

// sameFreeCapacity holds the shape to a fair start: both nodes advertise
// the same count of the pool's resource, and neither has a pod holding any.
func sameFreeCapacity(ctx context.Context, r *harness.Run, e *enlisted, kwok string) error {
	n, err := r.Client.CoreV1().Nodes().Get(ctx, kwok, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if e.pool.DRA != nil {
		devs, err := r.DRADevices(ctx, kwok)
		if err != nil {
			return err
		}
		if got := int64(fakegpu.DRADevicesFor(devs, e.resource)); got != e.advertised {
			return fmt.Errorf("the nodes do not start from the same devices: KWOK node %s publishes %d serving %s, the real node's DRA plugin %d", kwok, got, e.resource, e.advertised)
		}
	}
	want := suite.Allocatable(n, e.resource)
	if err := r.WaitRealNodeAdvertises(ctx, e.node, map[string]int64{e.resource: want}); err != nil {
		return fmt.Errorf("the nodes do not start from the same capacity: KWOK node %s advertises %d %s: %w", kwok, want, e.resource, err)
	}
	held, err := holding(ctx, r, e.node, e.resource)
	if err != nil {
		return err
	}
	if len(held) > 0 {
		return fmt.Errorf("the real node %s is not free: %s hold %s", e.node, strings.Join(held, ", "), e.resource)
	}
	return nil
}

// realOutcome waits for the real kubelet's verdict on pod: rejected at
// admission, or running with each container's devices and what the fake
// NVIDIA runtime let it see in its log (on a DRA pool also the CDI devices
// the DRA plugin prepared, which it records on the pod before the kubelet
// starts a container; a device plugin may serve there too, and then the
// log has its devices).
func realOutcome(ctx context.Context, r *harness.Run, pod *corev1.Pod, dra bool) (differential.Outcome, error) {
	p, err := expect.PodReaches(ctx, r.Client, pod.Namespace, pod.Name, "be admitted and run, or be rejected, by the real kubelet (phase Running or Failed)", harness.RealNodeTimeout, func(p *corev1.Pod) (bool, string) {
		return p.Status.Phase != corev1.PodPending && p.Status.Phase != "", expect.Describe(p)
	})
	if err != nil {
		return differential.Outcome{}, err
	}
	if p.Status.Phase != corev1.PodRunning {
		return differential.Observe(p, nil, nil), nil
	}
	var devices []string
	if dra {
		devices = splitIDs(p.Annotations[fakegpu.AnnotationCDIDevices])
	}
	var sight []differential.ContainerSight
	var env []string
	for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
		ids, sees, logged, err := containerProbe(ctx, r, p, c.Name)
		if err != nil {
			return differential.Outcome{}, err
		}
		env = append(env, fmt.Sprintf("%s %s=%s", c.Name, kubeletplugin.EnvVisibleDevices, logged))
		devices = append(devices, ids...)
		if !dra {
			sight = append(sight, differential.SightOf(c.Name, sees, ids))
		}
	}
	// The log lines are in: what the pod shows now is what it ran with.
	if p, err = r.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{}); err != nil {
		return differential.Outcome{}, err
	}
	o := differential.Observe(p, devices, sight)
	// Reported, not compared: the value that won the env merge (access
	// §1.9) as the runtime read it.
	o.Containers += "; " + strings.Join(env, ", ")
	return o, nil
}

// containerProbe reads from one probe container's log the devices it was
// given, the GPUs it sees and its NVIDIA_VISIBLE_DEVICES (an init
// container's log stays readable after it exits).
func containerProbe(ctx context.Context, r *harness.Run, p *corev1.Pod, container string) (ids, sees []string, visible string, err error) {
	v := kubeletplugin.EnvDeviceIDs
	err = wait.For(ctx, fmt.Sprintf("container %s of pod %s/%s to log %s and %s", container, p.Namespace, p.Name, v, nvidiaruntime.SeesLine), harness.RealNodeTimeout, func(ctx context.Context) (bool, string, error) {
		b, err := r.Client.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		var ok1, ok2 bool
		ids, ok1 = differential.ParseDevices(string(b), v)
		sees, _, ok2 = differential.ParseSight(string(b))
		visible = differential.Logged(string(b), kubeletplugin.EnvVisibleDevices)
		return ok1 && ok2, fmt.Sprintf("log so far: %q", string(b)), nil
	})
	return ids, sees, visible, err
}

// simOutcome waits for the simulated kubelet's verdict on pod: rejected
// (phase Failed), or running with its devices and what each container
// sees recorded on the pod (on a DRA pool also the CDI devices it
// prepared, where a device plugin may serve too).
func simOutcome(ctx context.Context, r *harness.Run, pod *corev1.Pod, dra bool) (differential.Outcome, error) {
	records := []string{fakegpu.AnnotationVisibleDevices}
	if dra {
		records = append(records, fakegpu.AnnotationCDIDevices)
	}
	held := func(p *corev1.Pod) (ids []string) {
		for _, k := range records {
			ids = append(ids, splitIDs(p.Annotations[k])...)
		}
		return ids
	}
	gpuPod := asksForGPU(pod)
	p, err := expect.PodReaches(ctx, r.Client, pod.Namespace, pod.Name, "be judged by the simulated kubelet (phase Failed, or Running with its devices in "+strings.Join(records, " or ")+" and its containers' sight in "+fakegpu.AnnotationGPUSight+")", harness.RealNodeTimeout, func(p *corev1.Pod) (bool, string) {
		_, judged, _ := fakegpu.DecodePodSight(p.Annotations)
		done := p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded ||
			(p.Status.Phase == corev1.PodRunning && (len(held(p)) > 0 || !gpuPod) && judged)
		return done, fmt.Sprintf("%s, devices %s, sight recorded %v", expect.Describe(p), orUnset(strings.Join(held(p), ",")), judged)
	})
	if err != nil {
		return differential.Outcome{}, err
	}
	if p.Status.Phase != corev1.PodRunning || dra {
		return differential.Observe(p, held(p), nil), nil
	}
	ps, _, err := fakegpu.DecodePodSight(p.Annotations)
	if err != nil {
		return differential.Outcome{}, err
	}
	var sight []differential.ContainerSight
	for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
		cs := ps[c.Name]
		sight = append(sight, differential.SightOf(c.Name, cs.Sees, cs.Allocated))
	}
	return differential.Observe(p, held(p), sight), nil
}

// asksForGPU reports whether pod asks for a GPU (a limit of nvidia.com/ or
// a claim): a pod that does not holds no devices to wait for.
func asksForGPU(pod *corev1.Pod) bool {
	if len(pod.Spec.ResourceClaims) > 0 {
		return true
	}
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		for name := range c.Resources.Limits {
			if strings.HasPrefix(string(name), fakegpu.LabelPrefix) {
				return true
			}
		}
	}
	return false
}

func splitIDs(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

func orUnset(s string) string {
	if s == "" {
		return "not recorded"
	}
	return s
}
