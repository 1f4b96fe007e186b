// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

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

// migration is one node of a device-plugin pool moved to DRA: its device
// plugin off, NVIDIA's DRA driver serving its GPUs as it serves the fleet's
// DRA pool of the same SKU (its twin).
type migration struct {
	from, to fleet.Pool
	node     string
	// The node's DRA annotations and device-plugin deploy label before
	// the move (absent: nil), restored after, and what it then offered of
	// the pool's resource.
	before      map[string]*string
	res         string
	allocatable int64
	cordoned    bool
}

// migrationPair finds a pool whose GPUs the device plugin serves whole and
// a DRA pool serving the same SKU's GPUs whole: what a team moving the
// first to DRA would make it look like.
func migrationPair(t *testing.T, r *harness.Run) (from, to fleet.Pool) {
	t.Helper()
	for _, p := range r.Fleet.Spec.Pools {
		if !p.GPU() || p.DRA != nil || p.Mode() != fleet.ModeExclusive {
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

// migrated is the node's switch: the device plugin taken off as the GPU
// Operator does (nvidia.com/gpu.deploy.device-plugin=false), NVIDIA's DRA
// driver serving its GPUs as it serves the twin pool's.
func (m *migration) migrated() map[string]*string {
	str := func(s string) *string { return &s }
	return map[string]*string{
		fakegpu.AnnotationDRA:           str(m.to.DRA.Mode),
		fakegpu.AnnotationDRAShares:     nil,
		fakegpu.LabelDeployDevicePlugin: str("false"),
	}
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

// drain evicts every pod of the node but DaemonSet and static ones, as
// `kubectl drain` does (PodDisruptionBudgets apply), and waits until they
// are gone with their claims: a pod left holding a device-plugin GPU would
// have it handed out again through DRA.
func drain(ctx context.Context, r *harness.Run, node string) error {
	list, err := r.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return fmt.Errorf("listing node %s's pods: %w", node, err)
	}
	evicted := map[types.UID]bool{}
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.Annotations[corev1.MirrorPodAnnotationKey] != "" ||
			slices.ContainsFunc(p.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "DaemonSet" }) {
			continue
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
		if err := r.Client.CoreV1().Pods(p.Namespace).EvictV1(ctx, ev); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("draining node %s: evicting pod %s/%s: %w", node, p.Namespace, p.Name, err)
		}
		evicted[p.UID] = true
	}
	if err := wait.For(ctx, fmt.Sprintf("the %d pods evicted from node %s to be gone", len(evicted), node), expect.ScheduleTimeout, func(ctx context.Context) (bool, string, error) {
		list, err := r.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
		if err != nil {
			return false, "", err
		}
		var left []string
		for _, p := range list.Items {
			if evicted[p.UID] {
				left = append(left, p.Namespace+"/"+p.Name)
			}
		}
		return len(left) == 0, fmt.Sprintf("left: %v", left), nil
	}); err != nil {
		return err
	}
	return expect.ClaimsGone(ctx, r.Client, evicted)
}

// serves waits for the node to show which way it serves res: through DRA
// (n devices serving it, none allocatable through a device plugin) or
// through the device plugin (n allocatable, no DRA device).
func serves(ctx context.Context, r *harness.Run, node, res string, n int, dra bool) error {
	what := fmt.Sprintf("node %s to offer %d %s through the device plugin and publish no DRA device", node, n, res)
	if dra {
		what = fmt.Sprintf("node %s to publish %d DRA devices serving %s and offer none through a device plugin", node, n, res)
	}
	return wait.For(ctx, what, switchTimeout, func(ctx context.Context) (bool, string, error) {
		got, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		devs, err := r.DRADevices(ctx, node)
		if err != nil {
			return false, "", err
		}
		served, alloc := fakegpu.DRADevicesFor(devs, res), suite.Allocatable(got, res)
		ok := served == n && alloc == 0
		if !dra {
			ok = len(devs) == 0 && alloc == int64(n)
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
		Assess("a node moved to DRA after a drain takes the pool's pods through the DeviceClass mapping, gives no GPU twice, and its pool's other pods keep running", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			// Found here, not in a Setup: a Setup that skips skips the
			// feature's teardowns too.
			from, to := migrationPair(t, r)
			res, err := r.IntendedResource(from)
			if err != nil {
				t.Fatal(err)
			}
			ns, domain, err := suite.NamespaceFor(ctx, from)
			if err != nil {
				t.Fatal(err)
			}
			// The pods a move drains are tenants': on a pool open to every
			// tenant, those of the first tenant namespace (their
			// namespace's PodDisruptionBudgets apply to the drain).
			if domain == nil {
				tenants, err := r.TenantNamespaces(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(tenants) > 0 {
					ns = slices.Min(tenants)
				}
			}
			nodes, _, err := r.Disruptable(ctx, from.Name)
			if err != nil {
				t.Fatal(err)
			}
			inDomain, err := r.PoolNodes(ctx, from.Name, domain)
			if err != nil {
				t.Fatal(err)
			}
			// A node of the tenant's trust domain, schedulable: the check's
			// pods must be able to land on it.
			nodes = slices.DeleteFunc(nodes, func(n corev1.Node) bool {
				return n.Spec.Unschedulable || !slices.ContainsFunc(inDomain, func(d corev1.Node) bool { return d.Name == n.Name })
			})
			if len(nodes) == 0 {
				t.Skipf("no node of pool %s is named with --disruptive-nodes", from.Name)
			}
			n := nodes[len(nodes)-1]
			m = &migration{from: from, to: to, node: n.Name, before: map[string]*string{}, res: res, allocatable: suite.Allocatable(&n, res), cordoned: n.Spec.Unschedulable}
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
			class, err := r.DeviceClassMapping(ctx, res)
			if err != nil {
				t.Fatalf("pool %s cannot move to DRA: %v (its pods asking %s would find no device on a moved node)", m.from.Name, err, res)
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
			// The other node nearest the moved one in name order: the
			// first ones are where sharing fills a whole node, perhaps at
			// the same time (suites.phases).
			var stay *corev1.Pod
			for _, n := range slices.Backward(poolNodes) {
				if n.Name != m.node {
					stay = running(pinned("stays", n.Name).GPU(res, 1))
					break
				}
			}
			if stay == nil {
				t.Logf("pool %s has no other node: that its other pods keep running is not tried", m.from.Name)
			}
			running(pinned("drained", m.node).GPU(res, 1))

			// The move, as a team does it: cordon, drain, switch the
			// driver, uncordon.
			if err := r.Cordon(ctx, m.node, true); err != nil {
				t.Fatal(err)
			}
			if err := drain(ctx, r, m.node); err != nil {
				t.Fatal(err)
			}
			if err := m.apply(ctx, r, m.migrated()); err != nil {
				t.Fatalf("switching node %s to DRA: %v", m.node, err)
			}
			if err := serves(ctx, r, m.node, res, m.from.GPUsPerNode, true); err != nil {
				t.Errorf("node %s was switched to DRA (%s): %v", m.node, describe(m.migrated()), err)
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
			if len(held) != m.from.GPUsPerNode {
				t.Errorf("the moved node %s has %d GPUs, and %d of them are held after the fill", m.node, m.from.GPUsPerNode, len(held))
			}

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
			if err := r.Cordon(ctx, m.node, m.cordoned); err != nil {
				t.Errorf("restoring node %s: %v", m.node, err)
			}
			if err := serves(ctx, r, m.node, m.res, int(m.allocatable), false); err != nil {
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
