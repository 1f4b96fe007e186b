// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package pending

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/autoscaler"
	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/explain"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/wait"
	"github.com/gpupool/gpupool/e2e/workload"
	"github.com/gpupool/gpupool/fakegpu"
)

func TestPendingExplainedByContract(t *testing.T) {
	c := checks.PendingExplained
	f := suite.Feature(c).
		Assess("every Pending GPU pod of a mixed workload is explained by the contract", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			pods := mixedWorkload(ctx, t, r, c.ID)
			var created []*corev1.Pod
			for _, p := range pods {
				got, err := expect.Admitted(ctx, r.Client, p)
				if err != nil {
					t.Fatal(err)
				}
				created = append(created, got)
			}
			// Settled: every pod is bound or the scheduler has said why not.
			err := wait.For(ctx, fmt.Sprintf("%d pods to be bound or reported unschedulable", len(created)), expect.ScheduleTimeout, func(ctx context.Context) (bool, string, error) {
				undecided := 0
				for _, p := range created {
					got, err := r.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
					if err != nil {
						return false, "", err
					}
					if got.Spec.NodeName == "" && !unschedulable(got) {
						undecided++
					}
				}
				return undecided == 0, fmt.Sprintf("%d undecided", undecided), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			nodes, err := r.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			all, err := r.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dra, err := explain.LoadDRA(ctx, r.Client)
			if err != nil {
				t.Fatal(err)
			}
			nodePools, err := autoscaledNodePools(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			cluster := explain.Cluster{Nodes: nodes.Items, Pods: all.Items, DRA: dra, NodePools: nodePools}
			pending := 0
			for i := range all.Items {
				p := &all.Items[i]
				if p.Labels[workload.LabelCheck] != c.ID || p.Spec.NodeName != "" {
					continue
				}
				pending++
				reason := explain.Pod(p, cluster)
				if reason.Category == explain.Unexplained {
					t.Errorf("Pending GPU pod %s/%s is not explained by the pool contract: %s; the scheduler says: %s", p.Namespace, p.Name, reason.Message, schedulerSays(p))
					continue
				}
				t.Logf("Pending %s/%s: %s", p.Namespace, p.Name, reason)
			}
			if pending == 0 {
				t.Errorf("expected the mixed workload to leave some GPU pods Pending, but every pod was scheduled")
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func schedulerSays(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Message
		}
	}
	return "nothing yet"
}

// unschedulable: the scheduler has said why not, Unschedulable or an
// error (a DeviceClass whose selector fails, dra-facts §6.8).
func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse &&
			(c.Reason == corev1.PodReasonUnschedulable || c.Reason == corev1.PodReasonSchedulerError) {
			return true
		}
	}
	return false
}

// mixedWorkload is what tenants submit on a busy day: pods that fit, pods
// that fill a pool past its capacity, and the usual mistakes.
func mixedWorkload(ctx context.Context, t *testing.T, r *harness.Run, check string) []*corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	ns := suite.Namespace(ctx)
	for _, p := range r.Fleet.Spec.Pools {
		if !p.GPU() {
			continue
		}
		res, perNode, err := r.Intended(p)
		if err != nil {
			t.Fatal(err)
		}
		pns, domain, err := suite.NamespaceFor(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		wellFormed := func(name string, n int64) *corev1.Pod {
			return workload.New(check, pns, name).ForPool(p, domain).GPU(res, n).Pod
		}
		switch p.Mode() {
		case fleet.ModeTimeSlicing, fleet.ModeMPS:
			// Fill the trust domain's share of the pool, and one more.
			nodes := int64(p.Nodes)
			if domain != nil {
				nodes = int64(domain.Nodes)
			}
			for i := int64(0); i <= nodes*perNode; i++ {
				pods = append(pods, wellFormed(fmt.Sprintf("%s-fill-%d", p.Name, i), 1))
			}
		default:
			pods = append(pods, wellFormed(p.Name+"-fits", 1))
			// More than any node of the pool holds.
			pods = append(pods, wellFormed(p.Name+"-too-big", perNode+1))
		}
		if p.Mode() == fleet.ModeMIG {
			pods = append(pods, workload.New(check, ns, p.Name+"-whole-gpu").ForPool(p, nil).GPU(fakegpu.ResourceGPU, 1).Pod)
		}
		if p.DRA != nil {
			pods = append(pods, otherClassPods(ctx, t, r, check, p, pns, domain, res)...)
		}
		if p.Mode() == fleet.ModeExclusive && len(pods) < 64 {
			wrongSKU := workload.New(check, ns, p.Name+"-unknown-sku").ForPool(p, nil).GPU(res, 1).
				NodeSelector(map[string]string{"sku": "gpupool-no-such-sku"})
			pods = append(pods, wrongSKU.Pod)
			noSuchResource := workload.New(check, ns, p.Name+"-no-such-resource").ForPool(p, nil).GPU("nvidia.com/mig-gpupool-none", 1)
			pods = append(pods, noSuchResource.Pod)
		}
	}
	return pods
}

// otherClassPods are a DRA pool's tenant asking for devices of a
// DeviceClass other than the one that maps the pool's resource (in the
// reference, mig.nvidia.com on a pool of whole GPUs): by a claim from a
// template, and by the class's implicit extended resource. Each must be
// explained by the devices the class selects, not left unexplained.
func otherClassPods(ctx context.Context, t *testing.T, r *harness.Run, check string, p fleet.Pool, ns string, domain *fleet.TrustDomain, res string) []*corev1.Pod {
	t.Helper()
	classes, err := r.Client.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pods []*corev1.Pod
	for _, c := range classes.Items {
		if c.Spec.ExtendedResourceName != nil && *c.Spec.ExtendedResourceName == res {
			continue
		}
		// Named for this check: dra.device-classes-select-their-pools
		// makes <pool>-<class> in the same tenant namespace, perhaps at
		// the same time.
		tpl := workload.ClaimTemplate(check, ns, "pending-"+p.Name+"-"+c.Name, c.Name, 1)
		harness.Own(&tpl.ObjectMeta)
		if _, err := r.Client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, tpl, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		claim := workload.New(check, ns, p.Name+"-claims-"+strings.ReplaceAll(c.Name, ".", "-")).ForPool(p, domain).RuntimeClass(workload.RuntimeClass).ClaimFromTemplate("gpu", tpl.Name)
		implicit := workload.New(check, ns, p.Name+"-limits-"+strings.ReplaceAll(c.Name, ".", "-")).ForPool(p, domain).GPU(workload.ImplicitDeviceClassResource(c.Name), 1)
		pods = append(pods, claim.Pod, implicit.Pod)
	}
	return pods
}

// autoscaledNodePools are the cluster's NodePools as explain reads them,
// with the machines the run's simulated cloud sells.
func autoscaledNodePools(ctx context.Context, r *harness.Run) ([]explain.NodePool, error) {
	cloud, err := autoscaler.NewCloud(r.Fleet)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(r.Cluster.REST)
	if err != nil {
		return nil, err
	}
	return autoscaler.NodePools(ctx, dyn, cloud.InstanceTypes(), r.OverlayGate())
}
