// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaling

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/harness"
)

// maxRecreated bounds how often a check's pod is created again after the
// taint-eviction controller deleted it: the race of autoscaler-facts §4.7
// is rare, while a taint the pool's pods do not tolerate deletes every one.
const maxRecreated = 2

// goneWait bounds the wait for the event that says why a pod went: the
// controller records it as it deletes.
const goneWait = 5 * time.Second

// placed is a check's bare pod on its way to a node the autoscaler makes.
// On such a node it may be deleted by the taint-eviction controller from a
// stale view of the node: Karpenter removes the karpenter.sh/unregistered
// NoExecute taint as it registers the node, the scheduler binds the pod,
// and kube-controller-manager, not yet aware the taint went, deletes it
// (autoscaler-facts §4.7, kubernetes/kubernetes#139992). That is
// upstream's race, not the candidate's doing, so the pod is created again;
// a pod deleted more than maxRecreated times is the check's failure.
type placed struct {
	template  *corev1.Pod // as the check wrote it
	pod       *corev1.Pod // the live pod as last read
	logf      func(format string, args ...any)
	recreated int
	goneSince time.Time
	tainted   bool // seen being deleted by the taint-eviction controller
}

// place creates the pod, as expect.Admitted does, and tracks it.
func place(ctx context.Context, r *harness.Run, pod *corev1.Pod, logf func(string, ...any)) (*placed, error) {
	created, err := expect.Admitted(ctx, r.Client, pod)
	if err != nil {
		return nil, err
	}
	return &placed{template: pod.DeepCopy(), pod: created, logf: logf}, nil
}

// get reads the pod. A pod the taint-eviction controller deleted is
// created again (the new one is what get returns from then on); while the
// event that says why a pod went has not shown, get returns nil and what
// it awaits.
func (pl *placed) get(ctx context.Context, r *harness.Run) (*corev1.Pod, string, error) {
	cur := pl.pod
	got, err := r.Client.CoreV1().Pods(cur.Namespace).Get(ctx, cur.Name, metav1.GetOptions{})
	if err == nil && got.UID == cur.UID {
		pl.pod, pl.goneSince = got, time.Time{}
		if got.DeletionTimestamp != nil {
			// Going, whatever it ran: judged once it is gone.
			pl.tainted = pl.tainted || expect.DeletingForTaint(got)
			return nil, fmt.Sprintf("pod %s/%s is being deleted (%s)", got.Namespace, got.Name, expect.Describe(got)), nil
		}
		return got, "", nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, "", err
	}
	// Gone (or a pod of the same name that is not ours): why? The
	// controller's event names the pod without its UID.
	evs, err := r.Client.CoreV1().Events(cur.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
		fields.OneTermEqualSelector("involvedObject.kind", "Pod"),
		fields.OneTermEqualSelector("involvedObject.name", cur.Name),
		fields.OneTermEqualSelector("reason", expect.ReasonTaintEviction)).String()})
	if err != nil {
		return nil, "", err
	}
	// Where it went from, for a message: read only when one is written,
	// not on every poll that awaits the event.
	where := func() string {
		if cur.Spec.NodeName == "" {
			return "before it was seen bound"
		}
		return "from node " + cur.Spec.NodeName + taintsOf(ctx, r, cur.Spec.NodeName)
	}
	said, evicted := expect.TaintEvicted(evs.Items, cur)
	if pl.tainted && !evicted {
		said, evicted = "its DisruptionTarget condition said "+expect.ReasonDeletionByTaint, true
	}
	if !evicted {
		if pl.goneSince.IsZero() {
			pl.goneSince = time.Now()
		}
		if time.Since(pl.goneSince) > goneWait {
			return nil, "", fmt.Errorf("pod %s/%s was deleted %s, and no event says by whom", cur.Namespace, cur.Name, where())
		}
		return nil, fmt.Sprintf("pod %s/%s is gone; awaiting the event that says why", cur.Namespace, cur.Name), nil
	}
	if pl.recreated >= maxRecreated {
		return nil, "", fmt.Errorf("pod %s/%s was deleted by the taint-eviction controller %d times, the last %s: a NoExecute taint the pool's pods do not tolerate (%s)",
			cur.Namespace, cur.Name, pl.recreated+1, where(), strings.TrimSpace(said))
	}
	pl.recreated++
	pod := pl.template.DeepCopy()
	created, err := expect.Admitted(ctx, r.Client, pod)
	if err != nil {
		return nil, "", fmt.Errorf("creating pod %s/%s again after the taint-eviction controller deleted it: %w", cur.Namespace, cur.Name, err)
	}
	pl.logf("pod %s/%s was deleted by the taint-eviction controller %s (%s), most likely from a stale view of a node Karpenter had just registered (autoscaler-facts §4.7, kubernetes/kubernetes#139992): created again (%d of at most %d)",
		cur.Namespace, cur.Name, where(), said, pl.recreated, maxRecreated)
	pl.pod, pl.goneSince, pl.tainted = created, time.Time{}, false
	return nil, fmt.Sprintf("pod %s/%s created again after the taint-eviction controller deleted it", cur.Namespace, cur.Name), nil
}

// taintsOf names a node's NoExecute taints, for a message.
func taintsOf(ctx context.Context, r *harness.Run, node string) string {
	n, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return " (since gone)"
	}
	var out []string
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t.Key+"="+t.Value+":NoExecute")
		}
	}
	if len(out) == 0 {
		return ", which has no NoExecute taint now"
	}
	return ", which has the taints " + strings.Join(out, ", ")
}
