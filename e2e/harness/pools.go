// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/workload"
	"github.com/gpupool/gpupool/fakegpu"
)

// TrustOf maps every namespace of the pool's trust domains (a namespace
// belongs to a domain when it carries the domain's labels) to the domain.
func (r *Run) TrustOf(ctx context.Context, p fleet.Pool) (map[string]string, error) {
	out := map[string]string{}
	for _, d := range p.TrustDomains {
		list, err := r.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: labels.Set(d.Labels).String()})
		if err != nil {
			return nil, err
		}
		for _, ns := range list.Items {
			out[ns.Name] = d.Name
		}
	}
	return out, nil
}

// TrustNamespace returns a namespace that belongs to the trust domain:
// one carrying every label the domain puts on its nodes (e.g. trust=tenant-a).
func (r *Run) TrustNamespace(ctx context.Context, d fleet.TrustDomain) (string, error) {
	list, err := r.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: labels.Set(d.Labels).String()})
	if err != nil {
		return "", err
	}
	if len(list.Items) == 0 {
		return "", fmt.Errorf("no namespace belongs to trust domain %s: the candidate has no namespace labelled %s", d.Name, labels.Set(d.Labels))
	}
	return list.Items[0].Name, nil
}

// PoolOf returns the pool a node belongs to.
func PoolOf(n *corev1.Node) string { return n.Labels[fleet.LabelPool] }

// ExpectOnPool waits for the pod to be bound and checks its node belongs to pool.
func (r *Run) ExpectOnPool(ctx context.Context, ns, name, pool string) error {
	pod, err := expect.Scheduled(ctx, r.Client, ns, name)
	if err != nil {
		return err
	}
	node, err := r.Client.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if got := PoolOf(node); got != pool {
		return fmt.Errorf("expected pod %s/%s on pool %s, but it landed on node %s of pool %q", ns, name, pool, node.Name, got)
	}
	return nil
}

// PoolNodes lists the nodes of a pool (optionally of one trust domain).
func (r *Run) PoolNodes(ctx context.Context, pool string, domain *fleet.TrustDomain) ([]corev1.Node, error) {
	sel := labels.Set{fleet.LabelPool: pool}
	if domain != nil {
		sel[fleet.LabelTrustDomain] = domain.Name
	}
	if r.SimulatedPools {
		sel[LabelRun] = RunID() // the run's own nodes, not the cluster's
	}
	list, err := r.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, fmt.Errorf("pool %s has no nodes", pool)
	}
	return list.Items, nil
}

// DRADevices are the devices NVIDIA's DRA driver publishes for a node:
// those of the newest generation of the node's pool (dra-facts §1).
func (r *Run) DRADevices(ctx context.Context, node string) ([]resourcev1.Device, error) {
	list, err := r.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
		FieldSelector: fields.AndSelectors(fields.OneTermEqualSelector("spec.driver", fakegpu.DRADriver), fields.OneTermEqualSelector("spec.nodeName", node)).String()})
	if err != nil {
		return nil, fmt.Errorf("listing node %s's ResourceSlices: %w", node, err)
	}
	var gen int64
	for _, s := range list.Items {
		gen = max(gen, s.Spec.Pool.Generation)
	}
	var out []resourcev1.Device
	for _, s := range list.Items {
		if s.Spec.Pool.Generation == gen {
			out = append(out, s.Spec.Devices...)
		}
	}
	return out, nil
}

// Insufficient is what the scheduler says of a pod that no node can give
// res: "Insufficient <res>", or, when a DeviceClass maps res onto DRA,
// "cannot allocate all claims", since a node offering none of res is then
// asked to serve it through DRA (dra-facts §3 "Who serves", §4 "Pending
// messages").
func (r *Run) Insufficient(ctx context.Context, res string) (string, error) {
	classes, err := r.Client.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("listing DeviceClasses: %w", err)
	}
	for _, c := range classes.Items {
		if c.Spec.ExtendedResourceName != nil && *c.Spec.ExtendedResourceName == res {
			return "cannot allocate all claims", nil
		}
	}
	return "Insufficient " + res, nil
}

// FirstPool returns the first GPU pool designed for mode whose GPUs the
// device plugin serves (a DRA pool of the same mode is FirstDRAPool's), or
// skips the test.
func (r *Run) FirstPool(t *testing.T, mode string) fleet.Pool {
	t.Helper()
	for _, p := range r.Fleet.PoolsWithMode(mode) {
		if p.DRA == nil {
			return p
		}
	}
	t.Skipf("fleet %s has no %s pool served by the device plugin", r.Fleet.Metadata.Name, mode)
	return fleet.Pool{}
}

// FirstDRAPool is the fleet's first pool served by DRA; without one the
// test is skipped.
func (r *Run) FirstDRAPool(t *testing.T) fleet.Pool {
	t.Helper()
	for _, p := range r.Fleet.Spec.Pools {
		if p.GPU() && p.DRA != nil {
			return p
		}
	}
	t.Skipf("fleet %s has no DRA pool", r.Fleet.Metadata.Name)
	return fleet.Pool{}
}

// DeviceClassMapping is the DeviceClass that maps the extended resource
// res onto DRA: the class a tenant of a DRA pool names in its claims.
func (r *Run) DeviceClassMapping(ctx context.Context, res string) (string, error) {
	classes, err := r.Client.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("listing DeviceClasses: %w", err)
	}
	for _, c := range classes.Items {
		if c.Spec.ExtendedResourceName != nil && *c.Spec.ExtendedResourceName == res {
			return c.Name, nil
		}
	}
	return "", fmt.Errorf("expected a DeviceClass mapping %s (the DRA pool's tenants ask for it), but none does", res)
}

// LayoutAdvertisement is what a node of MIG pool p, at its designed
// layout, should advertise once relabelled to the named mig-parted layout
// (error: the GPU cannot take it). GPUs the layout leaves out keep the
// designed layout (MIG off if that did not apply).
func (r *Run) LayoutAdvertisement(p fleet.Pool, layout string) (map[string]int64, error) {
	sku, err := fakegpu.LookupSKU(p.SKU)
	if err != nil {
		return nil, err
	}
	if p.Mode() != fleet.ModeMIG || r.Stack.MIGParted == nil {
		return nil, fmt.Errorf("pool %s is not a MIG pool with a mig-parted config", p.Name)
	}
	designed, err := r.Stack.MIGParted.Apply(p.Sharing.MIG.Config, sku, p.GPUsPerNode)
	if err != nil {
		designed = make([]fakegpu.GPUState, p.GPUsPerNode)
	}
	gpus, err := r.Stack.MIGParted.ApplyTo(layout, sku, designed)
	if err != nil {
		return nil, err
	}
	ad := fakegpu.Advertise(fakegpu.NodeInventory{SKU: sku, Count: p.GPUsPerNode}, fakegpu.StackState{MIGStrategy: p.Sharing.MIG.Strategy, MIG: gpus})
	return ad.Resources, ad.Err
}

// Layouts returns, for MIG pool p, another layout its GPUs can take (one
// that changes what the node advertises) and one they cannot.
func (r *Run) Layouts(p fleet.Pool) (other, unfit string, err error) {
	current, err := r.LayoutAdvertisement(p, p.Sharing.MIG.Config)
	if err != nil {
		return "", "", err
	}
	for _, name := range r.Stack.MIGParted.Names() {
		ad, err := r.LayoutAdvertisement(p, name)
		switch {
		case err != nil && unfit == "":
			unfit = name
		case err == nil && other == "" && len(ad) > 0 && fmt.Sprint(ad) != fmt.Sprint(current):
			other = name
		}
	}
	if other == "" || unfit == "" {
		return other, unfit, fmt.Errorf("pool %s: the mig-parted config lacks another layout (%q) or an unfit one (%q)", p.Name, other, unfit)
	}
	return other, unfit, nil
}

// TenantNamespaces lists the namespaces that belong to any trust domain of
// the fleet (the tenants of the GPU pools).
func (r *Run) TenantNamespaces(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, p := range r.Fleet.Spec.Pools {
		for _, d := range p.TrustDomains {
			list, err := r.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: labels.Set(d.Labels).String()})
			if err != nil {
				return nil, err
			}
			for _, ns := range list.Items {
				if !seen[ns.Name] {
					seen[ns.Name] = true
					out = append(out, ns.Name)
				}
			}
		}
	}
	return out, nil
}

// EnsureServiceAccounts creates the check pods' own service account in
// every namespace that lacks it (tenant namespaces come from the candidate).
func (r *Run) EnsureServiceAccounts(ctx context.Context) error {
	nss, err := r.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	// One list of the accounts there are, so a check's setup creates only
	// the missing ones rather than trying every namespace.
	have := map[string]bool{}
	sas, err := r.Client.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", workload.ServiceAccount).String()})
	if err != nil {
		return err
	}
	for _, sa := range sas.Items {
		have[sa.Namespace] = true
	}
	for _, ns := range nss.Items {
		if ns.Status.Phase == corev1.NamespaceTerminating || have[ns.Name] {
			continue
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: workload.ServiceAccount, Namespace: ns.Name}}
		Own(&sa.ObjectMeta) // only if created here: a tenant's own stays
		_, err := r.Client.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{})
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
		case apierrors.IsNotFound(err), apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			// Deleted since the list (another check's namespace, going
			// away while suites run side by side): no pod of ours goes there.
		default:
			return fmt.Errorf("namespace %s: %w", ns.Name, err)
		}
	}
	return nil
}

// Cordon marks the node unschedulable (on) or schedulable again, as
// `kubectl cordon` and `uncordon` do.
func (r *Run) Cordon(ctx context.Context, node string, on bool) error {
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"unschedulable": on}})
	_, err := r.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, b, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("setting node %s unschedulable=%v: %w", node, on, err)
	}
	return nil
}
