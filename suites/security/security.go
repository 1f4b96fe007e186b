// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package security

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/netpol"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/workload"
)

// operatorNamespace is where the GPU Operator's privileged operands run.
const operatorNamespace = "gpu-operator"

func tenants(ctx context.Context, t *testing.T, r *harness.Run) []string {
	t.Helper()
	ns, err := r.TenantNamespaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) > 0 {
		return ns
	}
	// Skip only when the fleet itself has no tenants; a candidate whose
	// namespaces belong to no trust domain is a failure, not a skip.
	for _, p := range r.Fleet.Spec.Pools {
		if len(p.TrustDomains) > 0 {
			t.Fatalf("pool %s has trust domains, but no namespace of the candidate belongs to any of them", p.Name)
		}
	}
	t.Skip("the fleet has no trust domains, so no tenant namespaces to check")
	return nil
}

func TestTenantPodSecurityRestricted(t *testing.T) {
	c := checks.TenantPodSecurityRestricted
	f := suite.Feature(c).
		Assess("in every tenant namespace a pod that is not restricted-compliant is denied by Pod Security", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			for _, ns := range tenants(ctx, t, r) {
				pod := workload.New(c.ID, ns, "not-restricted").Unrestricted()
				if err := expect.Denied(ctx, r.Client, pod.Pod, "violates PodSecurity \"restricted"); err != nil {
					t.Errorf("namespace %s: %v", ns, err)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestPrivilegedOnlyInGPUOperator(t *testing.T) {
	c := checks.PrivilegedOnlyInGPUOperator
	f := suite.Feature(c).
		Assess("a privileged hostPID pod is denied in an ordinary namespace and in every tenant namespace", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			nss, err := r.TenantNamespaces(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// The check's own namespace always; tenant namespaces when there are any.
			for _, ns := range append([]string{suite.Namespace(ctx)}, nss...) {
				pod := workload.New(c.ID, ns, "privileged").Privileged()
				if err := expect.Denied(ctx, r.Client, pod.Pod, ""); err != nil {
					t.Errorf("namespace %s: %v", ns, err)
				}
			}
			return ctx
		}).
		Assess("the same pod is admitted in the gpu-operator namespace", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			pod := workload.New(c.ID, operatorNamespace, "privileged-operand").Privileged()
			if err := expect.WouldBeAdmitted(ctx, r.Client, pod.Pod); err != nil {
				t.Error(err)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestDefaultDenyNetworkPolicyObjects(t *testing.T) {
	c := checks.DefaultDenyNetworkPolicyObjects
	f := suite.Feature(c).
		Assess("every tenant namespace has a NetworkPolicy that selects all pods and denies all ingress and egress", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			for ns, policies := range tenantNetworkPolicies(ctx, t, r) {
				var names []string
				found := false
				for _, np := range policies {
					names = append(names, np.Name)
					found = found || defaultDeny(&np)
				}
				if !found {
					t.Errorf("expected a default-deny NetworkPolicy in tenant namespace %s, but it has none (NetworkPolicies: %v)", ns, names)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// metadataEndpoints serve the node's cloud identity to whoever asks:
// 169.254.169.254 on AWS, GCP, Azure and OpenStack, fd00:ec2::254 on AWS
// over IPv6.
var metadataEndpoints = []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd00:ec2::254")}

func TestNodeIdentityUnreachableObjects(t *testing.T) {
	c := checks.NodeIdentityUnreachableObjects
	f := suite.Feature(c).
		Assess("in every namespace that shares GPU nodes, the NetworkPolicies allow no egress to the instance metadata endpoint", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			for ns, policies := range tenantNetworkPolicies(ctx, t, r) {
				for _, addr := range metadataEndpoints {
					if paths := netpol.EgressTo(policies, addr); len(paths) > 0 {
						t.Errorf("expected no pod of tenant namespace %s to reach the metadata endpoint %s, but: %s", ns, addr, strings.Join(paths, "; "))
					}
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// tenantNetworkPolicies returns each tenant namespace's NetworkPolicies.
func tenantNetworkPolicies(ctx context.Context, t *testing.T, r *harness.Run) map[string][]networkingv1.NetworkPolicy {
	t.Helper()
	out := map[string][]networkingv1.NetworkPolicy{}
	for _, ns := range tenants(ctx, t, r) {
		list, err := r.Client.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[ns] = list.Items
	}
	return out
}

// defaultDeny: selects every pod, covers both directions, allows nothing.
func defaultDeny(np *networkingv1.NetworkPolicy) bool {
	if len(np.Spec.PodSelector.MatchLabels)+len(np.Spec.PodSelector.MatchExpressions) > 0 {
		return false
	}
	types := map[networkingv1.PolicyType]bool{}
	for _, pt := range np.Spec.PolicyTypes {
		types[pt] = true
	}
	return types[networkingv1.PolicyTypeIngress] && types[networkingv1.PolicyTypeEgress] && len(np.Spec.Ingress) == 0 && len(np.Spec.Egress) == 0
}

func TestGPUImagesPinned(t *testing.T) {
	c := checks.GPUImagesPinned
	f := suite.Feature(c).
		Assess("a GPU pod whose image is a tag is denied; pinned by digest it is admitted", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			p := r.FirstPool(t, fleet.ModeExclusive)
			pod, err := suite.WellFormedPod(ctx, r, c.ID, p, "tagged")
			if err != nil {
				t.Fatal(err)
			}
			tagged := workload.Pod{Pod: pod}.Image(strings.SplitN(workload.Image, "@", 2)[0])
			if err := expect.Denied(ctx, r.Client, tagged.Pod, ""); err != nil {
				t.Error(err)
			}
			pinned, err := suite.WellFormedPod(ctx, r, c.ID, p, "pinned")
			if err != nil {
				t.Fatal(err)
			}
			if err := expect.WouldBeAdmitted(ctx, r.Client, pinned); err != nil {
				t.Error(err)
			}
			return ctx
		}).
		Assess("a pinned GPU pod whose image its tenant changes to a tag after admission is refused", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			p := r.FirstPool(t, fleet.ModeExclusive)
			pod, err := suite.WellFormedPod(ctx, r, c.ID, p, "retagged")
			if err != nil {
				t.Fatal(err)
			}
			created, err := expect.Admitted(ctx, r.Client, pod)
			if err != nil {
				t.Fatal(err)
			}
			pods := r.Client.CoreV1().Pods(created.Namespace)
			// A fresh read per try: the simulated kubelet writes the pod too.
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				got, err := pods.Get(ctx, created.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				got.Spec.Containers[0].Image = strings.SplitN(workload.Image, "@", 2)[0]
				_, err = pods.Update(ctx, got, metav1.UpdateOptions{})
				return err
			})
			switch {
			case err == nil:
				t.Errorf("expected the image update of GPU pod %s/%s to a tag (%s) to be refused, but it was admitted: the pod now runs whatever the tag moves to", created.Namespace, created.Name, strings.SplitN(workload.Image, "@", 2)[0])
			case !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err):
				t.Fatalf("updating pod %s/%s: %v", created.Namespace, created.Name, err)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestGPUPodsOwnServiceAccount(t *testing.T) {
	c := checks.GPUPodsOwnServiceAccount
	f := suite.Feature(c).
		Assess("a GPU pod under the default service account is denied; under its own it is admitted", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			p := r.FirstPool(t, fleet.ModeExclusive)
			pod, err := suite.WellFormedPod(ctx, r, c.ID, p, "default-identity")
			if err != nil {
				t.Fatal(err)
			}
			if err := expect.Denied(ctx, r.Client, workload.Pod{Pod: pod}.ServiceAccountName("default").Pod, ""); err != nil {
				t.Error(err)
			}
			own, err := suite.WellFormedPod(ctx, r, c.ID, p, "own-identity")
			if err != nil {
				t.Fatal(err)
			}
			if err := expect.WouldBeAdmitted(ctx, r.Client, own); err != nil {
				t.Error(err)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
