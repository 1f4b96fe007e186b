// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

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

// draPools are the fleet's DRA pools, or the test is skipped.
func draPools(t *testing.T, r *harness.Run) []fleet.Pool {
	t.Helper()
	var out []fleet.Pool
	for _, p := range r.Fleet.Spec.Pools {
		if p.GPU() && p.DRA != nil {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Skipf("fleet %s has no DRA pool", r.Fleet.Metadata.Name)
	}
	return out
}

// classFor is the DeviceClass the candidate maps the pool's intended
// resource onto: what its tenants' claims name.
func classFor(ctx context.Context, t *testing.T, r *harness.Run, p fleet.Pool) (class, res string) {
	t.Helper()
	res, err := r.IntendedResource(p)
	if err != nil {
		t.Fatal(err)
	}
	if class, err = r.DeviceClassMapping(ctx, res); err != nil {
		t.Fatalf("DRA pool %s: %v", p.Name, err)
	}
	return class, res
}

// tenantOf is what a tenant of the pool writes its pods with: the class
// its claims name, its namespace and trust domain.
func tenantOf(ctx context.Context, t *testing.T, r *harness.Run, p fleet.Pool) (class, ns string, domain *fleet.TrustDomain) {
	t.Helper()
	class, _ = classFor(ctx, t, r, p)
	ns, domain, err := suite.NamespaceFor(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	return class, ns, domain
}

// runsWithDevices waits for the pod to run on the pool with the CDI
// devices the simulated kubelet prepared for its claims.
func runsWithDevices(ctx context.Context, t *testing.T, r *harness.Run, pod *corev1.Pod, pool string) {
	t.Helper()
	if err := r.ExpectOnPool(ctx, pod.Namespace, pod.Name, pool); err != nil {
		t.Error(err)
		return
	}
	if _, err := expect.PodReaches(ctx, r.Client, pod.Namespace, pod.Name, "run with its claims' devices prepared", 10*time.Second, func(p *corev1.Pod) (bool, string) {
		return p.Status.Phase == corev1.PodRunning && p.Annotations[fakegpu.AnnotationCDIDevices] != "", expect.Describe(p) + ", CDI devices " + fmt.Sprintf("%q", p.Annotations[fakegpu.AnnotationCDIDevices])
	}); err != nil {
		t.Error(err)
	}
}

func TestClaimPodsAreGPUPods(t *testing.T) {
	c := checks.DRAClaimPodsAreGPUPods
	f := suite.Feature(c).
		Assess("a well-formed pod claiming a GPU from a template runs on its DRA pool with the devices prepared; without runtimeClassName nvidia it is denied", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			for _, p := range draPools(t, r) {
				class, ns, domain := tenantOf(ctx, t, r, p)
				tmpl := workload.ClaimTemplate(c.ID, ns, p.Name+"-one-gpu", class, 1)
				if _, err := r.Client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
					t.Fatalf("creating ResourceClaimTemplate %s/%s: %v", ns, tmpl.Name, err)
				}
				pod := workload.New(c.ID, ns, p.Name+"-claim").ForPool(p, domain).RuntimeClass(workload.RuntimeClass).ClaimFromTemplate("gpu", tmpl.Name)
				created, err := expect.Admitted(ctx, r.Client, pod.Pod)
				if err != nil {
					t.Fatal(err)
				}
				runsWithDevices(ctx, t, r, created, p.Name)

				bare := workload.New(c.ID, ns, p.Name+"-claim-no-runtime").ForPool(p, domain).ClaimFromTemplate("gpu", tmpl.Name)
				if err := expect.Denied(ctx, r.Client, bare.Pod, "runtimeClassName"); err != nil {
					t.Errorf("pool %s, a claim pod: %v", p.Name, err)
				}
			}
			return ctx
		}).
		Assess("a pod limiting the DeviceClass's implicit extended resource is a GPU pod too", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			for _, p := range draPools(t, r) {
				class, ns, domain := tenantOf(ctx, t, r, p)
				res := workload.ImplicitDeviceClassResource(class)
				pod := workload.New(c.ID, ns, p.Name+"-implicit").ForPool(p, domain).GPU(res, 1)
				created, err := expect.Admitted(ctx, r.Client, pod.Pod)
				if err != nil {
					t.Fatal(err)
				}
				runsWithDevices(ctx, t, r, created, p.Name)

				bare := workload.New(c.ID, ns, p.Name+"-implicit-no-runtime").ForPool(p, domain).Limit(res, 1)
				if err := expect.Denied(ctx, r.Client, bare.Pod, "runtimeClassName"); err != nil {
					t.Errorf("pool %s, a pod limiting %s: %v", p.Name, res, err)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestOneWayPerGPU(t *testing.T) {
	c := checks.DRAOneWayPerGPU
	f := suite.Feature(c).
		Assess("no node with DRA devices of a mapped DeviceClass offers that resource through a device plugin", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			classes, err := r.Client.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var mapped []string
			for _, cl := range classes.Items {
				if cl.Spec.ExtendedResourceName != nil {
					mapped = append(mapped, *cl.Spec.ExtendedResourceName)
				}
			}
			sort.Strings(mapped)
			checked := 0
			for _, p := range draPools(t, r) {
				nodes, err := r.PoolNodes(ctx, p.Name, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range nodes {
					devs, err := r.DRADevices(ctx, n.Name)
					if err != nil {
						t.Fatal(err)
					}
					for _, res := range mapped {
						served := fakegpu.DRADevicesFor(devs, res)
						if served == 0 {
							continue
						}
						checked++
						if got := suite.Allocatable(&n, res); got > 0 {
							t.Errorf("node %s of pool %s publishes %d DRA devices serving %s and offers %d allocatable %s through the device plugin: one GPU can be given to a claim and to a limits pod at once",
								n.Name, p.Name, served, res, got, res)
						}
					}
				}
			}
			if checked == 0 {
				t.Errorf("no node of a DRA pool publishes devices of a DeviceClass that maps an extended resource (mapped: %v): nothing to hold to the rule", mapped)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
