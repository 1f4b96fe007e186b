// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaling

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/autoscaler"
	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/wait"
)

// drainTimeout bounds Karpenter's start of a node's removal: the NodeClaim
// finalizer, the Node's, the disrupted taint and a first eviction, about
// a second here (autoscaler-facts §6.1).
const drainTimeout = time.Minute

// Karpenter's names for a node's removal (autoscaler-facts §6).
const (
	taintDisrupted            = "karpenter.sh/disrupted"
	annotationTerminationTime = "karpenter.sh/nodeclaim-termination-timestamp"
	reasonFailedDraining      = "FailedDraining"
	reasonDisrupted           = "Disrupted"
)

// labelGuarded marks the pod a check's PodDisruptionBudget guards.
const labelGuarded = "gpupool.dev/guarded-by"

func TestScaleDownHonoursPDB(t *testing.T) {
	c := checks.AutoscalingDrainHonoursPDB
	f := suite.Feature(c).
		Assess("a node of each autoscaled pool, removed while a GPU pod guarded by a PodDisruptionBudget runs on it, keeps the pod until the budget allows", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			eachPool(t, autoscaled(t, r), func(p fleet.AutoscaledPool) error {
				return drainGuarded(ctx, t, r, c.ID, p)
			})
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// drainGuarded runs a GPU pod of the pool on a node the autoscaler makes,
// guards it with a PodDisruptionBudget that allows no disruption, deletes
// the node's NodeClaim (where every removal Karpenter decides ends,
// autoscaler-facts §6.1) and waits until the node is draining with the
// pod still running, its eviction refused and no deadline set; or until
// the pod goes, or a deadline says it will.
func drainGuarded(ctx context.Context, t *testing.T, r *harness.Run, check string, p fleet.AutoscaledPool) (err error) {
	dyn, err := dynamic.NewForConfig(r.Cluster.REST)
	if err != nil {
		return err
	}
	// Any node of the pool serves, one an earlier check left as one the
	// pod makes: the pool need not be at zero first (a removal takes
	// Karpenter at least 5 s, autoscaler-facts §6.9).
	name := objectName(p, "guarded")
	pod, err := tenantPod(ctx, r, check, p, name)
	if err != nil {
		return err
	}
	pod.Labels[labelGuarded] = name
	pl, err := place(ctx, r, pod, t.Logf)
	if err != nil {
		return fmt.Errorf("a well-formed GPU pod of the pool: %w", err)
	}
	ns := pl.pod.Namespace
	defer func() {
		// The budget first, so the drain under way can end; then the
		// pod. The node goes with Karpenter's drain, unwaited: no check
		// after this one counts the pool's nodes, and the run removes what
		// Karpenter made (the embedded cluster with it).
		zero := int64(0)
		_ = r.Client.PolicyV1().PodDisruptionBudgets(ns).Delete(ctx, name, metav1.DeleteOptions{})
		_ = r.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}()
	node, err := scaledUp(ctx, r, pl, p)
	if err != nil {
		return err
	}
	created := pl.pod
	if err := guard(ctx, r, pl, ns, name); err != nil {
		return err
	}
	if pl.pod.UID != created.UID {
		// Made again after the taint-eviction race (recreate.go): the
		// budget counts the new pod, and its node is the one to drain.
		if node, err = r.Client.CoreV1().Nodes().Get(ctx, pl.pod.Spec.NodeName, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("node %s of pod %s/%s: %w", pl.pod.Spec.NodeName, ns, name, err)
		}
		created = pl.pod
	}
	claim, err := nodeClaimOf(ctx, dyn, p.NodePool, node)
	if err != nil {
		return err
	}
	if err := dyn.Resource(autoscaler.NodeClaimResource).Delete(ctx, claim, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting NodeClaim %s of node %s: %w", claim, node.Name, err)
	}
	what := fmt.Sprintf("node %s (NodeClaim %s) to drain with pod %s/%s still running under its PodDisruptionBudget", node.Name, claim, ns, name)
	err = wait.For(ctx, what, drainTimeout, func(ctx context.Context) (bool, string, error) {
		got, err := r.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return false, "", fmt.Errorf("expected pod %s/%s to outlast its node's drain under a PodDisruptionBudget that allows no disruption, but it is gone%s", ns, name, podEvent(ctx, r, created, reasonDisrupted))
		case err != nil:
			return false, "", err
		case got.UID != created.UID || got.DeletionTimestamp != nil:
			return false, "", fmt.Errorf("expected pod %s/%s to outlast its node's drain under a PodDisruptionBudget that allows no disruption, but it is being deleted%s", ns, name, podEvent(ctx, r, created, reasonDisrupted))
		}
		n, err := r.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", fmt.Errorf("node %s, which pod %s/%s still runs on: %w", node.Name, ns, name, err)
		}
		if !hasTaint(n, taintDisrupted) {
			return false, "node not yet tainted " + taintDisrupted, nil
		}
		drain, err := karpenterSays(ctx, r, "", "Node", n.Name, string(n.UID), reasonFailedDraining)
		if err != nil {
			return false, "", err
		}
		if drain == "" {
			return false, "node tainted " + taintDisrupted + ", no drain reported yet", nil
		}
		if refused, err := evictionRefused(ctx, r, ns, name); err != nil || !refused {
			return false, "", err
		}
		// Read last: Karpenter sets the deadline before it deletes the
		// node (autoscaler-facts §6.5), so a node seen draining above has
		// its deadline here, if it has one.
		nc, err := dyn.Resource(autoscaler.NodeClaimResource).Get(ctx, claim, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, "", err
		}
		if deadline := deadlineOf(nc); deadline != "" {
			return false, "", fmt.Errorf("expected the drain of node %s to wait on pod %s/%s's PodDisruptionBudget, but Karpenter will delete every pod on it by %s whatever the budget says: NodeClaim %s has %s (autoscaler-facts §6.5)", node.Name, ns, name, deadline, claim, gracePeriodOf(nc))
		}
		t.Logf("%s: node %s draining (%s), pod %s/%s running, its eviction refused", poolName(p), node.Name, drain, ns, name)
		return true, "", nil
	})
	return err
}

// guard creates a PodDisruptionBudget that keeps the pod (minAvailable
// 1: a bare pod has no scale for maxUnavailable) and waits until the
// disruption controller counts the pod healthy and allows no disruption.
func guard(ctx context.Context, r *harness.Run, pl *placed, ns, name string) error {
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &one,
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{labelGuarded: name}},
		},
	}
	if _, err := r.Client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("a PodDisruptionBudget for pod %s/%s: %w", ns, name, err)
	}
	return wait.For(ctx, fmt.Sprintf("PodDisruptionBudget %s/%s to count its pod healthy and allow no disruption", ns, name), time.Minute, func(ctx context.Context) (bool, string, error) {
		if pod, waiting, err := pl.get(ctx, r); err != nil || pod == nil {
			return false, waiting, err
		}
		got, err := r.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s := got.Status
		seen := fmt.Sprintf("observed generation %d of %d, %d healthy, %d disruptions allowed", s.ObservedGeneration, got.Generation, s.CurrentHealthy, s.DisruptionsAllowed)
		return s.ObservedGeneration >= got.Generation && s.CurrentHealthy == 1 && s.DisruptionsAllowed == 0, seen, nil
	})
}

// nodeClaimOf names the NodeClaim of the NodePool that made node: by
// the provider ID both carry from the launch on (autoscaler-facts §6.1a), as the NodeClaim's
// status.nodeName comes only with Karpenter's registration of the node,
// which a pod may outrun (seen under load).
func nodeClaimOf(ctx context.Context, dyn dynamic.Interface, nodePool string, node *corev1.Node) (string, error) {
	var name string
	err := wait.For(ctx, fmt.Sprintf("a NodeClaim of NodePool %s for node %s (provider ID %s)", nodePool, node.Name, node.Spec.ProviderID), 30*time.Second, func(ctx context.Context) (bool, string, error) {
		list, err := dyn.Resource(autoscaler.NodeClaimResource).List(ctx, metav1.ListOptions{LabelSelector: autoscaler.LabelNodePool + "=" + nodePool})
		if err != nil {
			return false, "", fmt.Errorf("listing the NodeClaims of NodePool %s: %w", nodePool, err)
		}
		var seen []string
		for _, nc := range list.Items {
			n, _, _ := unstructured.NestedString(nc.Object, "status", "nodeName")
			id, _, _ := unstructured.NestedString(nc.Object, "status", "providerID")
			if n == node.Name || (id != "" && id == node.Spec.ProviderID) {
				name = nc.GetName()
				return true, "", nil
			}
			seen = append(seen, nc.GetName()+" ("+orNothing(id)+")")
		}
		return false, "NodeClaims: " + orNothing(strings.Join(seen, ", ")), nil
	})
	return name, err
}

// deadlineOf is the time by which Karpenter deletes the NodeClaim's pods
// whatever their budgets say, or "".
func deadlineOf(nc *unstructured.Unstructured) string {
	if nc == nil {
		return ""
	}
	return nc.GetAnnotations()[annotationTerminationTime]
}

// gracePeriodOf says where the deadline comes from.
func gracePeriodOf(nc *unstructured.Unstructured) string {
	if v, ok, _ := unstructured.NestedString(nc.Object, "spec", "terminationGracePeriod"); ok {
		return "spec.terminationGracePeriod " + v + ", from its NodePool's template"
	}
	return annotationTerminationTime + " set"
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// evictionRefused asks the apiserver, in a dry run, to evict the pod: a
// 429 is the PodDisruptionBudget refusing, as it refuses Karpenter's
// evictions (autoscaler-facts §6.3).
func evictionRefused(ctx context.Context, r *harness.Run, ns, name string) (bool, error) {
	err := r.Client.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: name, Namespace: ns},
		DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}},
	})
	switch {
	case apierrors.IsTooManyRequests(err):
		return true, nil
	case err == nil:
		return false, fmt.Errorf("expected an eviction of pod %s/%s to be refused by its PodDisruptionBudget, but the apiserver would evict it", ns, name)
	default:
		return false, fmt.Errorf("a dry-run eviction of pod %s/%s: %w", ns, name, err)
	}
}

// podEvent says what Karpenter's newest event of reason on the pod says,
// as ": the autoscaler said ...", or "".
func podEvent(ctx context.Context, r *harness.Run, p *corev1.Pod, reason string) string {
	if msg, err := karpenterSays(ctx, r, p.Namespace, "Pod", p.Name, string(p.UID), reason); err == nil && msg != "" {
		return fmt.Sprintf(": the autoscaler said %q", msg)
	}
	return ""
}
