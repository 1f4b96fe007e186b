// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package health

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

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

// xid is a critical Xid (79: the GPU has fallen off the bus), which the
// device plugin counts; 13, 31, 43, 45, 68 and 109 it would not.
const xid = 79

func TestXidWithdrawsGPU(t *testing.T) {
	c := checks.XidWithdrawsGPU
	var node string
	var pool fleet.Pool
	f := suite.Feature(c).
		Assess("an Xid on GPU 0 of a node takes one GPU out of allocatable and keeps it in capacity", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			pool = r.FirstPool(t, fleet.ModeExclusive)
			res, want, err := r.Intended(pool)
			if err != nil {
				t.Fatal(err)
			}
			nodes, _, err := r.Disruptable(ctx, pool.Name)
			if err != nil {
				t.Fatal(err)
			}
			if len(nodes) == 0 {
				t.Skipf("no node of pool %s is named with --disruptive-nodes", pool.Name)
			}
			node = nodes[len(nodes)-1].Name
			if err := setXid(ctx, r, node, fmt.Sprintf("0=%d", xid)); err != nil {
				t.Fatal(err)
			}
			if err := awaitAllocatable(ctx, r, node, res, want-1, want, ignored(r)); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("a pod asking every healthy GPU runs on the others; one asking one more stays Pending, explained by the unhealthy GPU", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			if node == "" {
				t.Fatal("expected the previous step to withdraw a GPU, but it picked no node")
			}
			res, want, err := r.Intended(pool)
			if err != nil {
				t.Fatal(err)
			}
			ns, domain, err := suite.NamespaceFor(ctx, pool)
			if err != nil {
				t.Fatal(err)
			}
			pinned := func(name string, n int64) *corev1.Pod {
				return workload.New(c.ID, ns, name).ForPool(pool, domain).GPU(res, n).
					NodeSelector(map[string]string{corev1.LabelHostname: node}).Pod
			}
			healthy, err := expect.Admitted(ctx, r.Client, pinned("on-healthy-gpus", want-1))
			if err != nil {
				t.Fatal(err)
			}
			got, err := expect.PodReaches(ctx, r.Client, ns, healthy.Name, "run with its GPUs", 30*time.Second, func(p *corev1.Pod) (bool, string) {
				return p.Status.Phase == corev1.PodRunning && p.Annotations[fakegpu.AnnotationVisibleDevices] != "", expect.Describe(p)
			})
			if err != nil {
				t.Fatal(err)
			}
			n, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			unhealthy := strings.Split(n.Annotations[fakegpu.AnnotationUnhealthyDevices], ",")
			for _, d := range strings.Split(got.Annotations[fakegpu.AnnotationVisibleDevices], ",") {
				if slices.Contains(unhealthy, d) {
					t.Errorf("expected pod %s to get healthy GPUs only, but it was given %s, which reported Xid %d", got.Name, d, xid)
				}
			}
			lost, err := expect.Admitted(ctx, r.Client, pinned("needs-the-lost-gpu", 1))
			if err != nil {
				t.Fatal(err)
			}
			if err := expect.PendingWith(ctx, r.Client, ns, lost.Name, "Insufficient "+res); err != nil {
				t.Fatal(err)
			}
			if why := explainPending(ctx, t, r, ns, lost.Name); !strings.Contains(why.Message, "unhealthy") {
				t.Errorf("expected the Pending pod to be explained by the unhealthy GPU, but: %s", why)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if node == "" {
				return ctx
			}
			r := suite.From(ctx)
			// Removing the Xid is the plugin's restart: only that brings a
			// device back (stack-facts §2, ListAndWatch FIXME).
			if err := setXid(ctx, r, node, ""); err != nil {
				t.Error(err)
				return ctx
			}
			res, want, err := r.Intended(pool)
			if err == nil {
				err = awaitAllocatable(ctx, r, node, res, want, want, "")
			}
			if err != nil {
				t.Error(err)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// setXid injects Xids on a node's GPUs ("" clears them).
func setXid(ctx context.Context, r *harness.Run, node, value string) error {
	var v any
	if value != "" {
		v = value
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{fakegpu.AnnotationXid: v}}})
	_, err := r.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// ignored says why the device plugin, under the candidate's GPU Operator
// config, never counts the check's Xid ("" when it does, or the run holds
// no config): the same rule the node's simulated plugin applies.
func ignored(r *harness.Run) string {
	if r.Plan == nil || r.Stack == nil || r.Stack.Policy == nil || fakegpu.CriticalXid(r.Stack.Policy.DevicePluginEnv, xid) {
		return ""
	}
	env := r.Stack.Policy.DevicePluginEnv
	return fmt.Sprintf("under the candidate's GPU Operator config the device plugin does not count Xid %d (devicePlugin.env DP_DISABLE_HEALTHCHECKS=%q, DP_ENABLE_HEALTHCHECKS=%q), so no GPU is ever withdrawn",
		xid, env["DP_DISABLE_HEALTHCHECKS"], env["DP_ENABLE_HEALTHCHECKS"])
}

// awaitAllocatable waits for the node's counts of res. never, if set, is
// why a GPU is never withdrawn: the wait then ends once the node shows the
// Xid with every GPU still allocatable.
func awaitAllocatable(ctx context.Context, r *harness.Run, node, res string, allocatable, capacity int64, never string) error {
	return wait.For(ctx, fmt.Sprintf("node %s to show %d allocatable of %d %s in capacity", node, allocatable, capacity, res), 30*time.Second, func(ctx context.Context) (bool, string, error) {
		n, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		a, c := suite.Allocatable(n, res), n.Status.Capacity[corev1.ResourceName(res)]
		if never != "" && n.Annotations[fakegpu.AnnotationXid] != "" && a == capacity && c.Value() == capacity {
			return false, "", fmt.Errorf("node %s shows the Xid and still %d allocatable of %d %s, and it always will: %s", node, a, capacity, res, never)
		}
		if c.Value() != 0 && c.Value() != capacity {
			// An Xid never changes capacity, and the simulated plugin
			// publishes a node's devices in one write: a node showing
			// another count advertises it, and waiting changes nothing.
			return false, "", fmt.Errorf("node %s shows %d %s in capacity, the pool is designed for %d", node, c.Value(), res, capacity)
		}
		return a == allocatable && c.Value() == capacity, fmt.Sprintf("allocatable %d, capacity %d", a, c.Value()), nil
	})
}

func explainPending(ctx context.Context, t *testing.T, r *harness.Run, ns, name string) explain.Reason {
	t.Helper()
	pod, err := r.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := r.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := r.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dra, err := explain.LoadDRA(ctx, r.Client)
	if err != nil {
		t.Fatal(err)
	}
	return explain.Pod(pod, explain.Cluster{Nodes: nodes.Items, Pods: pods.Items, DRA: dra})
}
