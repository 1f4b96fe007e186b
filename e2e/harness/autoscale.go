// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/gpupool/gpupool/e2e/autoscaler"
	"github.com/gpupool/gpupool/e2e/candidate"
	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/upstream"
	"github.com/gpupool/gpupool/e2e/versions"
	"github.com/gpupool/gpupool/e2e/wait"
)

// autoscaling reports whether the run needs the autoscaler's API: the
// fleet has autoscaled pools, or the candidate carries NodePools.
func (r *Run) autoscaling() bool {
	if len(r.Fleet.Autoscaled()) > 0 {
		return true
	}
	for _, o := range r.Candidate.Objects {
		if autoscaler.Owns(o.GroupVersionKind().Group) {
			return true
		}
	}
	return false
}

// installAutoscalerCRDs applies Karpenter's CRDs as its pinned release
// ships them, so the candidate's NodePools are checked against the real
// schema, and waits until each is served.
func (r *Run) installAutoscalerCRDs(ctx context.Context, a *candidate.Applier) error {
	crds, err := autoscaler.CRDs()
	if err != nil {
		return err
	}
	where := fmt.Sprintf("%s@%s", upstream.KarpenterModule, upstream.KarpenterVersion())
	var objs []candidate.Object
	for i, u := range crds {
		objs = append(objs, candidate.Object{Unstructured: u, File: where, Doc: i + 1})
	}
	return r.installCRDs(ctx, a, objs)
}

// startAutoscaler runs Karpenter against the cluster, selling the fleet's
// instance types, and the cloud that hands each node it makes to the
// simulated NVIDIA stack. Stop ends both.
func (r *Run) startAutoscaler(ctx context.Context) error {
	cloud, err := autoscaler.NewCloud(r.Fleet)
	if err != nil {
		return fmt.Errorf("fleet %s: %w", r.Fleet.File, err)
	}
	if r.SimulatedPools {
		cloud.Selector = LabelRun + "=" + RunID() // the run's nodes (runsNodePools)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := r.installBornWithoutGPUs(ctx); err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(context.Background())
	if err := cloud.Run(cctx, r.Client, func(err error) { r.Log("%v", err) }); err != nil {
		cancel()
		return err
	}
	var k interface{ Stop(context.Context) error }
	where := "beside the cluster"
	img, rel := r.Cluster.Images["karpenter"], autoscaler.DefaultRelease
	if r.karpenterImage != "" {
		img, rel = r.karpenterImage, r.karpenterRelease
	}
	if img != "" {
		k, err = r.deployKarpenter(ctx, img, rel, cloud.InstanceTypes())
		where = "from its chart, release " + rel.String()
	} else {
		var kp *autoscaler.Karpenter
		kp, err = autoscaler.Start(autoscaler.Options{Self: self, Kubeconfig: r.Cluster.Kubeconfig, Server: r.Cluster.REST.Host, InstanceTypes: cloud.InstanceTypes(), Cluster: r.Cluster.Name, Log: r.opt.AutoscalerLog, FeatureGates: r.autoscalerGates()})
		if err == nil {
			k = kp
			// Beside a cluster gpupool did not make, no cluster removal
			// sweeps Karpenter's directory after a SIGKILL: the sweep of
			// the run's private kubeconfig does.
			if r.SimulatedPools {
				if err := cluster.AlsoRemove(r.Cluster.Kubeconfig, kp.Dir()); err != nil {
					r.Log("autoscaler: recording %s for removal after a kill: %v", kp.Dir(), err)
				}
			}
		}
	}
	if err != nil {
		cancel()
		return err
	}
	r.karpenter, r.stopCloud, r.Autoscaler, r.cloud = k, cancel, true, cloud
	var names []string
	for _, it := range cloud.InstanceTypes() {
		names = append(names, it.Name)
	}
	gates := ""
	for _, g := range slices.Sorted(maps.Keys(r.autoscalerGates())) {
		gates += fmt.Sprintf(" %s=%t", g, r.autoscalerGates()[g])
	}
	if gates != "" {
		gates = ", its feature gates" + gates
	}
	r.Log("autoscaler: Karpenter %s started %s in %s, the cloud selling %s%s", upstream.KarpenterVersion(), where, time.Since(start).Round(time.Millisecond), strings.Join(names, ", "), gates)
	return nil
}

// deployKarpenter installs Karpenter from its KWOK provider's chart into a
// cluster with real nodes (kind, or one the stack runs in), its image
// there, as release rel, and waits until it is ready. Its objects carry
// the run's labels, as the candidate's do.
func (r *Run) deployKarpenter(ctx context.Context, image string, rel autoscaler.Release, types []autoscaler.InstanceType) (*autoscaler.Deployed, error) {
	objs, err := autoscaler.InClusterObjects(autoscaler.InClusterOptions{Release: rel, Pulled: r.karpenterImage != "", Image: image, InstanceTypes: types, FeatureGates: r.autoscalerGates(), LogInfo: r.opt.AutoscalerLog != nil, KubeVersion: versions.Kube})
	if err != nil {
		return nil, err
	}
	a, err := candidate.NewApplier(r.Cluster.REST)
	if err != nil {
		return nil, err
	}
	// LabelAutoscaler: RemoveOwned stops it before anything else goes.
	a.Labels = map[string]string{LabelRun: RunID(), fleet.LabelManagedBy: fleet.ManagedBy, LabelAutoscaler: "karpenter"}
	for i, u := range objs {
		o := candidate.Object{Unstructured: u, File: autoscaler.ChartSource, Doc: i + 1}
		if _, err := a.Apply(ctx, o); err != nil {
			return nil, fmt.Errorf("installing Karpenter: %s: %w", o.Where(), err)
		}
	}
	return autoscaler.StartDeployed(ctx, r.Client, rel, r.opt.AutoscalerLog, 90*time.Second)
}

// AutoscalerProcesses is the processes of the Karpenter the run started
// beside the cluster (none when it runs in the cluster, or not at all).
func (r *Run) AutoscalerProcesses() []cluster.Process {
	if k, ok := r.karpenter.(interface{ Processes() []cluster.Process }); ok {
		return k.Processes()
	}
	return nil
}

// installBornWithoutGPUs has the cloud's nodes born without nvidia.com
// resources (autoscaler-facts §4.4), and waits until the apiserver applies
// it: a dry-run node as Karpenter creates one comes back without them.
func (r *Run) installBornWithoutGPUs(ctx context.Context) error {
	objs, err := autoscaler.BornWithoutGPUs()
	if err != nil {
		return err
	}
	probe := autoscaler.BornProbe()
	if r.SimulatedPools {
		// In someone else's cluster: the run's nodes alone, under names
		// of the run's (another run's policy may be there too).
		objs = runsOwnBornWithoutGPUs(objs)
		probe.Labels[LabelRun] = RunID()
		probe.Annotations = map[string]string{fleet.AnnotationKwokNode: "fake"}
	}
	a, err := candidate.NewApplier(r.Cluster.REST)
	if err != nil {
		return err
	}
	a.Labels = map[string]string{fleet.LabelManagedBy: fleet.ManagedBy}
	if r.SimulatedPools {
		// The run's, for RemoveOwned. On a cluster gpupool made the
		// policy goes with the cluster, and a run label would have
		// gpupool down --kubeconfig take it from a live gpupool up.
		a.Labels[LabelRun] = RunID()
	}
	for i, u := range objs {
		o := candidate.Object{Unstructured: u, File: autoscaler.BornWithoutGPUsFile, Doc: i + 1}
		if _, err := a.Apply(ctx, o); err != nil {
			return fmt.Errorf("installing %s: %w", o.Where(), err)
		}
	}
	return wait.For(ctx, "the apiserver to apply "+autoscaler.BornWithoutGPUsFile+" to a node as Karpenter creates one", 30*time.Second, func(ctx context.Context) (bool, string, error) {
		got, err := r.Client.CoreV1().Nodes().Create(ctx, probe.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, "", err
		}
		if left := autoscaler.BornWithGPUs(got); left != "" {
			return false, "a dry-run node still carries " + left, nil
		}
		if _, ok := got.Annotations[fleet.AnnotationKwokNode]; ok && r.SimulatedPools {
			return false, "a dry-run node still carries the annotation " + fleet.AnnotationKwokNode, nil
		}
		return true, "", nil
	})
}

// runsOwnBornWithoutGPUs is the policy and its binding for a run in a
// cluster gpupool did not make, named for the run and matching only the
// nodes the run's NodePools make (runsNodePools labels them), never the
// cluster's own Karpenter nodes; and beside it a policy that keeps the
// kwok.x-k8s.io/node annotation off those nodes, by which a kwok
// controller of the cluster's own would drive them too (the run's kwok
// keeps them by its label, as it does the run's fixed nodes). That one
// acts on UPDATE too: Karpenter puts the annotation back when it
// registers the node (autoscaler-facts §4.3.1).
func runsOwnBornWithoutGPUs(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	suffix := "-" + runHash()
	runsOwn := map[string]any{
		"name":       "the-runs-own-nodes",
		"expression": fmt.Sprintf("has(object.metadata.labels) && '%s' in object.metadata.labels && object.metadata.labels['%s'] == '%s'", LabelRun, LabelRun, RunID()),
	}
	for _, u := range objs {
		u = u.DeepCopy()
		u.SetName(u.GetName() + suffix)
		switch u.GetKind() {
		case "MutatingAdmissionPolicy":
			conds, _, _ := unstructured.NestedSlice(u.Object, "spec", "matchConditions")
			_ = unstructured.SetNestedSlice(u.Object, append(conds, runsOwn), "spec", "matchConditions")
		case "MutatingAdmissionPolicyBinding":
			if p, ok, _ := unstructured.NestedString(u.Object, "spec", "policyName"); ok {
				_ = unstructured.SetNestedField(u.Object, p+suffix, "spec", "policyName")
			}
		}
		out = append(out, u)
	}
	name := "gpupool-cloud-nodes-unannotated" + suffix
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1",
		"kind":       "MutatingAdmissionPolicy",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"failurePolicy":      "Fail",
			"reinvocationPolicy": "Never",
			"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
				"apiGroups": []any{""}, "apiVersions": []any{"v1"},
				"operations": []any{"CREATE", "UPDATE"}, "resources": []any{"nodes"},
			}}},
			"matchConditions": []any{runsOwn},
			"mutations": []any{map[string]any{
				"patchType": "JSONPatch",
				"jsonPatch": map[string]any{"expression": fmt.Sprintf("has(object.metadata.annotations) && '%s' in object.metadata.annotations ? [JSONPatch{op: \"remove\", path: \"/metadata/annotations/\" + jsonpatch.escapeKey('%s')}] : []", fleet.AnnotationKwokNode, fleet.AnnotationKwokNode)},
			}},
		},
	}}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1",
		"kind":       "MutatingAdmissionPolicyBinding",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"policyName": name},
	}}
	return append(out, policy, binding)
}

// autoscalerGates are the candidate's Karpenter feature gates.
func (r *Run) autoscalerGates() map[string]bool {
	if a := r.Candidate.Meta.Spec.Autoscaler; a != nil {
		return a.FeatureGates
	}
	return nil
}

// OverlayGate is whether the run's Karpenter applies NodeOverlays.
func (r *Run) OverlayGate() autoscaler.OverlayGate {
	return autoscaler.GateOf(r.autoscalerGates())
}

// StopAutoscaler ends Karpenter and the cloud, if the run started them.
func (r *Run) StopAutoscaler() { r.stopAutoscaler() }

// stopAutoscaler ends Karpenter and the cloud. What Karpenter made stays
// for the cluster's removal (embedded), or for RemoveOwned.
func (r *Run) stopAutoscaler() {
	if r.karpenter != nil {
		// The Deployment's pod has a 10 s grace period; the process
		// is killed after 10 s.
		ctx, cancel := context.WithTimeout(context.Background(), 35*time.Second)
		defer cancel()
		start := time.Now()
		if err := r.karpenter.Stop(ctx); err != nil {
			r.Log("stopping Karpenter: %v", err)
		} else {
			r.Log("autoscaler: Karpenter stopped in %s", time.Since(start).Round(time.Millisecond))
		}
		r.karpenter = nil
	}
	if r.stopCloud != nil {
		r.stopCloud()
		r.stopCloud = nil
	}
}

// RemovePodsOfGoneNodes deletes the pods still bound to nodes the run's
// Karpenter made that are gone: in a cluster gpupool did not make, its
// DaemonSets (kube-proxy, say) put pods on those nodes, which no kubelet
// or kwok removes once the node is deleted; the pod garbage collector
// would, a while later. It returns how many it deleted.
func (r *Run) RemovePodsOfGoneNodes(ctx context.Context) (int, error) {
	if r.cloud == nil {
		return 0, nil
	}
	var n int
	for _, node := range r.cloud.Made() {
		if _, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			if err != nil {
				return n, err
			}
			continue // still there: not the run's to judge
		}
		pods, err := r.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
		if err != nil {
			return n, err
		}
		for _, p := range pods.Items {
			err := r.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0)), Preconditions: &metav1.Preconditions{UID: &p.UID}})
			switch {
			case err == nil:
				n++
			case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
				return n, fmt.Errorf("deleting pod %s/%s of gone node %s: %w", p.Namespace, p.Name, node, err)
			}
		}
	}
	return n, nil
}
