// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package mig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	"github.com/gpupool/gpupool/fakegpu"
)

const reconfigureTimeout = 15 * time.Second

func TestMIGRelabelIsADrain(t *testing.T) {
	c := checks.MIGRelabelIsADrain
	var (
		pool     fleet.Pool
		node     string
		original string
	)
	f := suite.Feature(c).
		Setup(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			pool = r.FirstPool(t, fleet.ModeMIG)
			nodes, _, err := r.Disruptable(ctx, pool.Name)
			if err != nil {
				t.Fatal(err)
			}
			if len(nodes) == 0 {
				t.Skipf("no node of pool %s is named with --disruptive-nodes", pool.Name)
			}
			node, original = nodes[0].Name, nodes[0].Labels[fakegpu.LabelMIGConfig]
			return ctx
		}).
		Assess("after cordon and drain, a new layout walks pending → success with operands paused and GPUs withdrawn, and fails no pod", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			other, _, err := r.Layouts(pool)
			if err != nil {
				t.Fatal(err)
			}
			pod := runMIGPod(ctx, t, r, c.ID, pool, node, "drained")
			// The platform's process: cordon, drain, relabel.
			if err := r.Cordon(ctx, node, true); err != nil {
				t.Fatal(err)
			}
			if err := expect.DeletePods(ctx, r.Client, "gpupool.dev/check="+c.ID, pod.Namespace); err != nil {
				t.Fatal(err)
			}
			seen := relabel(ctx, t, r, pool, node, other)
			if !seen.paused {
				t.Errorf("node %s never showed state pending with %s=%s and its GPUs withdrawn while the layout changed; saw: %s",
					node, fakegpu.LabelDeployDevicePlugin, fakegpu.PausedForMIGChange, seen.trace())
			}
			if failed := failedGPUPods(ctx, t, r, node); len(failed) > 0 {
				t.Errorf("GPU pods failed on a drained node: %s", strings.Join(failed, "; "))
			}
			// The layout goes back while the node is still cordoned: a pod
			// of the next assessment must not start on the old layout's
			// devices while the change back is under way.
			relabel(ctx, t, r, pool, node, original)
			if err := r.Cordon(ctx, node, false); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("relabelling a busy node without a drain fails its GPU pods, and the check says so", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			other, _, err := r.Layouts(pool)
			if err != nil {
				t.Fatal(err)
			}
			pod := runMIGPod(ctx, t, r, c.ID, pool, node, "busy")
			relabel(ctx, t, r, pool, node, other)
			// Not expect.PodReaches: a pod crash-looping on its devices (a
			// candidate's runtime handler that hides them) is not stuck
			// here, as the relabel still takes them and fails it.
			var got *corev1.Pod
			err = wait.For(ctx, fmt.Sprintf("pod %s/%s to fail: its MIG devices were removed", pod.Namespace, pod.Name), reconfigureTimeout, func(ctx context.Context) (bool, string, error) {
				p, err := r.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				got = p
				if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed && p.Status.Reason != "GPUDevicesRemoved" {
					return false, "", fmt.Errorf("expected pod %s/%s to fail with GPUDevicesRemoved, but it ended otherwise: %s", p.Namespace, p.Name, expect.Describe(p))
				}
				return p.Status.Phase == corev1.PodFailed, expect.Describe(p), nil
			})
			if err != nil {
				t.Errorf("%v: a pod whose MIG devices were repartitioned away kept running", err)
			} else {
				t.Logf("reported: %s", got.Status.Message)
			}
			relabel(ctx, t, r, pool, node, original)
			return ctx
		}).
		Assess("a layout the GPU cannot take ends in state failed and keeps the old layout", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			_, unfit, err := r.Layouts(pool)
			if err != nil {
				t.Fatal(err)
			}
			before, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			setLayout(ctx, t, r, node, unfit)
			// The state label and the plugin's resources are separate writes
			// (as on a real node, where the plugin re-registers after the MIG
			// manager is done): wait for both outcomes, not just the label.
			want := gpuAllocatable(before)
			err = wait.For(ctx, fmt.Sprintf("node %s to report %s=%s for layout %s and keep advertising %s", node, fakegpu.LabelMIGConfigState, fakegpu.MIGStateFailed, unfit, suite.Resources(want)), reconfigureTimeout, func(ctx context.Context) (bool, string, error) {
				n, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				st, got := n.Labels[fakegpu.LabelMIGConfigState], gpuAllocatable(n)
				return st == fakegpu.MIGStateFailed && fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("state %s, advertises %s", st, suite.Resources(got)), nil
			})
			if err != nil {
				t.Errorf("a layout the GPU cannot take: %v", err)
			}
			relabel(ctx, t, r, pool, node, original)
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if node == "" {
				return ctx
			}
			r := suite.From(ctx)
			_ = r.Cordon(ctx, node, false)
			// Put back only a layout a step changed and left: the steps
			// restore their own, and a node never relabelled has nothing
			// to apply (one whose stack never reaches the design's layout
			// would have the wait run out for nothing).
			if n, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); err != nil || n.Labels[fakegpu.LabelMIGConfig] != original {
				relabel(ctx, t, r, pool, node, original)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// runMIGPod starts a well-formed MIG pod on node and waits until it runs
// with its devices.
func runMIGPod(ctx context.Context, t *testing.T, r *harness.Run, check string, p fleet.Pool, node, name string) *corev1.Pod {
	t.Helper()
	pod, err := suite.WellFormedPod(ctx, r, check, p, name)
	if err != nil {
		t.Fatal(err)
	}
	pod.Spec.NodeSelector["kubernetes.io/hostname"] = node
	n, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.IntendedResource(p)
	if err != nil {
		t.Fatal(err)
	}
	// A node that never advertises what the pod asks leaves it Pending:
	// once the scheduler has said so, waiting changes nothing.
	never := neverAdvertises(r, n, res)
	if _, err := expect.Admitted(ctx, r.Client, pod); err != nil {
		t.Fatal(err)
	}
	err = wait.For(ctx, fmt.Sprintf("pod %s/%s to run with its MIG device", pod.Namespace, pod.Name), reconfigureTimeout, func(ctx context.Context) (bool, string, error) {
		got, err := r.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		seen := expect.Describe(got)
		if never != "" && unschedulable(got) {
			return false, seen, errors.New(never)
		}
		return got.Status.Phase == corev1.PodRunning && got.Annotations[fakegpu.AnnotationVisibleDevices] != "", seen, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// neverAdvertises says why, under the candidate's GPU Operator config, the
// node never advertises res with its current MIG layout ("" when it does,
// or the run holds no config): the node's settled state, from the same
// pure function its simulated stack runs (fakegpu.Stack.Node).
func neverAdvertises(r *harness.Run, n *corev1.Node, res string) string {
	settled, ok := r.Plan.Settled(n.Labels, n.Annotations)
	if !ok || settled.Resources[res] > 0 {
		return ""
	}
	return fmt.Sprintf("under the candidate's GPU Operator config node %s never advertises %s with MIG layout %s (it settles on %s)",
		n.Name, res, n.Labels[fakegpu.LabelMIGConfig], suite.Resources(settled.Resources))
}

// unschedulable: the scheduler tried the pod and found no node for it.
func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// observed is what a watch on the node saw during a relabel.
type observed struct {
	mu     sync.Mutex
	steps  []string
	paused bool // pending, operands paused and GPUs withdrawn, all at once
}

func (o *observed) trace() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.steps, " → ")
}

// relabel sets the node's MIG layout and waits until the node advertises
// it, recording the states it passes through.
func relabel(ctx context.Context, t *testing.T, r *harness.Run, p fleet.Pool, node, layout string) *observed {
	t.Helper()
	want, err := r.LayoutAdvertisement(p, layout)
	if err != nil {
		t.Fatalf("layout %s: %v", layout, err)
	}
	obs := &observed{}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := r.Client.CoreV1().Nodes().Watch(wctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", node).String()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			st := n.Labels[fakegpu.LabelMIGConfigState]
			alloc := gpuAllocatable(n)
			obs.mu.Lock()
			step := fmt.Sprintf("%s %s=%s %v", st, "device-plugin", n.Labels[fakegpu.LabelDeployDevicePlugin], alloc)
			if len(obs.steps) == 0 || obs.steps[len(obs.steps)-1] != step {
				obs.steps = append(obs.steps, step)
			}
			if st == fakegpu.MIGStatePending && n.Labels[fakegpu.LabelDeployDevicePlugin] == fakegpu.PausedForMIGChange && allZero(alloc) {
				obs.paused = true
			}
			obs.mu.Unlock()
		}
	}()
	setLayout(ctx, t, r, node, layout)
	err = wait.For(ctx, fmt.Sprintf("node %s to apply MIG layout %s and advertise %s", node, layout, suite.Resources(want)), reconfigureTimeout, func(ctx context.Context) (bool, string, error) {
		n, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got := gpuAllocatable(n)
		ok := n.Labels[fakegpu.LabelMIGConfigState] == fakegpu.MIGStateSuccess && fmt.Sprint(got) == fmt.Sprint(want) && n.Labels[fakegpu.LabelDeployDevicePlugin] == "true"
		return ok, fmt.Sprintf("state %s, advertises %s", n.Labels[fakegpu.LabelMIGConfigState], suite.Resources(got)), nil
	})
	cancel()
	<-done
	if err != nil {
		t.Errorf("%v (went through: %s)", err, obs.trace())
	}
	return obs
}

func setLayout(ctx context.Context, t *testing.T, r *harness.Run, node, layout string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{fakegpu.LabelMIGConfig: layout}}})
	if _, err := r.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func failedGPUPods(ctx context.Context, t *testing.T, r *harness.Run, node string) []string {
	pods, err := r.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodFailed {
			out = append(out, p.Namespace+"/"+p.Name+": "+p.Status.Message)
		}
	}
	return out
}

// gpuAllocatable is what the node offers of nvidia.com resources. A
// resource at 0 is left out: the kubelet keeps a profile the plugin no
// longer serves at 0 allocatable after a relabel (kubelet-facts §3).
func gpuAllocatable(n *corev1.Node) map[string]int64 {
	out := map[string]int64{}
	for k, v := range n.Status.Allocatable {
		if strings.HasPrefix(string(k), fakegpu.LabelPrefix) && !v.IsZero() {
			out[string(k)] = v.Value()
		}
	}
	return out
}

func allZero(m map[string]int64) bool {
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}
