package dra

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/wait"
	"github.com/gpupool/gpupool/e2e/workload"
	"github.com/gpupool/gpupool/fakegpu"
)

// switchTimeout bounds how long a node takes to show a switch of its
// driver: the simulated stack writes the node's resources and its slices
// in one pass.
const switchTimeout = 15 * time.Second

// migration is one node of a device-plugin pool moved to DRA the way the
// fleet's DRA pool of the same SKU (its twin) is served.
type migration struct {
	from, to fleet.Pool
	node     string
	// The node's DRA annotations and device-plugin deploy label before
	// the move (absent: not in the map), restored after.
	before map[string]*string
}

// migrationPair finds a pool whose GPUs the device plugin serves whole and
// a DRA pool serving the same SKU's GPUs whole: what a team moving the
// first to DRA would make it look like.
func migrationPair(t *testing.T, r *harness.Run) (from, to fleet.Pool) {
	t.Helper()
	for _, p := range r.Fleet.Spec.Pools {
		if !p.GPU() || p.DRA != nil {
			continue
		}
		if res, err := r.IntendedResource(p); err != nil || res != fakegpu.ResourceGPU {
			continue
		}
		for _, q := range r.Fleet.Spec.Pools {
			if q.GPU() && q.DRA != nil && q.SKU == p.SKU && q.DRA.Mode == fakegpu.DRAWholeGPU && q.DRA.ConsumableShares == "" {
				return p, q
			}
		}
	}
	t.Skipf("fleet %s has no pool of whole GPUs served by the device plugin beside a DRA pool of the same SKU serving them whole: no migration to try", r.Fleet.Metadata.Name)
	return
}

// migrated is the node's DRA annotations and deploy label as the twin
// pool's nodes have them (fleet/nodes.go: the device plugin off unless the
// pool's labels say otherwise).
func (m *migration) migrated() map[string]*string {
	str := func(s string) *string { return &s }
	out := map[string]*string{
		fakegpu.AnnotationDRA:           str(m.to.DRA.Mode),
		fakegpu.AnnotationDRAShares:     nil,
		fakegpu.LabelDeployDevicePlugin: str("false"),
	}
	if v, ok := m.to.Labels[fakegpu.LabelDeployDevicePlugin]; ok {
		out[fakegpu.LabelDeployDevicePlugin] = str(v)
	}
	return out
}

// apply writes the annotations and the label (nil: removed).
func (m *migration) apply(ctx context.Context, r *harness.Run, set map[string]*string) error {
	ann, lab := map[string]any{}, map[string]any{}
	for k, v := range set {
		dst := ann
		if k == fakegpu.LabelDeployDevicePlugin {
			dst = lab
		}
		if v == nil {
			dst[k] = nil
		} else {
			dst[k] = *v
		}
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann, "labels": lab}})
	_, err := r.Client.CoreV1().Nodes().Patch(ctx, m.node, types.MergePatchType, b, metav1.PatchOptions{})
	return err
}

// drain evicts the pod, as `kubectl drain` does (PodDisruptionBudgets
// apply), and waits until it is gone with its claims.
func drain(ctx context.Context, r *harness.Run, pod *corev1.Pod) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
	if err := r.Client.CoreV1().Pods(pod.Namespace).EvictV1(ctx, ev); err != nil {
		return fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if err := wait.For(ctx, fmt.Sprintf("evicted pod %s/%s to be gone", pod.Namespace, pod.Name), expect.ScheduleTimeout, func(ctx context.Context) (bool, string, error) {
		p, err := r.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && p.UID != pod.UID {
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		return false, expect.Describe(p), nil
	}); err != nil {
		return err
	}
	return expect.ClaimsGone(ctx, r.Client, map[types.UID]bool{pod.UID: true})
}

// serves waits for the node to show which way it serves res: through DRA
// (a device for each GPU, none allocatable through a device plugin) or
// through the device plugin (all allocatable, no DRA device).
func serves(ctx context.Context, r *harness.Run, node, res string, gpus int, dra bool) error {
	what := fmt.Sprintf("node %s to offer %d %s through the device plugin and publish no DRA device", node, gpus, res)
	if dra {
		what = fmt.Sprintf("node %s to publish %d DRA devices serving %s and offer none through a device plugin", node, gpus, res)
	}
	return wait.For(ctx, what, switchTimeout, func(ctx context.Context) (bool, string, error) {
		n, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		devs, err := r.DRADevices(ctx, node)
		if err != nil {
			return false, "", err
		}
		served, alloc := fakegpu.DRADevicesFor(devs, res), suite.Allocatable(n, res)
		ok := served == gpus && alloc == 0
		if !dra {
			ok = len(devs) == 0 && alloc == int64(gpus)
		}
		return ok, fmt.Sprintf("%d DRA devices serve it, %d allocatable through the device plugin", served, alloc), nil
	})
}

// gpuHolders maps each GPU (its UUID) of the node to the pods holding it:
// through the device plugin (the devices its Allocate gave) or through
// DRA (their claims' allocated devices).
func gpuHolders(ctx context.Context, r *harness.Run, node string) (map[string][]string, error) {
	pods, err := r.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return nil, fmt.Errorf("listing node %s's pods: %w", node, err)
	}
	devs, err := r.DRADevices(ctx, node)
	if err != nil {
		return nil, err
	}
	uuidOf := map[string]string{}
	for _, d := range devs {
		if u := d.Attributes["uuid"].StringValue; u != nil {
			uuidOf[d.Name] = *u
		}
	}
	claims, err := r.Client.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ResourceClaims: %w", err)
	}
	held := map[string][]string{}
	live := map[types.UID]string{}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		key := p.Namespace + "/" + p.Name
		live[p.UID] = key
		for _, id := range strings.Split(p.Annotations[fakegpu.AnnotationVisibleDevices], ",") {
			if id != "" {
				held[id] = append(held[id], key+" (device plugin)")
			}
		}
	}
	for _, cl := range claims.Items {
		if cl.Status.Allocation == nil {
			continue
		}
		var by []string
		for _, ref := range cl.Status.ReservedFor {
			if key, ok := live[ref.UID]; ok {
				by = append(by, key)
			}
		}
		if len(by) == 0 {
			continue
		}
		for _, res := range cl.Status.Allocation.Devices.Results {
			// The driver names each node's pool after the node (dra-facts §2).
			if res.Driver != fakegpu.DRADriver || res.Pool != node {
				continue
			}
			id := uuidOf[res.Device]
			if id == "" {
				id = res.Device
			}
			held[id] = append(held[id], strings.Join(by, ", ")+" (claim "+cl.Name+")")
		}
	}
	return held, nil
}

func TestMigrationKeepsThePool(t *testing.T) {
	c := checks.DRAMigrationKeepsThePool
	var m *migration
	f := suite.Feature(c).
		Setup(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			from, to := migrationPair(t, r)
			nodes, _, err := r.Disruptable(ctx, from.Name)
			if err != nil {
				t.Fatal(err)
			}
			if len(nodes) == 0 {
				t.Skipf("no node of pool %s is named with --disruptive-nodes", from.Name)
			}
			n := nodes[len(nodes)-1]
			m = &migration{from: from, to: to, node: n.Name, before: map[string]*string{}}
			for k := range m.migrated() {
				src := n.Annotations
				if k == fakegpu.LabelDeployDevicePlugin {
					src = n.Labels
				}
				if v, ok := src[k]; ok {
					m.before[k] = &v
				} else {
					m.before[k] = nil
				}
			}
			return ctx
		}).
		Assess("a node moved to DRA after a drain takes the pool's pods through the DeviceClass mapping, gives no GPU twice, and its pool's other pods keep running", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			res, err := r.IntendedResource(m.from)
			if err != nil {
				t.Fatal(err)
			}
			class, err := r.DeviceClassMapping(ctx, res)
			if err != nil {
				t.Fatalf("pool %s cannot move to DRA: %v (its pods asking %s would find no device on a moved node)", m.from.Name, err, res)
			}
			ns, domain, err := suite.NamespaceFor(ctx, m.from)
			if err != nil {
				t.Fatal(err)
			}
			pinned := func(name, node string) workload.Pod {
				return workload.New(c.ID, ns, m.from.Name+"-"+name).ForPool(m.from, domain).NodeSelector(map[string]string{corev1.LabelHostname: node})
			}
			running := func(pod workload.Pod) *corev1.Pod {
				created, err := expect.Admitted(ctx, r.Client, pod.Pod)
				if err != nil {
					t.Fatal(err)
				}
				got, err := expect.PodReaches(ctx, r.Client, ns, created.Name, "run on node "+pod.Spec.NodeSelector[corev1.LabelHostname], expect.ScheduleTimeout, func(p *corev1.Pod) (bool, string) {
					return p.Status.Phase == corev1.PodRunning, expect.Describe(p)
				})
				if err != nil {
					t.Fatal(err)
				}
				return got
			}

			// Before: the pool's pods run on the node to move and on another.
			poolNodes, err := r.PoolNodes(ctx, m.from.Name, domain)
			if err != nil {
				t.Fatal(err)
			}
			var stay *corev1.Pod
			for _, n := range poolNodes {
				if n.Name != m.node {
					stay = running(pinned("stays", n.Name).GPU(res, 1))
					break
				}
			}
			moved := running(pinned("drained", m.node).GPU(res, 1))

			// The move, as a team does it: cordon, drain, switch the
			// driver, uncordon.
			if err := r.Cordon(ctx, m.node, true); err != nil {
				t.Fatal(err)
			}
			if err := drain(ctx, r, moved); err != nil {
				t.Fatal(err)
			}
			if err := m.apply(ctx, r, m.migrated()); err != nil {
				t.Fatalf("switching node %s to DRA: %v", m.node, err)
			}
			if err := serves(ctx, r, m.node, res, m.from.GPUsPerNode, true); err != nil {
				t.Errorf("node %s was switched to DRA as pool %s's nodes are (%s): %v", m.node, m.to.Name, describe(m.migrated()), err)
			}
			if err := r.Cordon(ctx, m.node, false); err != nil {
				t.Fatal(err)
			}

			// After: the pool's pods fill the moved node through the mapping.
			var fill []*corev1.Pod
			for i := range m.from.GPUsPerNode {
				created, err := expect.Admitted(ctx, r.Client, pinned(fmt.Sprintf("moved-%d", i), m.node).GPU(res, 1).Pod)
				if err != nil {
					t.Fatal(err)
				}
				fill = append(fill, created)
			}
			if err := expect.AllScheduled(ctx, r.Client, fill); err != nil {
				t.Errorf("pods asking %s no longer schedule onto the moved node %s: %v", res, m.node, err)
			}
			for _, p := range fill {
				got, err := expect.PodReaches(ctx, r.Client, ns, p.Name, "run with its devices prepared", 10*time.Second, func(p *corev1.Pod) (bool, string) {
					return p.Status.Phase == corev1.PodRunning && (p.Status.ExtendedResourceClaimStatus == nil || p.Annotations[fakegpu.AnnotationCDIDevices] != ""),
						expect.Describe(p) + ", CDI devices " + fmt.Sprintf("%q", p.Annotations[fakegpu.AnnotationCDIDevices])
				})
				if err != nil {
					t.Error(err)
					continue
				}
				if got.Status.ExtendedResourceClaimStatus == nil {
					t.Errorf("pod %s/%s asking %s runs on the moved node %s without a claim: a device plugin served it, not DeviceClass %s", ns, p.Name, res, m.node, class)
				}
			}

			// A claim for one GPU more than the node has stays Pending.
			tmpl := createTemplate(ctx, t, r, c.ID, ns, m.from.Name+"-one-gpu", class)
			extra, err := expect.Admitted(ctx, r.Client, pinned("one-more", m.node).RuntimeClass(workload.RuntimeClass).ClaimFromTemplate("gpu", tmpl).Pod)
			if err != nil {
				t.Fatal(err)
			}
			if err := expect.PendingWith(ctx, r.Client, ns, extra.Name, "cannot allocate all claims"); err != nil {
				t.Errorf("with the %d GPUs of the moved node %s held, a claim for one more: %v", m.from.GPUsPerNode, m.node, err)
			}
			held, err := gpuHolders(ctx, r, m.node)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range slices.Sorted(maps.Keys(held)) {
				if len(held[id]) > 1 {
					t.Errorf("GPU %s of the moved node %s is given twice: %s", id, m.node, strings.Join(held[id], "; "))
				}
			}
			t.Logf("node %s after the move: %d GPUs held", m.node, len(held))

			if stay != nil {
				p, err := r.Client.CoreV1().Pods(ns).Get(ctx, stay.Name, metav1.GetOptions{})
				switch {
				case err != nil:
					t.Errorf("pod %s/%s on another node of pool %s, running before the move: %v", ns, stay.Name, m.from.Name, err)
				case p.UID != stay.UID || p.Status.Phase != corev1.PodRunning:
					t.Errorf("pod %s/%s on another node of pool %s stopped running during the move: %s", ns, stay.Name, m.from.Name, expect.Describe(p))
				}
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if m == nil {
				return ctx
			}
			// The check's pods are gone by now (suite.Feature's teardown).
			r := suite.From(ctx)
			if err := m.apply(ctx, r, m.before); err != nil {
				t.Errorf("restoring node %s: %v", m.node, err)
			}
			if err := r.Cordon(ctx, m.node, false); err != nil {
				t.Errorf("restoring node %s: %v", m.node, err)
			}
			res, err := r.IntendedResource(m.from)
			if err == nil {
				err = serves(ctx, r, m.node, res, m.from.GPUsPerNode, false)
			}
			if err != nil {
				t.Errorf("restoring node %s: %v", m.node, err)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func describe(set map[string]*string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if set[k] == nil {
			out = append(out, k+" removed")
		} else {
			out = append(out, k+"="+*set[k])
		}
	}
	return strings.Join(out, ", ")
}
