// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaling

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
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
	"github.com/gpupool/gpupool/fakegpu"
)

// limitTimeout bounds filling an autoscaled pool to its limit: a scale-up
// of a few nodes, and Karpenter's word on the pod past it.
const limitTimeout = 2 * time.Minute

func TestPoolLimitHolds(t *testing.T) {
	c := checks.AutoscalingLimitHolds
	f := suite.Feature(c).
		Assess("pods that fill each autoscaled pool's designed nodes, and one more: the one more stays Pending at the NodePool's limit", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			eachPool(t, autoscaled(t, r), func(p fleet.AutoscaledPool) error {
				if err := fillPastLimit(ctx, t, r, c.ID, p); err != nil {
					return fmt.Errorf("designed for at most %d nodes: %w", p.MaxNodes, err)
				}
				return nil
			})
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// fillPastLimit creates pods that fill the pool's maxNodes nodes, and one
// more, and waits until all but the last run and the autoscaler has said
// the last one is past its NodePool's limit; then explain must say the
// same. A pod asks a whole node's GPUs, or on a pool of replicated GPUs
// (time-slicing, MPS) one replica: the device plugin may refuse more
// than one shared GPU to a container (failRequestsGreaterThanOne).
func fillPastLimit(ctx context.Context, t *testing.T, r *harness.Run, check string, p fleet.AutoscaledPool) error {
	res, perNode, err := r.Intended(p.Pool)
	if err != nil {
		return err
	}
	cloud, err := autoscaler.NewCloud(r.Fleet)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(r.Cluster.REST)
	if err != nil {
		return err
	}
	ns, domain, err := suite.NamespaceFor(ctx, p.Pool)
	if err != nil {
		return err
	}
	// Not from zero nodes: a node the scale-up check left for
	// consolidation is one of the pool's, takes a pod and counts against
	// the limit like any other. Emptying the pool first would cost a
	// removal (at least 5 s in Karpenter, autoscaler-facts §6.9) and
	// prove nothing more.
	unit := perNode
	if m := p.Mode(); m == fleet.ModeTimeSlicing || m == fleet.ModeMPS {
		unit = 1
	}
	fill := p.MaxNodes * int(perNode/unit) // the pods the designed nodes hold
	var pods []*placed
	for i := 0; i <= fill; i++ {
		pod, err := suite.AutoscaledPod(ctx, r, check, p.Pool, domain, ns, objectName(p, fmt.Sprintf("fill-%d", i)), res, unit)
		if err != nil {
			return err
		}
		pl, err := place(ctx, r, pod, t.Logf)
		if err != nil {
			return fmt.Errorf("a pod asking %s: %w", suite.Asks(p.Pool, res, unit), err)
		}
		pods = append(pods, pl)
	}
	var last *corev1.Pod
	var said, judged string
	var stalled stuck
	what := fmt.Sprintf("%d pods of pool %s, each asking %s, to run and one more to be refused at the NodePool's limit", fill, p.Name, suite.Asks(p.Pool, res, unit))
	err = wait.For(ctx, what, limitTimeout, func(ctx context.Context) (bool, string, error) {
		var running, pending []*corev1.Pod
		nodes := map[string]bool{}
		for _, pl := range pods {
			got, waiting, err := pl.get(ctx, r)
			if err != nil || got == nil {
				return false, waiting, err
			}
			if got.Spec.NodeName == "" {
				pending = append(pending, got)
				continue
			}
			if failed(got) {
				return false, "", fmt.Errorf("pod %s failed on node %s: %s", got.Name, got.Spec.NodeName, expect.Describe(got))
			}
			running = append(running, got)
			nodes[got.Spec.NodeName] = true
		}
		if len(running) > fill || len(nodes) > p.MaxNodes {
			return false, "", fmt.Errorf("expected the pool to stop at %d nodes holding %d pods, but %d of its pods were placed, on %s%s", p.MaxNodes, fill, len(running), strings.Join(sortedNames(nodes), ", "), overAdvertised(ctx, r, nodes, res, perNode))
		}
		seen := fmt.Sprintf("%d placed (on %s), %d Pending", len(running), strings.Join(sortedNames(nodes), ", "), len(pending))
		if len(running) < fill && len(pending) > 0 {
			// Filling: a pool that cannot scale at all fails now (as in
			// scaledUp), not at the timeout.
			if why, err := stalled.check(ctx, r, dyn, p, pending[0]); err != nil || why != "" {
				return false, "", errOr(err, fmt.Errorf("pod %s stays Pending for good: %s", pending[0].Name, why))
			}
			if short, err := underAdvertised(ctx, r, p, res, perNode); err != nil || short != "" {
				return false, "", errOr(err, fmt.Errorf("expected the pool's %d nodes to hold %d pods, but %s, so %d of them stay Pending with the pool at its limit", p.MaxNodes, fill, short, len(pending)-1))
			}
			msg, err := autoscalerSays(ctx, r, pending[0])
			if err != nil || msg == "" || msg == judged {
				return false, seen, err
			}
			judged = msg
			why, err := cannotScale(ctx, r, dyn, cloud.InstanceTypes(), pending[0])
			if err != nil {
				return false, "", err
			}
			if why != "" {
				return false, "", fmt.Errorf("no node will ever come for pod %s: %s (the autoscaler said: %s)", pending[0].Name, why, msg)
			}
			return false, seen, nil
		}
		if len(pending) == 0 {
			return false, seen, nil
		}
		last = pending[0]
		msg, err := autoscalerSays(ctx, r, last)
		if err != nil {
			return false, "", err
		}
		said = msg
		if !strings.Contains(msg, "limits") {
			return false, seen + "; the autoscaler on the last: " + orNothing(msg), nil
		}
		// The last pod is past the limit only if the nodes have no room
		// left for it: a node advertising more than its designed count
		// (time-slice replicas on an exclusive pool) takes it later, and
		// when is up to the scheduler.
		if more := overAdvertised(ctx, r, nodes, res, perNode); more != "" {
			return false, "", fmt.Errorf("%d pods placed and one Pending at the NodePool's limit, but the pool's nodes have room for it%s", len(running), more)
		}
		return true, seen, nil
	})
	if err != nil {
		return err
	}
	t.Logf("%s: %d pods placed; pod %s Pending: %s", poolName(p), fill, last.Name, said)
	// explain reads the NodePool's status.resources, which Karpenter
	// updates as its nodes register: wait for it to agree. The verdict
	// stands only once every node of the pool is initialized: until then
	// Karpenter counts a node's resources from its NodeClaim, after it
	// from the node, which may report less (a MIG node no whole GPU), and
	// a limit on what it stops reporting stops holding (§12.2, §12.4).
	var reason explain.Reason
	err = wait.For(ctx, "the pool's nodes to be initialized and gpupool explain to call pod "+last.Name+" Pending at its NodePool's limit", 30*time.Second, func(ctx context.Context) (bool, string, error) {
		nodes, err := r.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		for _, n := range nodes.Items {
			if n.Labels[autoscaler.LabelNodePool] == p.NodePool && n.Labels[autoscaler.LabelInitialized] != "true" {
				// A node never initialized is never consolidated either
				// (autoscaler-facts §8.4.1): say what Karpenter awaits.
				return false, "node " + n.Name + " of the pool is not initialized yet" + notInitialized(ctx, dyn, &n) +
					" (Karpenter never consolidates a node it has not initialized; it goes only when it expires, autoscaler-facts §8.4.1)", nil
			}
		}
		all, err := r.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		nodePools, err := autoscaler.NodePools(ctx, dyn, cloud.InstanceTypes(), r.OverlayGate())
		if err != nil {
			return false, "", err
		}
		got, err := r.Client.CoreV1().Pods(last.Namespace).Get(ctx, last.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		if got.Spec.NodeName != "" {
			return false, "", fmt.Errorf("expected pod %s to stay Pending at the limit, but it was placed on %s", got.Name, got.Spec.NodeName)
		}
		dra, err := explain.LoadDRA(ctx, r.Client)
		if err != nil {
			return false, "", err
		}
		reason = explain.Pod(got, explain.Cluster{Nodes: nodes.Items, Pods: all.Items, DRA: dra, NodePools: nodePools})
		return reason.Category == explain.NodePoolAtLimit, reason.String(), nil
	})
	if err != nil {
		return fmt.Errorf("the autoscaler said %q, but: %w", said, err)
	}
	for _, pl := range pods {
		if err := r.Client.CoreV1().Pods(pl.pod.Namespace).Delete(ctx, pl.pod.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// overAdvertised says which of nodes advertise more res than the perNode
// the pool is designed for, as ": node X advertises 16 nvidia.com/gpu,
// designed for 8", or "".
func overAdvertised(ctx context.Context, r *harness.Run, nodes map[string]bool, res string, perNode int64) string {
	var over []string
	for _, name := range sortedNames(nodes) {
		n, err := r.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			continue // gone: nothing it advertises
		}
		if got := suite.Allocatable(n, res); got > perNode {
			over = append(over, fmt.Sprintf("%s advertises %d %s", name, got, res))
		}
	}
	if len(over) == 0 {
		return ""
	}
	return fmt.Sprintf(": %s, the pool is designed for %d per node (time-slice replicas or a shared resource fake headroom past the limit)", strings.Join(over, ", "), perNode)
}

// autoscalerSays is the newest word of the autoscaler on a pod it could
// not place (Karpenter's FailedScheduling event), or "".
func autoscalerSays(ctx context.Context, r *harness.Run, p *corev1.Pod) (string, error) {
	return karpenterSays(ctx, r, p.Namespace, "Pod", p.Name, string(p.UID), "FailedScheduling")
}

// karpenterSays is the message of Karpenter's newest event of reason on
// an object, or "".
func karpenterSays(ctx context.Context, r *harness.Run, ns, kind, name, uid, reason string) (string, error) {
	evs, err := r.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
		fields.OneTermEqualSelector("involvedObject.kind", kind),
		fields.OneTermEqualSelector("involvedObject.name", name),
		fields.OneTermEqualSelector("involvedObject.uid", uid),
		fields.OneTermEqualSelector("reason", reason)).String()})
	if err != nil {
		return "", err
	}
	var newest corev1.Event
	for _, e := range evs.Items {
		if e.Source.Component != "karpenter" && e.ReportingController != "karpenter" {
			continue
		}
		if e.LastTimestamp.After(newest.LastTimestamp.Time) || newest.Message == "" {
			newest = e
		}
	}
	return strings.TrimSpace(newest.Message), nil
}

func sortedNames(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return []string{"no node"}
	}
	return out
}

func orNothing(s string) string {
	if s == "" {
		return "nothing yet"
	}
	return s
}

// notInitialized is Karpenter's word on why a node's NodeClaim is not
// initialized: its Initialized condition ("Resource nvidia.com/gpu was
// requested but not registered", autoscaler-facts §8.4), or "".
func notInitialized(ctx context.Context, dyn dynamic.Interface, n *corev1.Node) string {
	for _, ref := range n.OwnerReferences {
		if ref.Kind != "NodeClaim" {
			continue
		}
		nc, err := dyn.Resource(autoscaler.NodeClaimResource).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		conds, _, _ := unstructured.NestedSlice(nc.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Initialized" && m["status"] != "True" {
				return fmt.Sprintf(": NodeClaim %s %v: %v", ref.Name, m["reason"], m["message"])
			}
		}
	}
	return ""
}

// underAdvertised says which nodes of a pool grown to its designed
// maxNodes advertise less res than the perNode it is designed for, once
// Karpenter has initialized them and the simulated stack has reconciled
// them with no MIG layout being applied ("" when none does, or the pool
// is still growing): a NodeOverlay that lists more replicas than the
// device plugin makes, for one (the time-slice headroom gotcha, the other
// way round).
func underAdvertised(ctx context.Context, r *harness.Run, p fleet.AutoscaledPool, res string, perNode int64) (string, error) {
	if p.DRA != nil {
		// Its nodes publish devices, not res; a node short of them
		// stays uninitialized, which the wait for the pool says.
		return "", nil
	}
	nodes, err := r.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: autoscaler.LabelNodePool + "=" + p.NodePool})
	if err != nil {
		return "", err
	}
	var settled, short []string
	for _, n := range nodes.Items {
		if n.DeletionTimestamp != nil || n.Labels[autoscaler.LabelInitialized] != "true" ||
			n.Annotations[fakegpu.AnnotationObservedConfig] == "" || n.Labels[fakegpu.LabelMIGConfigState] == fakegpu.MIGStatePending {
			continue
		}
		settled = append(settled, n.Name)
		if got := suite.Allocatable(&n, res); got < perNode {
			short = append(short, fmt.Sprintf("node %s advertises %d %s, designed for %d", n.Name, got, res, perNode))
		}
	}
	if len(settled) < p.MaxNodes {
		return "", nil
	}
	return strings.Join(short, "; "), nil
}
