// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpupool/gpupool/e2e/autoscaler"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/wait"
	"github.com/gpupool/gpupool/e2e/workload"
)

// LabelRun marks every object a run creates in a cluster, with the run's
// id: in a cluster gpupool did not make, it is how the run (or a later
// 'gpupool down --kubeconfig') finds what to remove.
const LabelRun = "gpupool.dev/run"

// LabelAutoscaler marks the objects of a run's Karpenter in a cluster:
// its Deployment is stopped before anything else of the run goes, as one
// a run killed with SIGKILL left keeps making nodes.
const LabelAutoscaler = "gpupool.dev/autoscaler"

// LabelStack marks the objects of a run's simulated stack in a cluster
// gpupool did not make (its kwok and fakegpu controllers): they are
// removed after everything else of the run.
const LabelStack = "gpupool.dev/simulated-stack"

var runID string

// ownNodes selects the nodes of a cluster gpupool made: another run's
// simulated pools joined there carry that run's label and its own
// simulated stack.
const ownNodes = "!" + LabelRun

// RunID is the id the objects of this process's run carry.
func RunID() string {
	if runID == "" {
		runID = NewRunName()
	}
	return runID
}

// Own labels an object the run creates, so the run's cleanup finds it.
func Own(o metav1.Object) {
	labels := o.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelRun] = RunID()
	labels[fleet.LabelManagedBy] = fleet.ManagedBy
	o.SetLabels(labels)
}

// RemoveOwned deletes from the cluster every object labelled with the run
// id (any run's when id is ""), and every check pod, of every kind the
// apiserver serves, and waits until they are gone. Namespaced objects go
// first, then namespaces, then cluster-scoped objects, CRDs last; then the
// run's simulated stack. timeout bounds the wait for the first, half of it
// the wait for the stack. It returns how many objects it deleted.
func RemoveOwned(ctx context.Context, rc *rest.Config, id string, timeout time.Duration) (int, error) {
	rc = rest.CopyConfig(rc)
	rc.WarningHandler = rest.NoWarnings{} // listing every kind warns of deprecated ones
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return 0, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return 0, err
	}
	lists, err := discovery.ServerPreferredResources(dc)
	if err != nil && len(lists) == 0 {
		return 0, fmt.Errorf("listing the kinds the cluster serves: %w", err)
	}
	type res struct {
		kindRef
		rank int
	}
	var all []res
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !has(r.Verbs, "list") || !has(r.Verbs, "delete") {
				continue
			}
			rank := 0
			switch {
			case r.Name == "namespaces":
				rank = 1
			case r.Name == "customresourcedefinitions":
				rank = 4
			case r.Name == "validatingadmissionpolicies" || r.Name == "mutatingadmissionpolicies":
				rank = 3 // after their bindings
			case !r.Namespaced:
				rank = 2
			}
			all = append(all, res{kindRef{gv.WithResource(r.Name), r.Namespaced}, rank})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].rank < all[j].rank })
	ordered := make([]kindRef, len(all))
	for i, r := range all {
		ordered[i] = r.kindRef
	}
	runSel := LabelRun
	if id != "" {
		runSel = LabelRun + "=" + id
	}
	// The run's Karpenter in the cluster goes first, its pod awaited
	// gone: while it runs it makes nodes for the run's Pending pods.
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return 0, err
	}
	total, err := stopKarpenter(ctx, cs, runSel)
	if err != nil {
		return total, err
	}
	// The run's simulated stack in the cluster (its kwok and fakegpu
	// controllers) goes last: kwok finishes the deletion of pods on the
	// run's nodes, which would otherwise wait on a kubelet that never was.
	var errs []error
	for _, stack := range []bool{false, true} {
		limit := timeout
		if stack {
			limit = timeout / 2 // a namespace and its RBAC
		}
		n, err := removeSelected(ctx, dyn, ordered, runSel, stack, limit)
		total += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return total, errors.Join(errs...)
}

// stopKarpenter stops the run's Karpenter Deployments (LabelAutoscaler),
// each awaited until its pods are gone. It returns how many it stopped.
func stopKarpenter(ctx context.Context, cs kubernetes.Interface, runSel string) (int, error) {
	list, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: runSel + "," + LabelAutoscaler})
	if apierrors.IsForbidden(err) {
		return 0, nil // as removeSelected: what it may not list, it leaves
	}
	if err != nil {
		return 0, err
	}
	for i := range list.Items {
		if err := autoscaler.StopDeployment(ctx, cs, &list.Items[i]); err != nil {
			return i, fmt.Errorf("stopping the run's Karpenter: %w", err)
		}
	}
	return len(list.Items), nil
}

// terminationFinalizer is Karpenter's on the NodeClaims and nodes it makes:
// its own termination controller removes it once the node is drained and
// the machine gone (autoscaler-facts §6.1).
const terminationFinalizer = "karpenter.sh/termination"

// dropTermination removes Karpenter's finalizer from one of the run's
// NodeClaims or nodes being deleted: the run's Karpenter, which would
// have, has stopped (or died with a run killed with SIGKILL), and the
// machine is simulated.
// The patch names the resource version the list was read at, so a
// finalizer someone added since is not dropped with it: on a conflict the
// object is read again.
func dropTermination(ctx context.Context, ri dynamic.ResourceInterface, o *unstructured.Unstructured) error {
	for range 3 {
		fins := o.GetFinalizers()
		if !slices.Contains(fins, terminationFinalizer) {
			return nil
		}
		keep := slices.DeleteFunc(slices.Clone(fins), func(f string) bool { return f == terminationFinalizer })
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": keep, "resourceVersion": o.GetResourceVersion()}})
		if err != nil {
			return err
		}
		_, err = ri.Patch(ctx, o.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil || apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsConflict(err):
			return fmt.Errorf("removing finalizer %s: %w", terminationFinalizer, err)
		}
		if o, err = ri.Get(ctx, o.GetName(), metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return fmt.Errorf("removing finalizer %s: %w", terminationFinalizer, err)
		}
	}
	return fmt.Errorf("removing finalizer %s: the object kept changing", terminationFinalizer)
}

type kindRef struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

// removeSelected deletes the objects of the kinds in res that runSel
// selects, those of the simulated stack (labelled LabelStack) or the
// others, and waits until they are gone.
func removeSelected(ctx context.Context, dyn dynamic.Interface, res []kindRef, runSel string, stack bool, timeout time.Duration) (int, error) {
	type left struct {
		ri   dynamic.ResourceInterface
		name string
		what string
	}
	var gone []left
	var errs []error
	for _, r := range res {
		sels := []string{runSel}
		if r.gvr.Resource == "pods" && !stack {
			sels = append(sels, workload.LabelCheck)
		}
		for _, sel := range sels {
			if stack {
				sel += "," + LabelStack
			} else {
				sel += ",!" + LabelStack
			}
			list, err := dyn.Resource(r.gvr).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				if !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) && !apierrors.IsForbidden(err) {
					errs = append(errs, fmt.Errorf("listing %s: %w", r.gvr.Resource, err))
				}
				continue
			}
			for _, o := range list.Items {
				var ri dynamic.ResourceInterface = dyn.Resource(r.gvr)
				if r.namespaced {
					ri = dyn.Resource(r.gvr).Namespace(o.GetNamespace())
				}
				what := fmt.Sprintf("%s %s", o.GetKind(), o.GetName())
				if o.GetNamespace() != "" {
					what = fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
				}
				if err := ri.Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					errs = append(errs, fmt.Errorf("deleting %s: %w", what, err))
					continue
				}
				if err := dropTermination(ctx, ri, &o); err != nil {
					errs = append(errs, fmt.Errorf("deleting %s: %w", what, err))
				}
				gone = append(gone, left{ri, o.GetName(), what})
			}
		}
	}
	if len(gone) == 0 {
		return 0, errors.Join(errs...)
	}
	what := fmt.Sprintf("the %d objects the run made to be gone", len(gone))
	if stack {
		what = fmt.Sprintf("the %d objects of the run's simulated stack to be gone", len(gone))
	}
	err := wait.For(ctx, what, timeout, func(ctx context.Context) (bool, string, error) {
		var still []string
		for _, g := range gone {
			if _, err := g.ri.Get(ctx, g.name, metav1.GetOptions{}); err == nil {
				still = append(still, g.what)
			}
		}
		return len(still) == 0, "still there: " + strings.Join(still, ", "), nil
	})
	return len(gone), errors.Join(append(errs, err)...)
}

func has(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Disruptable returns the nodes of a pool a disruptive check may change:
// every node on a cluster gpupool made, else those in r.DisruptiveNodes.
// all says whether that is the whole pool.
func (r *Run) Disruptable(ctx context.Context, pool string) (nodes []corev1.Node, all bool, err error) {
	poolNodes, err := r.PoolNodes(ctx, pool, nil)
	if err != nil || len(r.DisruptiveNodes) == 0 {
		return poolNodes, true, err
	}
	allowed := map[string]bool{}
	for _, n := range r.DisruptiveNodes {
		allowed[n] = true
	}
	for _, n := range poolNodes {
		if allowed[n.Name] {
			nodes = append(nodes, n)
		}
	}
	return nodes, len(nodes) == len(poolNodes), nil
}
