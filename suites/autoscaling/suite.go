// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package autoscaling checks the autoscaled pools of the GPU pool
// contract: a real Karpenter makes their nodes from the candidate's
// NodePools, and the simulated NVIDIA stack takes each over.
package autoscaling

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/suite"
)

var testenv env.Environment

// Suite is this package's checks; main_test.go runs it under go test, and
// the gpupool binary links it.
var Suite = suite.New(&testenv, suite.Funcs{},
	TestPendingPodScalesItsOwnPool,
	TestPoolLimitHolds,
	// Before the drain: it reconfigures a node the earlier checks left,
	// where the drain check takes its node away.
	TestMIGReconfigurationNotDisrupted,
	TestScaleDownHonoursPDB,
)

// autoscaled is the fleet's autoscaled pools; a fleet with none skips the
// check that asks.
func autoscaled(t *testing.T, r *harness.Run) []fleet.AutoscaledPool {
	if len(r.Fleet.Autoscaled()) == 0 {
		t.Skipf("fleet %s has no autoscaled pool", r.Fleet.Metadata.Name)
	}
	return r.Fleet.Autoscaled()
}

// eachPool runs check on every autoscaled pool at once and reports each
// pool's error: the pools' nodes are apart (a NodePool and a machine of
// their own), and most of a scale-up is waiting on Karpenter's batch
// window and the stack, so the pools' waits overlap.
func eachPool(t *testing.T, pools []fleet.AutoscaledPool, check func(fleet.AutoscaledPool) error) {
	var wg sync.WaitGroup
	for _, p := range pools {
		wg.Go(func() {
			if err := check(p); err != nil {
				t.Errorf("%s (NodePool %s): %v", poolName(p), p.NodePool, err)
			}
		})
	}
	wg.Wait()
}

// poolName names an autoscaled pool in messages, with its trust domain
// when a NodePool scales one domain of it.
func poolName(p fleet.AutoscaledPool) string {
	if len(p.TrustDomains) == 1 {
		return "pool " + p.Name + ", trust domain " + p.TrustDomains[0].Name
	}
	return "pool " + p.Name
}

// objectName is a name for a check's object of the pool, apart from
// another trust domain's of the same pool.
func objectName(p fleet.AutoscaledPool, suffix string) string {
	if len(p.TrustDomains) == 1 {
		return p.Name + "-" + p.TrustDomains[0].Name + "-" + suffix
	}
	return p.Name + "-" + suffix
}

// tenantPod is a well-formed pod asking one GPU of the pool as its
// tenants do (suite.AutoscaledPod): the pool's resource, or a claim.
func tenantPod(ctx context.Context, r *harness.Run, check string, p fleet.AutoscaledPool, name string) (*corev1.Pod, error) {
	res, err := r.IntendedResource(p.Pool)
	if err != nil {
		return nil, err
	}
	ns, domain, err := suite.NamespaceFor(ctx, p.Pool)
	if err != nil {
		return nil, err
	}
	return suite.AutoscaledPod(ctx, r, check, p.Pool, domain, ns, name, res, 1)
}
