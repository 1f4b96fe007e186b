// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/workload"
)

// unallocatable is the scheduler's word for a claim no device of the
// node can satisfy (dra-facts §4 "Pending messages").
const unallocatable = "cannot allocate all claims"

func TestClassesSelectTheirPools(t *testing.T) {
	c := checks.DRAClassesSelectTheirPools
	f := suite.Feature(c).
		Assess("a claim of each DeviceClass a DRA pool names runs on that pool with its device prepared", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			for _, p := range classPools(ctx, t, r) {
				ns, domain, err := suite.NamespaceFor(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				for _, class := range p.DRA.DeviceClasses {
					tmpl := createTemplate(ctx, t, r, c.ID, ns, p.Name+"-"+class, class)
					pod := workload.New(c.ID, ns, p.Name+"-"+strings.ReplaceAll(class, ".", "-")).ForPool(p, domain).RuntimeClass(workload.RuntimeClass).ClaimFromTemplate("gpu", tmpl)
					created, err := expect.Admitted(ctx, r.Client, pod.Pod)
					if err != nil {
						t.Fatal(err)
					}
					runsWithDevices(ctx, t, r, created, p.Name)
				}
			}
			return ctx
		}).
		Assess("a claim of it aimed at a DRA pool of another SKU stays Pending: the class selects none of that pool's GPUs", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			tried := 0
			for _, p := range classPools(ctx, t, r) {
				for _, q := range draPools(t, r) {
					if q.SKU == p.SKU {
						continue
					}
					ns, domain, err := suite.NamespaceFor(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					for _, class := range p.DRA.DeviceClasses {
						tried++
						// Named after the pool aimed at: two pools may share a namespace.
						tmpl := createTemplate(ctx, t, r, c.ID, ns, "to-"+q.Name+"-"+class, class)
						pod := workload.New(c.ID, ns, "to-"+q.Name+"-"+strings.ReplaceAll(class, ".", "-")).ForPool(q, domain).RuntimeClass(workload.RuntimeClass).ClaimFromTemplate("gpu", tmpl)
						if _, err := expect.Admitted(ctx, r.Client, pod.Pod); err != nil {
							t.Fatal(err)
						}
						if err := expect.PendingWith(ctx, r.Client, ns, pod.Name, unallocatable); err != nil {
							t.Errorf("DeviceClass %s, named by pool %s (%s) for its SKU, aimed at pool %s (%s): %v", class, p.Name, p.SKU, q.Name, q.SKU, err)
						}
					}
				}
			}
			if tried == 0 {
				t.Logf("no DRA pool of another SKU to aim a class at")
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// classPools are the DRA pools that name DeviceClasses for their SKU, each
// class checked to exist first: a pool naming a class the candidate does
// not install leaves its tenants' claims Pending everywhere.
func classPools(ctx context.Context, t *testing.T, r *harness.Run) []fleet.Pool {
	t.Helper()
	var out []fleet.Pool
	for _, p := range draPools(t, r) {
		if len(p.DRA.DeviceClasses) == 0 {
			continue
		}
		for _, class := range p.DRA.DeviceClasses {
			if _, err := r.Client.ResourceV1().DeviceClasses().Get(ctx, class, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				t.Errorf("pool %s names DeviceClass %s for its tenants, but the candidate installs no such class", p.Name, class)
			} else if err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		t.Skipf("no DRA pool of fleet %s names DeviceClasses (dra.deviceClasses)", r.Fleet.Metadata.Name)
	}
	return out
}
