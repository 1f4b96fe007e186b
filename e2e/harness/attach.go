package harness

import (
	"context"
	"fmt"
	"strings"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/gpupool/gpupool/e2e/barrier"
	"github.com/gpupool/gpupool/e2e/candidate"
	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/fleet"
)

// SetRunID names the run whose objects this process labels (see Own).
func SetRunID(id string) { runID = id }

// AttachTo points a run at a cluster gpupool did not make (p is a
// cluster.Existing): its nodes must already form the fleet's pools, each
// node labelled gpupool.dev/pool with its pool's name. With
// installCandidate the plan's candidate is installed first, labelled with
// the run id for RemoveOwned; the run refuses, before applying anything,
// if the cluster already has one of its objects. Without it, the cluster
// is checked as configured and nothing is installed.
func AttachTo(ctx context.Context, plan *Plan, p cluster.Provider, installCandidate bool) (*Run, error) {
	r := &Run{Plan: plan, Log: stderrLog}
	start := time.Now()
	c, err := p.Up(ctx)
	if err != nil {
		return nil, err
	}
	r.Log("cluster %s (%s) answers after %s", c.Name, c.REST.Host, time.Since(start).Round(time.Millisecond))
	if err := r.Attach(c); err != nil {
		return nil, err
	}
	var missing []string
	for _, pool := range plan.Fleet.Spec.Pools {
		list, err := r.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fleet.LabelPool + "=" + pool.Name})
		if err != nil {
			return nil, err
		}
		if len(list.Items) == 0 {
			missing = append(missing, pool.Name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("fleet %s: no node of cluster %s forms pool %s: label each node %s=<pool> (or pass --fleet with the pools the cluster has)",
			plan.Fleet.File, c.Name, strings.Join(missing, ", "), fleet.LabelPool)
	}
	if !installCandidate {
		r.Log("checking %s as configured: nothing installed", c.Name)
		return r, nil
	}
	applier, err := candidate.NewApplier(c.REST)
	if err != nil {
		return nil, err
	}
	applier.ServerSide = r.ServerSideApply
	applier.Labels = map[string]string{LabelRun: RunID(), fleet.LabelManagedBy: fleet.ManagedBy}
	there, err := plan.Candidate.Existing(ctx, applier, LabelRun)
	if err != nil {
		return nil, err
	}
	if len(there) > 5 {
		there = append(there[:5], fmt.Sprintf("and %d more", len(there)-5))
	}
	if len(there) > 0 {
		return nil, fmt.Errorf("candidate %s: cluster %s already has %s; gpupool installs a candidate in a cluster it did not make only where every object is new, so that it can remove them afterwards. Check the cluster as configured (no --candidate), or remove them first",
			plan.Candidate.Dir, c.Name, strings.Join(there, "; "))
	}
	// The cluster's own ClusterPolicy CRD, if it has one, is the schema
	// its operator runs with: it stays. Else the pinned upstream one is
	// installed, labelled like the candidate.
	dyn, err := dynamic.NewForConfig(c.REST)
	if err != nil {
		return nil, err
	}
	_, err = dyn.Resource(apiextv1.SchemeGroupVersion.WithResource("customresourcedefinitions")).Get(ctx, "clusterpolicies.nvidia.com", metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if err := r.installUpstreamCRDs(ctx, applier); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	}
	start = time.Now()
	if _, err := plan.Candidate.Install(ctx, applier); err != nil {
		return nil, err
	}
	r.Log("candidate %s: %d objects applied in %s, labelled %s=%s", plan.Candidate.Name, len(plan.Candidate.Objects), time.Since(start).Round(time.Millisecond), LabelRun, RunID())
	took, err := barrier.Await(ctx, r.Client, metav1.NamespaceSystem)
	if err != nil {
		return nil, err
	}
	r.Log("candidate's admission policies enforced after %s", took.Round(time.Millisecond))
	return r, nil
}
