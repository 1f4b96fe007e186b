// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/gpupool/gpupool/e2e/autoscaler"
	"github.com/gpupool/gpupool/e2e/barrier"
	"github.com/gpupool/gpupool/e2e/candidate"
	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/dirs"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/plan"
	"github.com/gpupool/gpupool/e2e/versions"
)

// SetRunID names the run whose objects this process labels (see Own).
func SetRunID(id string) { runID = id }

// AttachOptions say what a run does in a cluster gpupool did not make.
type AttachOptions struct {
	// InstallCandidate installs the plan's candidate first, labelled with
	// the run id for RemoveOwned; the run refuses, before applying
	// anything, if the cluster already has one of its objects. Without it
	// the cluster is checked as configured.
	InstallCandidate bool
	// SimulatePools joins the plan's fleet to the cluster as simulated
	// nodes labelled with the run id, looked after by a kwok controller and
	// a fakegpu controller this process runs for them alone. Without it the
	// cluster's own nodes must form the fleet's pools.
	SimulatePools bool
	// StackImages, with SimulatePools, run the simulated stack in the
	// cluster instead of in this process: images of the kwok controller and
	// of cmd/fakegpu-controller that the cluster's nodes can pull.
	StackImages *StackImages
	// Up tunes the simulated pools' bring-up as it tunes a cluster's
	// (scale runs).
	Up UpOptions
	// Autoscale: the run's checks need the fleet's autoscaled pools
	// scaled, and the run may run its own Karpenter for them when
	// autoscaleBeside allows (gpupool run; a scale run on such a cluster
	// has no autoscale phase).
	Autoscale bool
}

// AttachTo points a run at a cluster gpupool did not make (p is a
// cluster.Existing). Unless it simulates the pools, the cluster's nodes
// must form the fleet's pools, each labelled gpupool.dev/pool with its
// pool's name. On error the caller still calls Stop and RemoveOwned.
func AttachTo(ctx context.Context, plan *plan.Plan, p cluster.Provider, opt AttachOptions) (*Run, error) {
	r, err := attach(ctx, plan, p, opt)
	if err != nil && r != nil {
		r.Stop()
	}
	return r, err
}

func attach(ctx context.Context, plan *plan.Plan, p cluster.Provider, opt AttachOptions) (*Run, error) {
	r := &Run{Plan: plan, Log: stderrLog, opt: opt.Up}
	start := time.Now()
	c, err := p.Up(ctx)
	if err != nil {
		return nil, err
	}
	r.Log("cluster %s (%s) answers after %s", c.Name, c.REST.Host, time.Since(start).Round(time.Millisecond))
	if err := r.Attach(c); err != nil {
		return nil, err
	}
	// From here on the run may have made objects: r goes back to the
	// caller with any error, for cleanup.
	var missing []string
	for _, pool := range plan.Fleet.Spec.Pools {
		if opt.SimulatePools {
			break
		}
		list, err := r.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fleet.LabelPool + "=" + pool.Name})
		if err != nil {
			return r, err
		}
		if len(list.Items) == 0 {
			missing = append(missing, pool.Name)
		}
	}
	if len(missing) > 0 {
		return r, fmt.Errorf("fleet %s: no node of cluster %s forms pool %s: label each node %s=<pool> (or pass --fleet with the pools the cluster has)",
			plan.Fleet.File, c.Name, strings.Join(missing, ", "), fleet.LabelPool)
	}
	if !opt.InstallCandidate {
		r.Log("checking %s as configured: nothing installed", c.Name)
		return r, r.simulatePools(ctx, opt)
	}
	applier, err := candidate.NewApplier(c.REST)
	if err != nil {
		return r, err
	}
	applier.ServerSide = r.ServerSideApply
	applier.Labels = map[string]string{LabelRun: RunID(), fleet.LabelManagedBy: fleet.ManagedBy}
	// A NodePool applied where a real autoscaler runs would buy real
	// machines: the candidate's autoscaler objects stay out, unless the
	// run's own Karpenter can scale the simulated pools (beside).
	beside, why, err := r.autoscaleBeside(ctx, opt)
	if err != nil {
		return r, err
	}
	cand, held := plan.Candidate.Without(func(o candidate.Object) bool {
		return !beside && autoscaler.Owns(o.GroupVersionKind().Group)
	})
	if len(held) > 0 {
		var names []string
		for _, o := range held {
			names = append(names, o.Where())
		}
		r.Log("candidate %s: %d autoscaler objects not installed in %s, a cluster gpupool did not make (%s): %s", plan.Candidate.Name, len(held), c.Name, why, strings.Join(names, "; "))
	}
	if beside && opt.StackImages != nil {
		// In the cluster, with the stack: a release of the run's own.
		r.karpenterImage = opt.StackImages.Karpenter
		r.karpenterRelease = autoscaler.Release{Name: "gpupool-kp-" + runHash(), Namespace: simulatedStackName()}
	}
	if beside {
		if cand, err = runsNodePools(cand); err != nil {
			return r, err
		}
	}
	there, err := cand.Existing(ctx, applier, LabelRun)
	if err != nil {
		return r, err
	}
	if len(there) > 5 {
		there = append(there[:5], fmt.Sprintf("and %d more", len(there)-5))
	}
	if len(there) > 0 {
		return r, fmt.Errorf("candidate %s: cluster %s already has %s; gpupool installs a candidate in a cluster it did not make only where every object is new, so that it can remove them afterwards. Check the cluster as configured (no --candidate), or remove them first",
			plan.Candidate.Dir, c.Name, strings.Join(there, "; "))
	}
	// The cluster's own ClusterPolicy CRD, if it has one, is the schema
	// its operator runs with: it stays. Else the pinned upstream one is
	// installed, labelled like the candidate.
	dyn, err := dynamic.NewForConfig(c.REST)
	if err != nil {
		return r, err
	}
	_, err = dyn.Resource(apiextv1.SchemeGroupVersion.WithResource("customresourcedefinitions")).Get(ctx, "clusterpolicies.nvidia.com", metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if err := r.installUpstreamCRDs(ctx, applier); err != nil {
			return r, err
		}
	case err != nil:
		return r, err
	}
	if beside {
		if err := r.installAutoscalerCRDs(ctx, applier); err != nil {
			return r, err
		}
	}
	start = time.Now()
	if _, err := cand.Install(ctx, applier); err != nil {
		return r, err
	}
	r.Log("candidate %s: %d objects applied in %s, labelled %s=%s", plan.Candidate.Name, len(cand.Objects), time.Since(start).Round(time.Millisecond), LabelRun, RunID())
	took, err := barrier.Await(ctx, r.Client, metav1.NamespaceSystem)
	if err != nil {
		return r, err
	}
	r.Log("candidate's admission policies enforced after %s", took.Round(time.Millisecond))
	if err := r.simulatePools(ctx, opt); err != nil {
		return r, err
	}
	if beside {
		return r, r.startAutoscaler(ctx)
	}
	return r, nil
}

// autoscaleBeside says whether the run's Karpenter scales the fleet's
// autoscaled pools in this cluster, as it does beside a cluster gpupool
// makes, and if not, why. It does only for simulated pools: beside the
// cluster when their stack runs here and the apiserver is on this
// machine (Karpenter runs in a network namespace that reaches 127.0.0.1
// alone), or in the cluster with the stack, given its image; and only
// where nothing of the cluster's own serves Karpenter's API: a Karpenter
// of the cluster's would act on the candidate's NodePools too.
func (r *Run) autoscaleBeside(ctx context.Context, opt AttachOptions) (bool, string, error) {
	switch {
	case len(r.Fleet.Autoscaled()) == 0:
		return false, "the fleet has no autoscaled pool", nil
	case !opt.Autoscale:
		return false, "nothing this command runs scales them", nil
	case !opt.SimulatePools:
		return false, "the pools are the cluster's own nodes, which its own autoscaler, if any, scales", nil
	case opt.StackImages != nil && opt.StackImages.Karpenter == "":
		return false, "the simulated stack runs in the cluster, and no --karpenter-image says what to run Karpenter there from", nil
	case opt.StackImages == nil && !loopback(r.Cluster.REST.Host):
		return false, "the apiserver is not on this machine, and gpupool's Karpenter reaches 127.0.0.1 alone", nil
	}
	if st, err := os.Stat(autoscaler.Binary()); opt.StackImages == nil && (err != nil || st.Mode()&0o111 == 0) {
		return false, "Karpenter is not built here (make autoscaler)", nil
	}
	// Karpenter makes nodes for every Pending pod a NodePool admits, the
	// cluster's own too: an untainted NodePool would give a pod of the
	// cluster's a simulated node.
	for _, o := range r.Candidate.Objects {
		if o.GroupVersionKind().Group != autoscaler.Group || o.GetKind() != "NodePool" {
			continue
		}
		if taints, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "taints"); len(taints) == 0 {
			return false, fmt.Sprintf("NodePool %s has no taint, and the run's Karpenter would make nodes for the cluster's own Pending pods", o.GetName()), nil
		}
	}
	// The nodes it makes are born without GPUs by a MutatingAdmissionPolicy.
	if res, err := r.Client.Discovery().ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1"); err != nil && !apierrors.IsNotFound(err) {
		return false, "", err
	} else if res == nil || !slices.ContainsFunc(res.APIResources, func(a metav1.APIResource) bool { return a.Name == "mutatingadmissionpolicies" }) {
		return false, "the cluster serves no MutatingAdmissionPolicy (admissionregistration.k8s.io/v1), which the nodes Karpenter makes need", nil
	}
	// None of Karpenter's CRDs may be there: the run installs them and
	// removes them, with every object of theirs.
	crds, err := autoscaler.CRDs()
	if err != nil {
		return false, "", err
	}
	dyn, err := dynamic.NewForConfig(r.Cluster.REST)
	if err != nil {
		return false, "", err
	}
	for _, crd := range crds {
		got, err := dyn.Resource(apiextv1.SchemeGroupVersion.WithResource("customresourcedefinitions")).Get(ctx, crd.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return false, "", err
		case got.GetLabels()[LabelRun] != "":
			return false, fmt.Sprintf("CRD %s is there, left by gpupool run %s (remove it with gpupool down --kubeconfig)", crd.GetName(), got.GetLabels()[LabelRun]), nil
		default:
			return false, fmt.Sprintf("the cluster serves Karpenter's API already (CRD %s), and a Karpenter of its own would act on them", crd.GetName()), nil
		}
	}
	return true, "", nil
}

// loopback reports whether an apiserver URL's host is this machine's.
func loopback(server string) bool {
	u, err := url.Parse(server)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// runsNodePools returns the candidate with the run's label on the nodes its
// NodePools make: the run's kwok and stack look after the run's nodes
// alone, and the run's checks find its pools among them.
func runsNodePools(c *candidate.Candidate) (*candidate.Candidate, error) {
	out := *c
	out.Objects = nil
	for _, o := range c.Objects {
		if o.GroupVersionKind().Group == autoscaler.Group && o.GetKind() == "NodePool" {
			o.Unstructured = o.Unstructured.DeepCopy()
			if err := unstructured.SetNestedField(o.Object, RunID(), "spec", "template", "metadata", "labels", LabelRun); err != nil {
				return nil, fmt.Errorf("%s: spec.template.metadata.labels: %w", o.Where(), err)
			}
		}
		out.Objects = append(out.Objects, o)
	}
	return &out, nil
}

// simulatedNodePrefix starts the names of a run's simulated nodes.
func simulatedNodePrefix() string { return "sim-" + runHash() + "-" }

// runHash is short for the run id in names: a scale run's ids differ only
// in their last part (-0, -1 per fleet), and two scale runs side by side
// in one cluster must not share a name.
func runHash() string {
	sum := sha256.Sum256([]byte(RunID()))
	return hex.EncodeToString(sum[:4])
}

// simulatePools joins the fleet as simulated nodes carrying the run's
// label, with a kwok controller and a fakegpu controller for them alone
// (in this process, or with StackImages in the cluster), and waits until
// they advertise the GPU Operator config the cluster has.
func (r *Run) simulatePools(ctx context.Context, opt AttachOptions) error {
	if !opt.SimulatePools {
		return nil
	}
	r.SimulatedPools = true
	sel := LabelRun + "=" + RunID()
	if opt.StackImages != nil {
		start := time.Now()
		if err := r.installSimulatedStack(ctx, *opt.StackImages, sel); err != nil {
			return err
		}
		r.Log("simulated stack: kwok and fakegpu controllers running in %s (namespace %s) after %s", r.Cluster.Name, simulatedStackName(), time.Since(start).Round(time.Millisecond))
	} else {
		k, err := cluster.StartKwok(filepath.Join(dirs.CacheDir(), "kwok-"+versions.Kwok, "kwok"), r.Cluster.Kubeconfig, sel)
		if err != nil {
			return err
		}
		r.kwok = k
		if err := r.startGPUStack(ctx); err != nil {
			return err
		}
	}
	fopt := r.opt.Fleet
	advertise := func(*corev1.Node) error { return nil }
	// Advertised joins need the config hash of a controller in this
	// process; the in-cluster one reconciles nodes as they join.
	if r.opt.JoinAdvertised && r.GPUStack != nil {
		if err := r.WaitGPUStackSynced(ctx); err != nil {
			return err
		}
		hash := r.GPUStack.ConfigHash()
		advertise = func(n *corev1.Node) error { return r.advertised(n, hash) }
	}
	fopt.Selector = sel
	fopt.Prepare = func(n *corev1.Node) error {
		// Named after the run: the cluster may have a cpu-0 of its own.
		n.Name = simulatedNodePrefix() + n.Name
		n.Labels[corev1.LabelHostname] = n.Name
		n.Labels[LabelRun] = RunID()
		// The cluster's own kwok, if it has one, manages nodes by this
		// annotation: these are the run's kwok's alone.
		delete(n.Annotations, fleet.AnnotationKwokNode)
		return advertise(n)
	}
	stats, err := fleet.Create(ctx, r.Fleet, r.Client, fopt)
	if err != nil {
		if r.kwok != nil {
			if kerr := r.kwok.Err(); kerr != nil {
				err = fmt.Errorf("%w (%v)", err, kerr)
			}
		}
		return fmt.Errorf("fleet %s: %w", r.Fleet.File, err)
	}
	r.FleetStats = stats
	r.Log("fleet %s: %d simulated nodes joined %s and Ready in %s, labelled %s", r.Fleet.Metadata.Name, stats.Nodes, r.Cluster.Name, stats.ReadyTime.Round(time.Millisecond), sel)
	start := time.Now()
	if err := r.WaitGPUStackSynced(ctx); err != nil {
		return err
	}
	r.Log("simulated GPU Operator: every simulated GPU node advertises the cluster's config after %s", time.Since(start).Round(time.Millisecond))
	return nil
}
