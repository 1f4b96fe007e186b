// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/workload"
	"github.com/gpupool/gpupool/fakegpu"
)

func TestNoCrossTrustSharedDevice(t *testing.T) {
	c := checks.DRANoCrossTrustSharedDevice
	f := suite.Feature(c).
		Assess("a pod of one trust domain asking for a shared GPU on another's nodes is denied, by a claim or by the mapped limit", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			for _, p := range sharedDRAPools(t, r) {
				class, res := classFor(ctx, t, r, p)
				a, b := p.TrustDomains[0], p.TrustDomains[1]
				nsA, err := r.TrustNamespace(ctx, a)
				if err != nil {
					t.Fatal(err)
				}
				tmpl := createTemplate(ctx, t, r, c.ID, nsA, p.Name+"-share", class)
				for _, how := range slices.Sorted(maps.Keys(crossTrustShapes)) {
					// The same shape aimed at its own domain is admitted:
					// the denial is about the trust domain, not the shape.
					own := crossTrustShapes[how](c.ID, nsA, p, &a, tmpl, res)
					if err := expect.WouldBeAdmitted(ctx, r.Client, own.Pod); err != nil {
						t.Errorf("pool %s: a pod of %s asking, by %s, for a GPU on its own domain's nodes: %v", p.Name, a.Name, how, err)
					}
					cross := crossTrustShapes[how](c.ID, nsA, p, &b, tmpl, res)
					if err := expect.Denied(ctx, r.Client, cross.Pod, ""); err != nil {
						t.Errorf("pool %s: a pod of %s asking, by %s, for a GPU on %s's nodes: %v", p.Name, a.Name, how, b.Name, err)
					}
				}
			}
			return ctx
		}).
		Assess("with every trust domain filling the pool, and one trying the other's nodes for real, no device is allocated to the claims of two trusts", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			for _, p := range sharedDRAPools(t, r) {
				class, res := classFor(ctx, t, r, p)
				per := claimsPerDevice(p)
				trustOf, err := r.TrustOf(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				var created []*corev1.Pod
				// The first domain's tenant also tries the second's nodes,
				// for real: a candidate that admits it shows here as a
				// device the claims of two trusts hold.
				a, b := p.TrustDomains[0], p.TrustDomains[1]
				nsA, err := r.TrustNamespace(ctx, a)
				if err != nil {
					t.Fatal(err)
				}
				intruder := createTemplate(ctx, t, r, c.ID, nsA, p.Name+"-intrude", class)
				for _, how := range slices.Sorted(maps.Keys(crossTrustShapes)) {
					pod := crossTrustShapes[how](c.ID, nsA, p, &b, intruder, res)
					if got, err := r.Client.CoreV1().Pods(nsA).Create(ctx, pod.Pod, metav1.CreateOptions{}); err == nil {
						created = append(created, got)
					}
				}
				for _, d := range p.TrustDomains {
					ns, err := r.TrustNamespace(ctx, d)
					if err != nil {
						t.Fatal(err)
					}
					tmpl := createTemplate(ctx, t, r, c.ID, ns, p.Name+"-fill", class)
					// As many claims from a template as the domain's devices
					// take. Not half through the mapped limit: with
					// extended-resource claims in the mix, about one fill in
					// four left a claim pod Pending for over 150 s beside a
					// free share (kube-scheduler v1.37.2; docs/dra.md "GPUs
					// served by DRA"), which is the scheduler's, not the
					// candidate's. The limit form is tried above.
					for i := 0; i < per*p.GPUsPerNode*d.Nodes; i++ {
						pod := workload.New(c.ID, ns, fmt.Sprintf("%s-%s-%d", p.Name, d.Name, i)).ForPool(p, &d).
							RuntimeClass(workload.RuntimeClass).ClaimFromTemplate("gpu", tmpl)
						got, err := expect.Admitted(ctx, r.Client, pod.Pod)
						if err != nil {
							t.Fatal(err)
						}
						created = append(created, got)
					}
				}
				// A pod the scheduler refuses for good is no verdict on
				// the candidate: the rule is about what the devices hold.
				// (Claims alone, about 1 fill in 20 of the whole suite left
				// one claim pod Unschedulable beside a free share with
				// nothing changing after: the scheduler's, docs/dra.md.)
				refused, err := expect.ScheduledOrRefused(ctx, r.Client, created)
				holders, herr := deviceHolders(ctx, r, p, trustOf)
				if herr != nil {
					t.Fatal(herr)
				}
				if err != nil {
					// What holds the pool's devices says why they were full.
					t.Errorf("%v\nthe pool's devices are held by: %s", err, holders)
				}
				if len(refused) > 0 {
					t.Logf("pool %s: the scheduler left %d of %d pods Pending: %s", p.Name, len(refused), len(created), strings.Join(refused, "; "))
				}
				if err := holders.noneAcrossTrusts(p, per); err != nil {
					t.Error(err)
				}
				// Each domain must have got a device, or two trusts never
				// met on the pool and the rule was not tried.
				for _, d := range p.TrustDomains {
					if holders.heldBy(d.Name) {
						continue
					}
					why := ""
					if len(refused) > 0 {
						why = fmt.Sprintf("; the scheduler refused %d pods, first %s", len(refused), refused[0])
					}
					t.Errorf("pool %s: trust domain %s filling the pool got no device of it, so no two trusts met on it%s", p.Name, d.Name, why)
				}
				t.Logf("pool %s: devices held by: %s", p.Name, holders)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// crossTrustShapes are the ways a tenant asks for a shared DRA GPU on a
// trust domain's nodes: a claim from a template, and the limit a
// DeviceClass maps (the scheduler's extended-resource claim).
var crossTrustShapes = map[string]func(check, ns string, p fleet.Pool, d *fleet.TrustDomain, tmpl, res string) workload.Pod{
	"a claim from a template": func(check, ns string, p fleet.Pool, d *fleet.TrustDomain, tmpl, _ string) workload.Pod {
		return workload.New(check, ns, p.Name+"-claim-on-"+d.Name).ForPool(p, d).RuntimeClass(workload.RuntimeClass).ClaimFromTemplate("gpu", tmpl)
	},
	"the mapped limit": func(check, ns string, p fleet.Pool, d *fleet.TrustDomain, _, res string) workload.Pod {
		return workload.New(check, ns, p.Name+"-limit-on-"+d.Name).ForPool(p, d).GPU(res, 1)
	},
}

// sharedDRAPools are the DRA pools whose devices go to several claims at
// once and whose nodes are split between trust domains.
func sharedDRAPools(t *testing.T, r *harness.Run) []fleet.Pool {
	t.Helper()
	var out []fleet.Pool
	for _, p := range r.Fleet.Spec.Pools {
		if p.GPU() && p.SharesDevices() && len(p.TrustDomains) >= 2 {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Skipf("fleet %s has no DRA pool with consumable shares split by trust domain", r.Fleet.Metadata.Name)
	}
	return out
}

// claimsPerDevice is how many one-device claims that ask no capacity one
// device takes (dra-facts §2 "ConsumableShares": N shares of default 1;
// unlimited has no bound, 2 show sharing; under memory a claim asking
// none takes all of it).
func claimsPerDevice(p fleet.Pool) int {
	switch s := p.DRA.ConsumableShares; s {
	case fakegpu.SharesUnlimited:
		return 2
	case fakegpu.SharesMemory:
		return 1
	default:
		n, _ := strconv.Atoi(s) // the fleet was validated
		return max(n, 1)
	}
}

func createTemplate(ctx context.Context, t *testing.T, r *harness.Run, check, ns, name, class string) string {
	t.Helper()
	tmpl := workload.ClaimTemplate(check, ns, name, class, 1)
	harness.Own(&tmpl.ObjectMeta)
	if _, err := r.Client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ResourceClaimTemplate %s/%s: %v", ns, name, err)
	}
	return name
}

// holders maps each device of a pool (pool/device) to the trust of the
// claims allocated it, and those claims.
type holders map[string]map[string][]string

// deviceHolders reads every allocated claim of the cluster (templates'
// and the scheduler's extended-resource claims alike) that holds a device
// of the pool, each claim's trust its namespace's: a claim of a namespace
// of no trust domain sharing a tenant's GPU is across trusts too.
func deviceHolders(ctx context.Context, r *harness.Run, p fleet.Pool, trustOf map[string]string) (holders, error) {
	nodes, err := r.PoolNodes(ctx, p.Name, nil)
	if err != nil {
		return nil, err
	}
	onPool := map[string]bool{} // the driver names each node's pool after the node (dra-facts §2)
	for _, n := range nodes {
		onPool[n.Name] = true
	}
	claims, err := r.Client.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ResourceClaims: %w", err)
	}
	h := holders{}
	for _, cl := range claims.Items {
		if cl.Status.Allocation == nil {
			continue
		}
		trust := trustOf[cl.Namespace]
		if trust == "" {
			trust = "namespace " + cl.Namespace + " (no trust domain)"
		}
		for _, res := range cl.Status.Allocation.Devices.Results {
			if res.Driver != fakegpu.DRADriver || !onPool[res.Pool] {
				continue
			}
			dev := res.Pool + "/" + res.Device
			if h[dev] == nil {
				h[dev] = map[string][]string{}
			}
			h[dev][trust] = append(h[dev][trust], cl.Namespace+"/"+cl.Name)
		}
	}
	return h, nil
}

func (h holders) String() string {
	if len(h) == 0 {
		return "no claim"
	}
	var out []string
	for _, dev := range slices.Sorted(maps.Keys(h)) {
		var parts []string
		for _, trust := range slices.Sorted(maps.Keys(h[dev])) {
			parts = append(parts, fmt.Sprintf("%s (%s)", trust, strings.Join(h[dev][trust], ", ")))
		}
		out = append(out, dev+": "+strings.Join(parts, " and "))
	}
	return strings.Join(out, "; ")
}

// heldBy says whether a claim of the trust domain holds a device.
func (h holders) heldBy(trust string) bool {
	for _, byTrust := range h {
		if len(byTrust[trust]) > 0 {
			return true
		}
	}
	return false
}

// noneAcrossTrusts holds the rule: no device is allocated to the claims
// of two trusts. Sharing must have happened where a device takes more
// than one claim, else the rule was not tried.
func (h holders) noneAcrossTrusts(p fleet.Pool, per int) error {
	var bad []string
	shared := 0
	for _, dev := range slices.Sorted(maps.Keys(h)) {
		byTrust := h[dev]
		n := 0
		for _, cls := range byTrust {
			n += len(cls)
		}
		if n > 1 {
			shared++
		}
		if len(byTrust) > 1 {
			bad = append(bad, holders{dev: byTrust}.String())
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("pool %s: GPUs allocated to the claims of two trusts: %s", p.Name, strings.Join(bad, "; "))
	}
	if len(h) == 0 {
		return fmt.Errorf("pool %s: no claim holds a device of the pool: nothing to hold to the rule", p.Name)
	}
	if per > 1 && shared == 0 {
		return fmt.Errorf("pool %s: its devices take %d claims each, but none was allocated to two: the pool's sharing was not tried", p.Name, per)
	}
	return nil
}
