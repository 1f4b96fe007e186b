// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpupool/gpupool/e2e/explain"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/workload"
	"github.com/gpupool/gpupool/fakegpu"
)

// Labels on every pod a scale run creates.
const (
	LabelRun   = "gpupool.dev/scale-run"
	LabelPhase = "gpupool.dev/scale-phase"
	LabelEntry = "gpupool.dev/scale-mix" // index into spec.mix
)

// Namespace holds the pods of pools without trust domains.
const Namespace = "gpupool-scale"

// template is a ready-made pod per mix entry and trust domain; pods are
// copies with a name.
type template struct {
	entry    int
	pods     []*corev1.Pod // one per trust domain (or one)
	expected string        // explain category the pod must end in, "" if it must schedule
	// claims: a claim entry's ResourceClaimTemplate, one per namespace
	// its pods go to, created before the first phase.
	claims []*resourcev1.ResourceClaimTemplate
	// autoscaled: the entry is on an autoscaled pool, whose pods only
	// autoscale phases create.
	autoscaled bool
}

// PodClaim is the name a claim pod gives its claim (spec.resourceClaims).
const PodClaim = "gpu"

// claimTemplateName names a claim entry's ResourceClaimTemplate: one per
// entry and run, so runs sharing a namespace keep theirs apart.
func claimTemplateName(runID string, entry int) string {
	return fmt.Sprintf("%s-mix-%d", runID, entry)
}

// classFor is the DeviceClass a claim for a GPU of resource names: the
// one mapping it (spec.extendedResourceName), as a tenant would read the
// candidate. When several do, the scheduler takes the newest, on a tie
// the lexically first (dra-facts §1 "DeviceClass"), and so does this.
func classFor(classes []resourcev1.DeviceClass, resource string) (string, error) {
	var mapping []resourcev1.DeviceClass
	var all []string
	for _, c := range classes {
		all = append(all, c.Name)
		if r := c.Spec.ExtendedResourceName; r != nil && *r == resource {
			mapping = append(mapping, c)
		}
	}
	if len(mapping) == 0 {
		sort.Strings(all)
		have := "none"
		if len(all) > 0 {
			have = strings.Join(all, ", ")
		}
		return "", fmt.Errorf("no DeviceClass maps %s (spec.extendedResourceName); the cluster's DeviceClasses: %s", resource, have)
	}
	sort.Slice(mapping, func(i, j int) bool {
		ti, tj := mapping[i].CreationTimestamp, mapping[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return tj.Before(&ti)
		}
		return mapping[i].Name < mapping[j].Name
	})
	return mapping[0].Name, nil
}

// Resolver says which resource a GPU pool's tenants are told to request,
// how many of it a node of the pool advertises, and which namespace
// belongs to a trust domain (the harness knows all three).
type Resolver interface {
	IntendedResource(p fleet.Pool) (string, error)
	Intended(p fleet.Pool) (string, int64, error)
	TrustNamespace(ctx context.Context, d fleet.TrustDomain) (string, error)
}

// buildTemplates makes each mix entry's pods; classes are the cluster's
// DeviceClasses, read only when the mix has claim entries.
func buildTemplates(ctx context.Context, w *Workload, fl *fleet.Fleet, res Resolver, classes []resourcev1.DeviceClass, runID string) ([]template, error) {
	var out []template
	for i, m := range w.Spec.Mix {
		p, ok := fl.Pool(m.Pool)
		autoscaled := false
		if !ok {
			var ap fleet.AutoscaledPool
			ap, autoscaled = fl.AutoscaledPool(m.Pool)
			p, ok = ap.Pool, autoscaled
		}
		if !ok {
			return nil, fmt.Errorf("workload %s: spec.mix[%d].pool: the fleet has no pool %q, fixed or autoscaled", w.File, i, m.Pool)
		}
		if m.Claim() && (!p.GPU() || p.DRA == nil) {
			return nil, fmt.Errorf("workload %s: spec.mix[%d].shape: claim needs a pool whose GPUs DRA serves; pool %s has no dra: in the fleet", w.File, i, m.Pool)
		}
		t := template{entry: i, autoscaled: autoscaled}
		domains := []*fleet.TrustDomain{nil}
		if len(p.TrustDomains) > 0 {
			domains = nil
			for j := range p.TrustDomains {
				domains = append(domains, &p.TrustDomains[j])
			}
		}
		for _, d := range domains {
			ns := Namespace
			if d != nil {
				var err error
				if ns, err = res.TrustNamespace(ctx, *d); err != nil {
					return nil, err
				}
			}
			pod := workload.New("scale", ns, "")
			switch m.Shape {
			case ShapeUntolerated:
				// The pool's selector, the trust domain's tolerations, not the pool's.
				pod = pod.NodeSelector(p.Labels)
				if d != nil {
					pod = pod.NodeSelector(d.Labels).Tolerate(d.Taints...)
				}
				t.expected = explain.NoMatchingPool
			default:
				pod = pod.ForPool(p, d)
			}
			labels := map[string]string{LabelRun: runID, LabelEntry: fmt.Sprint(i)}
			if p.GPU() {
				r, err := res.IntendedResource(p)
				if err != nil {
					return nil, err
				}
				switch m.Shape {
				case ShapeWholeGPU:
					pod = pod.GPU(fakegpu.ResourceGPU, 1)
					t.expected = explain.WrongResource
				case ShapeClaim:
					class, err := classFor(classes, r)
					if err != nil {
						return nil, fmt.Errorf("workload %s: spec.mix[%d] (claim on pool %s): %w", w.File, i, m.Pool, err)
					}
					ct := workload.ClaimTemplate("scale", ns, claimTemplateName(runID, i), class, 1)
					// The run's labels on the template and on the claims
					// made from it, so cleanup finds both.
					ct.Spec.ObjectMeta.Labels = map[string]string{}
					for k, v := range labels {
						ct.Labels[k] = v
						ct.Spec.ObjectMeta.Labels[k] = v
					}
					t.claims = append(t.claims, ct)
					pod = pod.RuntimeClass(workload.RuntimeClass).ClaimFromTemplate(PodClaim, ct.Name)
				default:
					pod = pod.GPU(r, 1)
				}
			}
			for k, v := range labels {
				pod.Labels[k] = v
			}
			t.pods = append(t.pods, pod.Pod)
		}
		out = append(out, t)
	}
	return out, nil
}

// ensureClaimTemplates creates the claim entries' ResourceClaimTemplates;
// their namespaces must exist.
func ensureClaimTemplates(ctx context.Context, cs kubernetes.Interface, ts []template) error {
	for _, t := range ts {
		for _, ct := range t.claims {
			if _, err := cs.ResourceV1().ResourceClaimTemplates(ct.Namespace).Create(ctx, ct, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating ResourceClaimTemplate %s/%s: %w", ct.Namespace, ct.Name, err)
			}
		}
	}
	return nil
}

// ensureNamespaces creates the scale namespace and the pods' own service
// account wherever the templates put pods.
func ensureNamespaces(ctx context.Context, cs kubernetes.Interface, ts []template, labels map[string]string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace, Labels: labels}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	seen := map[string]bool{}
	for _, t := range ts {
		for _, p := range t.pods {
			if seen[p.Namespace] {
				continue
			}
			seen[p.Namespace] = true
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: workload.ServiceAccount, Namespace: p.Namespace, Labels: labels}}
			if _, err := cs.CoreV1().ServiceAccounts(p.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("namespace %s: %w", p.Namespace, err)
			}
		}
	}
	return nil
}
