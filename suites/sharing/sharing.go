// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package sharing

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/workload"
	"github.com/gpupool/gpupool/fakegpu"
)

func TestNoCrossTrustTimeslice(t *testing.T) {
	c := checks.NoCrossTrustTimeslice
	f := suite.Feature(c).
		Assess("a shared-GPU pod from one trust domain aiming at another's nodes is denied", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			for _, p := range splitSharedPools(t, r) {
				a, b := p.TrustDomains[0], p.TrustDomains[1]
				nsA, err := r.TrustNamespace(ctx, a)
				if err != nil {
					t.Fatal(err)
				}
				res, err := r.IntendedResource(p)
				if err != nil {
					t.Fatal(err)
				}
				pod := workload.New(c.ID, nsA, p.Name+"-cross-trust").ForPool(p, &b).GPU(res, 1)
				if err := expect.Denied(ctx, r.Client, pod.Pod, ""); err != nil {
					t.Errorf("pool %s: a pod of %s aiming at %s's nodes: %v", p.Name, a.Name, b.Name, err)
				}
			}
			return ctx
		}).
		Assess("with every trust domain filling the pool, no node hosts pods of two trusts", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			for _, p := range splitSharedPools(t, r) {
				res, err := r.IntendedResource(p)
				if err != nil {
					t.Fatal(err)
				}
				replicas := int64(p.Replicated().Replicas)
				var created []*corev1.Pod
				for _, d := range p.TrustDomains {
					ns, err := r.TrustNamespace(ctx, d)
					if err != nil {
						t.Fatal(err)
					}
					// As many pods as the domain's share of the pool holds.
					for i := 0; i < int(replicas)*d.Nodes; i++ {
						d := d
						pod := workload.New(c.ID, ns, fmt.Sprintf("%s-%s-%d", p.Name, d.Name, i)).ForPool(p, &d).GPU(res, 1)
						got, err := expect.Admitted(ctx, r.Client, pod.Pod)
						if err != nil {
							t.Fatal(err)
						}
						created = append(created, got)
					}
				}
				if err := expect.AllScheduled(ctx, r.Client, created); err != nil {
					t.Error(err)
				}
				if err := noNodeSharedAcrossTrusts(ctx, r, p); err != nil {
					t.Error(err)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// splitSharedPools returns the time-sliced pools split between trust domains.
func splitSharedPools(t *testing.T, r *harness.Run) []fleet.Pool {
	var out []fleet.Pool
	for _, p := range r.Fleet.PoolsWithMode(fleet.ModeTimeSlicing) {
		if len(p.TrustDomains) >= 2 {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Skipf("fleet %s has no time-sliced pool split by trust domain", r.Fleet.Metadata.Name)
	}
	return out
}

// noNodeSharedAcrossTrusts looks at every node of the pool and the trust
// label of the namespaces of the GPU pods on it.
func noNodeSharedAcrossTrusts(ctx context.Context, r *harness.Run, p fleet.Pool) error {
	nodes, err := r.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fleet.LabelPool + "=" + p.Name})
	if err != nil {
		return err
	}
	trustOf, err := r.TrustOf(ctx, p) // namespace -> trust domain
	if err != nil {
		return err
	}
	var bad []string
	for _, n := range nodes.Items {
		pods, err := r.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n.Name).String()})
		if err != nil {
			return err
		}
		trusts := map[string]bool{}
		for _, pod := range pods.Items {
			// Node daemons (kube-proxy, a CNI agent) hold no GPU: sharing
			// the node is not sharing its GPU.
			if !usesGPU(&pod) || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
				continue
			}
			trust := trustOf[pod.Namespace]
			if trust == "" {
				trust = "untrusted namespace " + pod.Namespace
			}
			trusts[trust] = true
		}
		if len(trusts) > 1 {
			bad = append(bad, fmt.Sprintf("%s hosts pods of %s", n.Name, strings.Join(keys(trusts), " and ")))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("time-sliced GPUs shared across trust domains: %s", strings.Join(bad, "; "))
	}
	return nil
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// usesGPU reports whether any container of the pod asks for an nvidia.com
// resource.
func usesGPU(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		for name, q := range c.Resources.Limits {
			if strings.HasPrefix(string(name), fakegpu.LabelPrefix) && !q.IsZero() {
				return true
			}
		}
	}
	return false
}
