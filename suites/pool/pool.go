// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package pool

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/workload"
	"github.com/gpupool/gpupool/fakegpu"
)

func TestResourceNames(t *testing.T) {
	c := checks.PendingOnWrongResource
	f := suite.Feature(c).
		Assess("a pod limiting nvidia.com/gpu on a MIG pool stays Pending: Insufficient nvidia.com/gpu", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			for _, p := range migPools(t, r) {
				pod := workload.New(c.ID, suite.Namespace(ctx), p.Name+"-whole-gpu").
					ForPool(p, nil).GPU(fakegpu.ResourceGPU, 1)
				if _, err := expect.Admitted(ctx, r.Client, pod.Pod); err != nil {
					t.Fatal(err)
				}
				want, err := r.Insufficient(ctx, fakegpu.ResourceGPU)
				if err != nil {
					t.Fatal(err)
				}
				if err := expect.PendingWith(ctx, r.Client, pod.Namespace, pod.Name, want); err != nil {
					t.Errorf("pool %s: %v", p.Name, err)
				}
			}
			return ctx
		}).
		Assess("a pod limiting nvidia.com/gpu on a time-sliced pool that renames its replicas stays Pending: Insufficient nvidia.com/gpu", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			renamed := 0
			for _, p := range r.Fleet.PoolsWithMode(fleet.ModeTimeSlicing) {
				if d := p.Replicated(); d == nil || !d.RenameByDefault {
					continue
				}
				renamed++
				// The pool's own tenant asks: a stranger is refused before
				// the scheduler is ever asked.
				ns, domain, err := suite.NamespaceFor(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				pod := workload.New(c.ID, ns, p.Name+"-whole-gpu").
					ForPool(p, domain).GPU(fakegpu.ResourceGPU, 1)
				if _, err := expect.Admitted(ctx, r.Client, pod.Pod); err != nil {
					t.Fatal(err)
				}
				want, err := r.Insufficient(ctx, fakegpu.ResourceGPU)
				if err != nil {
					t.Fatal(err)
				}
				if err := expect.PendingWith(ctx, r.Client, pod.Namespace, pod.Name, want); err != nil {
					t.Errorf("pool %s: %v", p.Name, err)
				}
			}
			if renamed == 0 {
				t.Skip("no time-sliced pool renames its replicas")
			}
			return ctx
		}).
		Assess("the same pod limiting the pool's MIG resource is scheduled onto the pool", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			for _, p := range migPools(t, r) {
				res, err := r.IntendedResource(p)
				if err != nil {
					t.Fatal(err)
				}
				pod := workload.New(c.ID, suite.Namespace(ctx), p.Name+"-mig").
					ForPool(p, nil).GPU(res, 1)
				if _, err := expect.Admitted(ctx, r.Client, pod.Pod); err != nil {
					t.Fatal(err)
				}
				if err := r.ExpectOnPool(ctx, pod.Namespace, pod.Name, p.Name); err != nil {
					t.Errorf("pod limiting %s: %v", res, err)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestSKUIsolation(t *testing.T) {
	c := checks.SKUIsolation
	f := suite.Feature(c).
		Assess("a pod without the pool's tolerations never lands on a GPU node", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			for _, p := range r.Fleet.Spec.Pools {
				if !p.GPU() {
					continue
				}
				// Select the pool and tolerate only its trust-domain taints:
				// what keeps the pod out must be the pool's own taint.
				var domain *fleet.TrustDomain
				if len(p.TrustDomains) > 0 {
					domain = &p.TrustDomains[0]
				}
				pod := workload.New(c.ID, suite.Namespace(ctx), p.Name+"-untolerated").NodeSelector(p.Labels)
				if domain != nil {
					pod = pod.NodeSelector(domain.Labels).Tolerate(domain.Taints...)
				}
				if _, err := expect.Admitted(ctx, r.Client, pod.Pod); err != nil {
					t.Fatal(err)
				}
				if err := expect.PendingWith(ctx, r.Client, pod.Namespace, pod.Name, "untolerated taint"); err != nil {
					t.Errorf("pool %s: %v", p.Name, err)
				}
			}
			return ctx
		}).
		Assess("a well-formed pod for each GPU pool lands on that pool and nowhere else", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			for _, p := range r.Fleet.Spec.Pools {
				if !p.GPU() {
					continue
				}
				res, err := r.IntendedResource(p)
				if err != nil {
					t.Fatal(err)
				}
				ns := suite.Namespace(ctx)
				var domain *fleet.TrustDomain
				if len(p.TrustDomains) > 0 {
					domain = &p.TrustDomains[0]
					if ns, err = r.TrustNamespace(ctx, *domain); err != nil {
						t.Fatal(err)
					}
				}
				pod := workload.New(c.ID, ns, p.Name+"-well-formed").
					ForPool(p, domain).GPU(res, 1)
				if _, err := expect.Admitted(ctx, r.Client, pod.Pod); err != nil {
					t.Fatal(err)
				}
				if err := r.ExpectOnPool(ctx, pod.Namespace, pod.Name, p.Name); err != nil {
					t.Errorf("pod limiting %s: %v", res, err)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func migPools(t *testing.T, r *harness.Run) []fleet.Pool {
	pools := r.Fleet.PoolsWithMode(fleet.ModeMIG)
	if len(pools) == 0 {
		t.Skipf("fleet %s has no MIG pool", r.Fleet.Metadata.Name)
	}
	return pools
}

func TestAdvertisesDesignedResources(t *testing.T) {
	c := checks.AdvertisesDesignedResources
	f := suite.Feature(c).
		Assess("every GPU node advertises its pool's designed resource and count", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			for _, p := range r.Fleet.Spec.Pools {
				if !p.GPU() {
					continue
				}
				res, want, err := r.Intended(p)
				if err != nil {
					t.Fatal(err)
				}
				nodes, err := r.PoolNodes(ctx, p.Name, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range nodes {
					if p.DRA != nil {
						devs, err := r.DRADevices(ctx, n.Name)
						if err != nil {
							t.Fatal(err)
						}
						if got := fakegpu.DRADevicesFor(devs, res); int64(got) != want {
							t.Errorf("node %s of DRA pool %s: expected %d devices serving %s in its ResourceSlices, got %d of %d", n.Name, p.Name, want, res, got, len(devs))
						}
						continue
					}
					if got := suite.Allocatable(&n, res); got != want {
						t.Errorf("node %s of pool %s: expected %d allocatable %s, got %d (node advertises %s)", n.Name, p.Name, want, res, got, suite.Resources(gpuResources(&n)))
					}
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func gpuResources(n *corev1.Node) map[string]int64 {
	out := map[string]int64{}
	for k, v := range n.Status.Allocatable {
		if strings.HasPrefix(string(k), "nvidia.com/") {
			out[string(k)] = v.Value()
		}
	}
	return out
}
