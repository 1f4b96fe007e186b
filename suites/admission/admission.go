// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package admission

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/workload"
)

// The contract's SKU rule names this selector; a denial that does not
// mention it leaves the tenant guessing, and fails the check.
const skuSelectorKey = "sku"

func TestRequiresRuntimeClass(t *testing.T) {
	c := checks.RequiresRuntimeClass
	f := suite.Feature(c).
		Assess("a GPU pod without runtimeClassName is denied, naming runtimeClassName", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			pod := wellFormedGPUPod(ctx, t, r, c.ID, "no-runtimeclass")
			pod.Spec.RuntimeClassName = nil
			if err := expect.Denied(ctx, r.Client, pod.Pod, "runtimeClassName"); err != nil {
				t.Error(err)
			}
			return ctx
		}).
		Assess("the same pod naming the nvidia RuntimeClass is admitted", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			pod := wellFormedGPUPod(ctx, t, r, c.ID, "with-runtimeclass")
			if _, err := expect.Admitted(ctx, r.Client, pod.Pod); err != nil {
				t.Error(err)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestRequiresSKUSelector(t *testing.T) {
	c := checks.RequiresSKUSelector
	f := suite.Feature(c).
		Assess("a GPU pod without nodeSelector.sku is denied, naming the sku selector", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			pod := wellFormedGPUPod(ctx, t, r, c.ID, "no-sku").Without(skuSelectorKey)
			if err := expect.Denied(ctx, r.Client, pod.Pod, skuSelectorKey); err != nil {
				t.Error(err)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestCPUPodAdmitted(t *testing.T) {
	c := checks.CPUPodAdmitted
	f := suite.Feature(c).
		Assess("a CPU-only pod with no RuntimeClass and no selector is admitted", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			pod := workload.New(c.ID, suite.Namespace(ctx), "cpu-only")
			if _, err := expect.Admitted(ctx, r.Client, pod.Pod); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("it lands on a node without GPUs", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			pod, err := expect.Scheduled(ctx, r.Client, suite.Namespace(ctx), "cpu-only")
			if err != nil {
				t.Fatal(err)
			}
			node, err := r.Client.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := r.Fleet.Pool(harness.PoolOf(node)); ok && p.GPU() {
				t.Errorf("expected the CPU pod on a CPU node, but it landed on %s of GPU pool %s", node.Name, p.Name)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// wellFormedGPUPod is a pod that follows the whole contract for the first
// exclusive GPU pool; each assessment breaks one rule of it.
func wellFormedGPUPod(ctx context.Context, t *testing.T, r *harness.Run, check, name string) workload.Pod {
	t.Helper()
	p := r.FirstPool(t, fleet.ModeExclusive)
	if _, ok := p.Labels[skuSelectorKey]; !ok {
		t.Fatalf("pool %s has no %q label, so no pod can select it by SKU", p.Name, skuSelectorKey)
	}
	pod, err := suite.WellFormedPod(ctx, r, check, p, name)
	if err != nil {
		t.Fatal(err)
	}
	return workload.Pod{Pod: pod}
}
