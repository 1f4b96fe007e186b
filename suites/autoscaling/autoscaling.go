// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaling

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/autoscaler"
	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/explain"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/wait"
	"github.com/gpupool/gpupool/fakegpu"
)

// scaleUpTimeout bounds a scale-up on the embedded cluster: Karpenter
// batches Pending pods for up to 10 s before it launches (its
// --batch-max-duration), then the node registers and the stack takes it
// over; about 3 s in all here.
const scaleUpTimeout = 2 * time.Minute

func TestPendingPodScalesItsOwnPool(t *testing.T) {
	c := checks.AutoscalingScalesItsOwnPool
	f := suite.Feature(c).
		Assess("a Pending GPU pod of each autoscaled pool gets a node of that pool's NodePool, as the pool is designed", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			eachPool(t, autoscaled(t, r), func(p fleet.AutoscaledPool) error {
				pod, err := tenantPod(ctx, r, c.ID, p, objectName(p, "scales"))
				if err != nil {
					return err
				}
				pl, err := place(ctx, r, pod, t.Logf)
				if err != nil {
					return fmt.Errorf("a well-formed GPU pod: %w", err)
				}
				start := time.Now()
				node, err := scaledUp(ctx, r, pl, p)
				if err != nil {
					return err
				}
				created := pl.pod
				t.Logf("%s: pod %s ran on node %s %s after it was created", poolName(p), created.Name, node.Name, time.Since(start).Round(100*time.Millisecond))
				var errs []error
				for _, problem := range nodeProblems(node, p) {
					errs = append(errs, fmt.Errorf("pod %s ran on node %s, which %s", created.Name, node.Name, problem))
				}
				// Its node is left to the autoscaler to remove (a minute
				// or so: autoscaler-facts §5); this suite runs last for that.
				// A pod gone since it was seen running is no matter: the
				// taint-eviction race may take it after (§4.7).
				if err := r.Client.CoreV1().Pods(created.Namespace).Delete(ctx, created.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					errs = append(errs, err)
				}
				return errors.Join(errs...)
			})
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// scaledUp waits for the pod to run on a node with its GPU, and returns
// the node. It does not take the scheduler's Unschedulable as final: that
// is what the autoscaler answers. The autoscaler's own refusal is final
// when explain agrees that a NodePool would take the pod but will never
// make it a node (explain.CannotScale: no machine it may buy lists what
// the pod asks, autoscaler-facts §3.3, or may be bought at all, or none
// of the devices its machines will publish fits the pod's claims, §10.3):
// such a pool fails at once, with why, not at the timeout.
func scaledUp(ctx context.Context, r *harness.Run, pl *placed, p fleet.AutoscaledPool) (*corev1.Node, error) {
	pod := pl.pod
	cs := r.Client
	dyn, types, err := nodePoolReader(r)
	if err != nil {
		return nil, err
	}
	var node *corev1.Node
	var judged string // the autoscaler's word explain was last asked about
	var stalled stuck
	what := fmt.Sprintf("pod %s/%s of autoscaled pool %s to run on a node the autoscaler made, with its GPU", pod.Namespace, pod.Name, p.Name)
	err = wait.For(ctx, what, scaleUpTimeout, func(ctx context.Context) (bool, string, error) {
		got, waiting, err := pl.get(ctx, r)
		if err != nil || got == nil {
			return false, waiting, err
		}
		seen := expect.Describe(got)
		if got.Spec.NodeName == "" {
			said, err := autoscalerSays(ctx, r, got)
			if err != nil {
				return false, "", err
			}
			if said != "" && said != judged {
				judged = said
				why, err := cannotScale(ctx, r, dyn, types, got)
				if err != nil {
					return false, "", err
				}
				if why != "" {
					return false, "", fmt.Errorf("no node will ever come for pod %s/%s: %s (the autoscaler said: %s)", got.Namespace, got.Name, why, said)
				}
			}
			if why, err := stalled.check(ctx, r, dyn, p, got); err != nil || why != "" {
				return false, "", errOr(err, fmt.Errorf("pod %s/%s stays Pending for good: %s", got.Namespace, got.Name, why))
			}
			return false, seen + "; " + scheduling(got) + "; " + nodesOf(ctx, cs, p) + "; the autoscaler: " + orNothing(said), nil
		}
		if failed(got) {
			return false, "", fmt.Errorf("pod %s/%s failed on node %s: %s", got.Namespace, got.Name, got.Spec.NodeName, expect.Describe(got))
		}
		if why := got.Annotations[fakegpu.AnnotationNoGPU]; why != "" {
			return false, "", fmt.Errorf("pod %s/%s on node %s was allocated devices it cannot use: %s", got.Namespace, got.Name, got.Spec.NodeName, why)
		}
		// Its GPU: from the device plugin, or prepared by the DRA driver.
		if got.Status.Phase != corev1.PodRunning || got.Annotations[fakegpu.AnnotationVisibleDevices]+got.Annotations[fakegpu.AnnotationCDIDevices] == "" {
			return false, fmt.Sprintf("on node %s: %s", got.Spec.NodeName, seen), nil
		}
		node, err = cs.CoreV1().Nodes().Get(ctx, got.Spec.NodeName, metav1.GetOptions{})
		return err == nil, "", err
	})
	if err != nil {
		return nil, fmt.Errorf("expected the autoscaler to make a node of pool %s (NodePool %s) for its Pending GPU pod: %w", p.Name, p.NodePool, err)
	}
	return node, nil
}

func errOr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// failed reports a pod that ended: it will not run, whatever the
// autoscaler does next.
func failed(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

// nodePoolReader is what cannotScale reads NodePools with: a client and
// the instance types the run's cloud sells.
func nodePoolReader(r *harness.Run) (dynamic.Interface, []autoscaler.InstanceType, error) {
	cloud, err := autoscaler.NewCloud(r.Fleet)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(r.Cluster.REST)
	if err != nil {
		return nil, nil, err
	}
	return dyn, cloud.InstanceTypes(), nil
}

// cannotScale is explain's word, NodePools included, when no autoscaler
// will ever make a node for the Pending pod ("" otherwise).
func cannotScale(ctx context.Context, r *harness.Run, dyn dynamic.Interface, types []autoscaler.InstanceType, pod *corev1.Pod) (string, error) {
	nodePools, err := autoscaler.NodePools(ctx, dyn, types, r.OverlayGate())
	if err != nil {
		return "", err
	}
	c := explain.Cluster{NodePools: nodePools}
	if len(pod.Spec.ResourceClaims) > 0 {
		// What its claims ask, by their DeviceClasses.
		if c.DRA, err = explain.LoadDRA(ctx, r.Client); err != nil {
			return "", err
		}
	}
	return c.CannotScale(pod), nil
}

// nodeProblems says how a node the pod ran on falls short of the pool's
// design: made by another NodePool, another machine, or without the
// pool's labels and taints (a node without its pool's taint takes pods
// that must not land on GPUs).
func nodeProblems(n *corev1.Node, p fleet.AutoscaledPool) []string {
	var out []string
	if got := n.Labels[autoscaler.LabelNodePool]; got != p.NodePool {
		out = append(out, fmt.Sprintf("NodePool %q made, not the pool's %s", got, p.NodePool))
	}
	if got := n.Annotations[fakegpu.AnnotationSKU]; got != p.SKU {
		out = append(out, fmt.Sprintf("is a %s machine (instance type %s), not the pool's %s", orNone(got), n.Labels[autoscaler.LabelInstanceType], p.SKU))
	}
	var missing []string
	for k, v := range p.Labels {
		if n.Labels[k] != v {
			missing = append(missing, k+"="+v)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		out = append(out, "lacks the pool's labels "+strings.Join(missing, ", "))
	}
	missing = nil
	for _, want := range p.Taints {
		found := false
		for _, have := range n.Spec.Taints {
			found = found || (have.Key == want.Key && have.Value == want.Value && have.Effect == want.Effect)
		}
		if !found {
			missing = append(missing, fmt.Sprintf("%s=%s:%s", want.Key, want.Value, want.Effect))
		}
	}
	if len(missing) > 0 {
		out = append(out, "lacks the pool's taints "+strings.Join(missing, ", "))
	}
	return out
}

// scheduling is the scheduler's last word on a Pending pod.
func scheduling(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf("not scheduled (%s: %s)", c.Reason, c.Message)
		}
	}
	return "not scheduled yet"
}

// nodesOf says what nodes the pool's NodePool has made so far.
func nodesOf(ctx context.Context, cs kubernetes.Interface, p fleet.AutoscaledPool) string {
	l, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: autoscaler.LabelNodePool + "=" + p.NodePool})
	if err != nil || len(l.Items) == 0 {
		return "NodePool " + p.NodePool + " has made no node"
	}
	var names []string
	for _, n := range l.Items {
		names = append(names, n.Name)
	}
	return "NodePool " + p.NodePool + " made " + strings.Join(names, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "GPU-less"
	}
	return s
}
