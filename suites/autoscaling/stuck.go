// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaling

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/gpupool/gpupool/e2e/autoscaler"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/fakegpu"
)

// stuckSettle is how long a node the autoscaler made must have shown the
// same stuck state before it is taken as final: the simulated stack
// reconciles a node within a second of a write, even loaded, so a node
// registered, reconciled, with no MIG layout being applied and still
// without what the pod asks has nothing left coming.
const stuckSettle = 10 * time.Second

// stuck tracks whether the pool's node that Karpenter made for a Pending
// pod will never take it: Karpenter will not buy another (it counts the
// node as the capacity the pod needs until the node is initialized), and
// the node never advertises what the pod asks, so its NodeClaim never
// initializes (autoscaler-facts §8.4), as when the MIG manager is off or
// the device plugin advertises the slices under another name.
type stuck struct {
	since time.Time
	why   string
}

// check returns a reason once the pool has a node in that state, the same
// for stuckSettle, or at once when the node's settled state under the
// candidate's config lacks what the pod asks; "" until then.
func (s *stuck) check(ctx context.Context, r *harness.Run, dyn dynamic.Interface, p fleet.AutoscaledPool, pod *corev1.Pod) (string, error) {
	why, final, err := stuckNode(ctx, r, dyn, p, pod)
	if err == nil && final {
		return why, nil
	}
	if err != nil || why == "" || why != s.why {
		s.since, s.why = time.Now(), why
		return "", err
	}
	if time.Since(s.since) < stuckSettle {
		return "", nil
	}
	return why, nil
}

// stuckNode names a node of the pool's NodePool that is registered and
// reconciled by the simulated stack, with no MIG layout being applied,
// whose NodeClaim waits for a resource the node does not advertise and
// the pod asks ("" when there is none). final: the node's settled state,
// from the pure function its simulated stack runs (fakegpu.Stack.Node),
// lacks it too, so nothing is left coming.
func stuckNode(ctx context.Context, r *harness.Run, dyn dynamic.Interface, p fleet.AutoscaledPool, pod *corev1.Pod) (why string, final bool, err error) {
	nodes, err := r.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: autoscaler.LabelNodePool + "=" + p.NodePool})
	if err != nil {
		return "", false, err
	}
	asks := map[corev1.ResourceName]bool{}
	for _, c := range pod.Spec.Containers {
		for name := range c.Resources.Limits {
			asks[name] = true
		}
	}
	for _, n := range nodes.Items {
		if n.DeletionTimestamp != nil || n.Labels[labelRegistered] != "true" || n.Labels[autoscaler.LabelInitialized] == "true" ||
			n.Annotations[fakegpu.AnnotationObservedConfig] == "" || n.Labels[fakegpu.LabelMIGConfigState] == fakegpu.MIGStatePending {
			continue
		}
		waits := notInitialized(ctx, dyn, &n)
		var missing []string
		for name := range asks {
			if q, ok := n.Status.Allocatable[name]; (!ok || q.IsZero()) && strings.Contains(waits, string(name)) {
				missing = append(missing, string(name))
			}
		}
		if len(missing) == 0 {
			continue
		}
		sort.Strings(missing)
		return fmt.Sprintf("node %s, which Karpenter made for the pool, never advertises %s (it advertises %s; %s=%q; NodeClaim%s), so its NodeClaim never initializes (autoscaler-facts §8.4) and Karpenter, counting it as the room the pod needs, buys no other",
			n.Name, strings.Join(missing, ", "), advertised(&n), fakegpu.LabelMIGConfigState, n.Labels[fakegpu.LabelMIGConfigState], strings.TrimPrefix(waits, ": NodeClaim")), settlesWithout(r, &n, missing), nil
	}
	return "", false, nil
}

// settlesWithout: under the candidate's GPU Operator config the node's
// settled state advertises none of res (false when the run holds no
// config to tell).
func settlesWithout(r *harness.Run, n *corev1.Node, res []string) bool {
	settled, ok := r.Plan.Settled(n.Labels, n.Annotations)
	if !ok {
		return false
	}
	for _, name := range res {
		if settled.Resources[name] > 0 {
			return false
		}
	}
	return true
}

// labelRegistered is on a node once Karpenter has synced its NodeClaim's
// labels and taints onto it (autoscaler-facts §4.5).
const labelRegistered = "karpenter.sh/registered"

// advertised lists a node's nvidia.com resources.
func advertised(n *corev1.Node) string {
	var out []string
	for name, q := range n.Status.Allocatable {
		if strings.HasPrefix(string(name), fakegpu.LabelPrefix) && !q.IsZero() {
			out = append(out, fmt.Sprintf("%s %s", name, q.String()))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "no GPU resource"
	}
	return strings.Join(out, ", ")
}
