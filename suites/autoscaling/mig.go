// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaling

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/autoscaler"
	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/fakegpu"
)

// annotationDoNotDisrupt blocks every disruption Karpenter decides when a
// node carries it as "true" (autoscaler-facts §7.2, §7.5).
const annotationDoNotDisrupt = "karpenter.sh/do-not-disrupt"

// otherLayout is the layout a node is moved to: the Operator's default,
// which every mig-parted config the stack reads names.
const otherLayout = "all-disabled"

// reconfigureTimeout bounds one MIG reconfiguration as the simulated MIG
// manager runs it (well under a second here).
const reconfigureTimeout = 30 * time.Second

func TestMIGReconfigurationNotDisrupted(t *testing.T) {
	c := checks.AutoscalingMIGReconfigNotDisrupted
	f := suite.Feature(c).
		Assess("a node of each autoscaled MIG pool, its layout changed, is guarded from the autoscaler while the layout is applied, and not before or after", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			var mig []fleet.AutoscaledPool
			for _, p := range autoscaled(t, r) {
				if p.Mode() == fleet.ModeMIG {
					mig = append(mig, p)
				}
			}
			if len(mig) == 0 {
				t.Skipf("fleet %s has no autoscaled MIG pool", r.Fleet.Metadata.Name)
			}
			eachPool(t, mig, func(p fleet.AutoscaledPool) error {
				return reconfigureGuarded(ctx, t, r, c.ID, p)
			})
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// reconfigureGuarded takes an idle node of the pool (one the checks before
// left, or one made for a pod it then removes: a team drains a node
// before a layout change, the MIG manager evicts nothing, stack-facts §4
// step 7), changes its
// layout and watches every version of the node until the MIG manager
// reports the outcome: each version that says the layout is being
// applied (nvidia.com/mig.config.state pending) must carry
// karpenter.sh/do-not-disrupt "true", and neither the version before nor
// the one with the outcome may, or the pool could never shrink. The
// node's layout is set back after, unwaited.
func reconfigureGuarded(ctx context.Context, t *testing.T, r *harness.Run, check string, p fleet.AutoscaledPool) error {
	n, err := settledNode(ctx, r, p)
	if err != nil {
		return err
	}
	if n == nil {
		// None left by the checks before: one the pool makes for a pod.
		pod, err := tenantPod(ctx, r, check, p, objectName(p, "reconfigured"))
		if err != nil {
			return err
		}
		pl, err := place(ctx, r, pod, t.Logf)
		if err != nil {
			return fmt.Errorf("a well-formed GPU pod of the pool: %w", err)
		}
		node, err := scaledUp(ctx, r, pl, p)
		zero := int64(0)
		if derr := r.Client.CoreV1().Pods(pl.pod.Namespace).Delete(ctx, pl.pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err == nil && derr != nil && !apierrors.IsNotFound(derr) {
			err = derr
		}
		if err != nil {
			return err
		}
		if n, err = r.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{}); err != nil {
			return err
		}
	}
	if n.Annotations[annotationDoNotDisrupt] == "true" && n.Labels[fakegpu.LabelMIGConfigState] != fakegpu.MIGStatePending {
		return fmt.Errorf("node %s carries %s=true with no layout being applied (%s=%s): the autoscaler will never remove it, so the pool cannot shrink",
			n.Name, annotationDoNotDisrupt, fakegpu.LabelMIGConfigState, n.Labels[fakegpu.LabelMIGConfigState])
	}
	designed := n.Labels[fakegpu.LabelMIGConfig]
	to := otherLayout
	if designed == to {
		to = p.Sharing.MIG.Config
	}
	w, err := r.Client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", n.Name).String(), ResourceVersion: n.ResourceVersion})
	if err != nil {
		return err
	}
	defer w.Stop()
	if err := relabel(ctx, r, n.Name, to); err != nil {
		return err
	}
	defer func() { _ = relabel(context.WithoutCancel(ctx), r, n.Name, designed) }()

	what := fmt.Sprintf("node %s's layout %s to be applied (%s pending, then an outcome), guarded from the autoscaler while pending", n.Name, to, fakegpu.LabelMIGConfigState)
	deadline := time.After(reconfigureTimeout)
	var last string
	pending := 0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("timed out after %s waiting for %s; last seen: %s", reconfigureTimeout, what, orNothing(last))
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("waiting for %s: the watch of node %s ended; last seen: %s", what, n.Name, orNothing(last))
			}
			if ev.Type == watch.Deleted {
				return fmt.Errorf("waiting for %s: the node was deleted", what)
			}
			got, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue // a watch error's Status: the next read ends the watch
			}
			state, guard := got.Labels[fakegpu.LabelMIGConfigState], got.Annotations[annotationDoNotDisrupt]
			last = fmt.Sprintf("%s=%s, %s=%s, %s=%q", fakegpu.LabelMIGConfig, got.Labels[fakegpu.LabelMIGConfig], fakegpu.LabelMIGConfigState, state, annotationDoNotDisrupt, guard)
			if got.Labels[fakegpu.LabelMIGConfig] != to {
				continue // before the change
			}
			switch {
			case state == fakegpu.MIGStatePending && guard != "true":
				return fmt.Errorf("expected node %s to carry %s=true while its layout %s is applied, but a version of it with %s=pending has %s: the autoscaler may remove the node mid-reconfiguration, when its GPU pods are drained for the change and it advertises no GPU, so it looks empty (stack-facts §4; autoscaler-facts §7.2)",
					n.Name, annotationDoNotDisrupt, to, fakegpu.LabelMIGConfigState, last)
			case state == fakegpu.MIGStatePending:
				pending++
			case pending == 0 && state == fakegpu.MIGStateFailed:
				// Judged without being applied (stack-facts §4 step 3):
				// nothing to guard, and nothing will come.
				return fmt.Errorf("the MIG manager refused layout %s on node %s before applying it (%s): the check moves a node to the Operator's default layout, which the candidate's mig-parted config must name", to, n.Name, last)
			case pending > 0 && guard == "true":
				return fmt.Errorf("expected node %s's guard to go once its layout was applied, but it still carries %s=true with %s=%s: the autoscaler will never remove it, so the pool cannot shrink",
					n.Name, annotationDoNotDisrupt, fakegpu.LabelMIGConfigState, state)
			case pending > 0:
				t.Logf("%s: node %s, layout %s: %d versions while pending, each guarded; %s after", poolName(p), n.Name, to, pending, last)
				return nil
			}
		}
	}
}

// settledNode is a node of the pool the checks before left, initialized
// by Karpenter, not being removed and running no pod of the pool's, with
// its layout applied; nil when there is none.
func settledNode(ctx context.Context, r *harness.Run, p fleet.AutoscaledPool) (*corev1.Node, error) {
	nodes, err := r.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: autoscaler.LabelNodePool + "=" + p.NodePool})
	if err != nil {
		return nil, err
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.DeletionTimestamp != nil || hasTaint(n, taintDisrupted) || n.Labels[autoscaler.LabelInitialized] != "true" ||
			n.Labels[fakegpu.LabelMIGConfigState] != fakegpu.MIGStateSuccess {
			continue
		}
		pods, err := r.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n.Name).String()})
		if err != nil {
			return nil, err
		}
		if len(pods.Items) == 0 {
			return n, nil
		}
	}
	return nil, nil
}

// relabel sets the node's MIG layout label, as a platform team does.
func relabel(ctx context.Context, r *harness.Run, node, layout string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{fakegpu.LabelMIGConfig: layout}}})
	_, err := r.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
