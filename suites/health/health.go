// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package health

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/wait"
	"github.com/gpupool/gpupool/fakegpu"
)

func TestPluginDownPodsPending(t *testing.T) {
	c := checks.PluginDownPodsPending
	var pool fleet.Pool
	podName := "while-plugin-down-1"
	f := suite.Feature(c).
		Assess("with the device plugin down on every node of a pool, a new GPU pod for it stays Pending naming the resource", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			pool = r.FirstPool(t, fleet.ModeExclusive)
			res, err := r.IntendedResource(pool)
			if err != nil {
				t.Fatal(err)
			}
			if _, all, err := r.Disruptable(ctx, pool.Name); err != nil || !all {
				name := pool.Name
				pool = fleet.Pool{} // nothing to bring back
				t.Skipf("taking the device plugin down needs every node of pool %s named with --disruptive-nodes (%v)", name, err)
			}
			if err := setPluginDown(ctx, r, pool, true); err != nil {
				t.Fatal(err)
			}
			want, err := r.Insufficient(ctx, res)
			if err != nil {
				t.Fatal(err)
			}
			for attempt := 1; ; attempt++ {
				podName = fmt.Sprintf("while-plugin-down-%d", attempt)
				pod, err := suite.WellFormedPod(ctx, r, c.ID, pool, podName)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := expect.Admitted(ctx, r.Client, pod); err != nil {
					t.Fatal(err)
				}
				err = expect.PendingWith(ctx, r.Client, pod.Namespace, pod.Name, want)
				if err == nil {
					break
				}
				raced, rerr := placedFromOlderView(ctx, r, pod.Namespace, pod.Name, res)
				if rerr != nil {
					t.Fatal(rerr)
				}
				if raced == "" || attempt == staleViewAttempts {
					t.Error(err)
					break
				}
				t.Logf("%s; trying again with a new pod", raced)
			}
			return ctx
		}).
		Assess("once the device plugin recovers, the pod is scheduled onto the pool", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			if err := setPluginDown(ctx, r, pool, false); err != nil {
				t.Fatal(err)
			}
			if err := r.ExpectOnPool(ctx, suite.Namespace(ctx), podName, pool.Name); err != nil {
				t.Error(err)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if pool.Name != "" {
				if err := setPluginDown(ctx, suite.From(ctx), pool, false); err != nil {
					t.Error(err)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// staleViewAttempts bounds the pods tried when the scheduler places one
// from a view of the pool older than the plugin going down.
const staleViewAttempts = 3

// placedFromOlderView says why a pod the scheduler placed was placed from
// its cache's older view of the node (the node shows no allocatable res,
// as it did before the pod was created, and the pod holds no claim DRA
// could have served it with), or "" when the placement stands as the
// cluster's answer. The scheduler's node informer lags the apiserver
// under load (seen in CI: the pod went to the last node of the pool to
// go down); a real kubelet refuses such a pod at admission, and the
// candidate has no part in it. The pod is deleted.
func placedFromOlderView(ctx context.Context, r *harness.Run, ns, name, res string) (string, error) {
	p, err := r.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || p.Spec.NodeName == "" || p.Status.ExtendedResourceClaimStatus != nil || len(p.Spec.ResourceClaims) > 0 {
		return "", err
	}
	n, err := r.Client.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if suite.Allocatable(n, res) != 0 {
		return "", nil
	}
	zero := int64(0)
	if err := r.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		return "", err
	}
	return fmt.Sprintf("the scheduler placed pod %s/%s onto %s, which showed 0 allocatable %s before the pod existed, with no DRA claim: its cache had not yet seen the device plugin go down", ns, name, n.Name, res), nil
}

// setPluginDown simulates the device plugin pod on every node of the pool
// crashing (or coming back), as deleting the DaemonSet's pods would.
func setPluginDown(ctx context.Context, r *harness.Run, p fleet.Pool, down bool) error {
	nodes, err := r.PoolNodes(ctx, p.Name, nil)
	if err != nil {
		return err
	}
	var value any
	if down {
		value = fakegpu.DevicePluginDown
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{fakegpu.AnnotationDevicePlugin: value}}})
	for _, n := range nodes {
		if _, err := r.Client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return err
		}
	}
	res, want, err := r.Intended(p)
	if err != nil {
		return err
	}
	if down {
		want = 0
	}
	// The kubelet notices a plugin going away (or coming back) on its own
	// schedule; wait until every node's allocatable says so.
	return wait.For(ctx, fmt.Sprintf("every node of pool %s to show %d allocatable %s", p.Name, want, res), 30*time.Second, func(ctx context.Context) (bool, string, error) {
		nodes, err := r.PoolNodes(ctx, p.Name, nil)
		if err != nil {
			return false, "", err
		}
		for _, n := range nodes {
			got := suite.Allocatable(&n, res)
			if !down && got != 0 && got != want {
				// The simulated plugin publishes a node's devices in one
				// write: what a recovered node shows is what it advertises.
				return false, "", fmt.Errorf("node %s came back with %d allocatable %s, the pool is designed for %d", n.Name, got, res, want)
			}
			if got != want {
				return false, fmt.Sprintf("%s has %d", n.Name, got), nil
			}
		}
		return true, "", nil
	})
}
