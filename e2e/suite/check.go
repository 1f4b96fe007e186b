// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/workload"
)

type namespaceKey struct{}

// Feature starts the feature for a check with a namespace of its own
// (Namespace(ctx)) and a teardown that removes every pod the check made,
// in any namespace, and waits until they are gone so the next check finds
// the pools empty; the namespace goes too unless the cluster goes with
// the run.
func Feature(c checks.Check) *features.FeatureBuilder {
	return c.Feature().
		Setup(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := From(ctx)
			b := make([]byte, 3)
			_, _ = rand.Read(b)
			name := strings.NewReplacer(".", "-").Replace(c.ID) + "-" + hex.EncodeToString(b)
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{workload.LabelCheck: c.ID}}}
			harness.Own(&ns.ObjectMeta)
			if _, err := r.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating the check's namespace: %v", err)
			}
			if err := r.EnsureServiceAccounts(ctx); err != nil {
				t.Fatalf("creating the check pods' service account: %v", err)
			}
			return context.WithValue(ctx, namespaceKey{}, name)
		}).
		Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := From(ctx)
			sel := labels.Set{workload.LabelCheck: c.ID}.String()
			cleaned := true
			if err := expect.DeletePods(ctx, r.Client, sel); err != nil {
				t.Errorf("cleanup: %v", err)
				cleaned = false
			}
			// Claim templates a check made in tenant namespaces (its pods'
			// claims go with the pods).
			if tpls, err := r.Client.ResourceV1().ResourceClaimTemplates("").List(ctx, metav1.ListOptions{LabelSelector: sel}); err == nil {
				for _, tpl := range tpls.Items {
					_ = r.Client.ResourceV1().ResourceClaimTemplates(tpl.Namespace).Delete(ctx, tpl.Name, metav1.DeleteOptions{})
				}
			}
			// Its pods are gone; a cluster that goes with the run takes the
			// namespace with it, and the namespace controller's sweep of
			// every resource type in it is work no verdict needs. Pods the
			// cleanup could not see gone still go with their namespace.
			if ns, ok := ctx.Value(namespaceKey{}).(string); ok && (!r.Disposable || !cleaned) {
				_ = r.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
			}
			return ctx
		})
}

// Namespace returns the check's own namespace.
func Namespace(ctx context.Context) string {
	ns, _ := ctx.Value(namespaceKey{}).(string)
	return ns
}

// NamespaceFor returns where a check's pod for the pool goes: the trust
// domain's namespace when the pool is split, else the check's own.
func NamespaceFor(ctx context.Context, p fleet.Pool) (string, *fleet.TrustDomain, error) {
	if len(p.TrustDomains) == 0 {
		return Namespace(ctx), nil, nil
	}
	d := p.TrustDomains[0]
	ns, err := From(ctx).TrustNamespace(ctx, d)
	return ns, &d, err
}

// WellFormedPod is a pod that follows the whole contract for pool p: its
// selector and tolerations, RuntimeClass nvidia, one unit of the pool's
// designed resource, in the right namespace for its trust domain.
func WellFormedPod(ctx context.Context, r *harness.Run, check string, p fleet.Pool, name string) (*corev1.Pod, error) {
	res, err := r.IntendedResource(p)
	if err != nil {
		return nil, err
	}
	ns, domain, err := NamespaceFor(ctx, p)
	if err != nil {
		return nil, err
	}
	return workload.New(check, ns, name).ForPool(p, domain).GPU(res, 1).Pod, nil
}

// Allocatable returns a node's allocatable count of an extended resource.
func Allocatable(n *corev1.Node, resource string) int64 {
	q, ok := n.Status.Allocatable[corev1.ResourceName(resource)]
	if !ok {
		return 0
	}
	return q.Value()
}

// Resources says a set of resource counts in words, as a failure shows
// them: "nvidia.com/gpu 8, nvidia.com/mig-1g.5gb 56", or "no GPU resource".
func Resources(counts map[string]int64) string {
	if len(counts) == 0 {
		return "no GPU resource"
	}
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}

// AutoscaledPod is the pod a tenant makes for count GPUs of an autoscaled
// pool, in namespace ns: one asking res, or on a pool served through DRA
// one claiming count devices of the pool's first DeviceClass from a
// ResourceClaimTemplate this creates, owned by the run. Karpenter plans
// claims on the devices an instance type lists, but a node it makes for
// the resource a DeviceClass maps never initializes (autoscaler-facts
// §10): tenants of an autoscaled DRA pool claim.
func AutoscaledPod(ctx context.Context, r *harness.Run, check string, p fleet.Pool, domain *fleet.TrustDomain, ns, name, res string, count int64) (*corev1.Pod, error) {
	pod := workload.New(check, ns, name).ForPool(p, domain)
	if p.DRA == nil {
		return pod.GPU(res, count).Pod, nil
	}
	if len(p.DRA.DeviceClasses) == 0 {
		return nil, fmt.Errorf("pool %s is served through DRA but names no DeviceClass its tenants claim", p.Name)
	}
	tmpl := workload.ClaimTemplate(check, ns, name, p.DRA.DeviceClasses[0], count)
	harness.Own(&tmpl.ObjectMeta)
	if _, err := r.Client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating ResourceClaimTemplate %s/%s: %w", ns, name, err)
	}
	return pod.RuntimeClass(workload.RuntimeClass).ClaimFromTemplate("gpu", tmpl.Name).Pod, nil
}

// Asks says what AutoscaledPod's pod asks: "8 nvidia.com/gpu", "a claim
// of 8 devices of DeviceClass h100.gpu.nvidia.com".
func Asks(p fleet.Pool, res string, count int64) string {
	if p.DRA == nil || len(p.DRA.DeviceClasses) == 0 {
		return fmt.Sprintf("%d %s", count, res)
	}
	return fmt.Sprintf("a claim of %d devices of DeviceClass %s", count, p.DRA.DeviceClasses[0])
}
