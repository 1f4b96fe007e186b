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

	"github.com/gpupool/gpupool/e2e/autoscaler"
	"github.com/gpupool/gpupool/e2e/candidate"
	"github.com/gpupool/gpupool/e2e/upstream"
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
	self, err := os.Executable()
	if err != nil {
		return err
	}
	start := time.Now()
	cctx, cancel := context.WithCancel(context.Background())
	if err := cloud.Run(cctx, r.Client, func(err error) { r.Log("%v", err) }); err != nil {
		cancel()
		return err
	}
	k, err := autoscaler.Start(autoscaler.Options{Self: self, Kubeconfig: r.Cluster.Kubeconfig, Server: r.Cluster.REST.Host, InstanceTypes: cloud.InstanceTypes(), Cluster: r.Cluster.Name, Log: r.opt.AutoscalerLog, FeatureGates: r.autoscalerGates()})
	if err != nil {
		cancel()
		return err
	}
	r.karpenter, r.stopCloud = k, cancel
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
	r.Log("autoscaler: Karpenter %s started in %s, the cloud selling %s%s", upstream.KarpenterVersion(), time.Since(start).Round(time.Millisecond), strings.Join(names, ", "), gates)
	return nil
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

// stopAutoscaler ends Karpenter and the cloud. What Karpenter made stays
// for the cluster's removal (embedded), or for RemoveOwned.
func (r *Run) stopAutoscaler() {
	if r.karpenter != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := r.karpenter.Stop(ctx); err != nil {
			r.Log("stopping Karpenter: %v", err)
		}
		r.karpenter = nil
	}
	if r.stopCloud != nil {
		r.stopCloud()
		r.stopCloud = nil
	}
}
