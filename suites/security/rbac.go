// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package security

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/workload"
)

// subject is an identity whose RBAC the check asks the apiserver about.
type subject struct {
	what   string
	user   string
	groups []string
	// ns is the tenant namespace of a service account ("" for others):
	// exec in its own namespace is its own business.
	ns string
}

// access is one thing no such subject may do.
type access struct {
	what string
	attr authorizationv1.ResourceAttributes
}

// forbidden is what no anonymous, unauthenticated, merely authenticated or
// tenant subject may do: cluster-wide write, node proxy, and what would
// make it the GPU Operator (its namespace's pods, tokens and secrets,
// impersonation). pods/exec is added per namespace.
func forbidden() []access {
	var out []access
	write := func(group, resource string, verbs ...string) {
		for _, v := range verbs {
			out = append(out, access{"cluster-wide write", authorizationv1.ResourceAttributes{Verb: v, Group: group, Resource: resource}})
		}
	}
	write(rbacv1.GroupName, "clusterrolebindings", "create", "update", "delete")
	write(rbacv1.GroupName, "clusterroles", "create", "update", "escalate", "bind")
	write(rbacv1.GroupName, "rolebindings", "create")
	write("", "nodes", "update", "patch", "delete")
	write("", "namespaces", "update", "delete")
	write("", "pods", "create", "delete")
	write("admissionregistration.k8s.io", "validatingadmissionpolicies", "update", "delete")
	write("admissionregistration.k8s.io", "validatingadmissionpolicybindings", "update", "delete")
	write("nvidia.com", "clusterpolicies", "update", "delete")
	for _, v := range []string{"get", "create"} {
		out = append(out, access{"node proxy", authorizationv1.ResourceAttributes{Verb: v, Resource: "nodes", Subresource: "proxy"}})
	}
	operator := func(verb, resource, sub string) {
		out = append(out, access{"the GPU Operator's service accounts' permissions", authorizationv1.ResourceAttributes{Namespace: operatorNamespace, Verb: verb, Resource: resource, Subresource: sub}})
	}
	operator("create", "pods", "")
	operator("create", "serviceaccounts", "token")
	operator("get", "secrets", "")
	out = append(out, access{"the GPU Operator's service accounts' permissions", authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts"}})
	return out
}

// subjects are anonymous and authenticated users and each tenant
// namespace's service accounts: its default and the one its GPU pods run
// as.
func subjects(tenantNS []string) []subject {
	out := []subject{
		{what: "an anonymous request", user: "system:anonymous", groups: []string{"system:unauthenticated"}},
		{what: "any authenticated user", user: "gpupool-any-user", groups: []string{"system:authenticated"}},
	}
	for _, ns := range tenantNS {
		for _, sa := range []string{"default", workload.ServiceAccount} {
			out = append(out, subject{what: "tenant service account " + ns + "/" + sa, ns: ns,
				user:   "system:serviceaccount:" + ns + ":" + sa,
				groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}})
		}
	}
	return out
}

func TestRBACLeastPrivilege(t *testing.T) {
	c := checks.RBACLeastPrivilege
	f := suite.Feature(c).
		Assess("the apiserver's authorizer allows no anonymous, authenticated or tenant subject cluster-wide write, node proxy, another tenant's pods exec or the GPU Operator's identity", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			logGrants(t, r)
			tenantNS, err := r.TenantNamespaces(ctx)
			if err != nil {
				t.Fatal(err)
			}
			gpuNS := append([]string{operatorNamespace}, tenantNS...)
			asked := 0
			for _, s := range subjects(tenantNS) {
				tries := forbidden()
				for _, ns := range gpuNS {
					if ns != s.ns {
						tries = append(tries, access{"pods/exec in GPU namespace " + ns, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "exec"}})
					}
				}
				// One failure per subject: what it may do, and the
				// bindings the authorizer names for it, each once.
				var may, why []string
				for _, a := range tries {
					allowed, reason, err := allows(ctx, r, s, a.attr)
					if err != nil {
						t.Fatal(err)
					}
					asked++
					if allowed {
						may = append(may, a.what+": "+describe(a.attr))
						if !slices.Contains(why, reason) {
							why = append(why, reason)
						}
					}
				}
				if len(may) > 0 {
					t.Errorf("expected %s to be denied all of it, but it may do %d of the %d things tried:\n  %s\n%s",
						s.what, len(may), len(tries), strings.Join(may, "\n  "), strings.Join(why, "\n"))
				}
			}
			t.Logf("%d SubjectAccessReviews asked, for %d subjects", asked, len(subjects(tenantNS)))
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// allows asks the apiserver's authorizer (a SubjectAccessReview) whether
// s may do attr, and why.
func allows(ctx context.Context, r *harness.Run, s subject, attr authorizationv1.ResourceAttributes) (bool, string, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: s.user, Groups: s.groups, ResourceAttributes: &attr}}
	got, err := r.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("asking the authorizer about %s: %w", s.what, err)
	}
	return got.Status.Allowed, got.Status.Reason, nil
}

func describe(a authorizationv1.ResourceAttributes) string {
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	if a.Group != "" {
		res += "." + a.Group
	}
	where := "cluster-wide"
	if a.Namespace != "" {
		where = "in namespace " + a.Namespace
	}
	return fmt.Sprintf("%s %s %s", a.Verb, res, where)
}

// logGrants lists the candidate's RBAC bindings, as the report shows them:
// who is granted which role.
func logGrants(t *testing.T, r *harness.Run) {
	var lines []string
	for _, o := range r.Candidate.Objects {
		kind := o.GetKind()
		if o.GetAPIVersion() != rbacv1.SchemeGroupVersion.String() || (kind != "ClusterRoleBinding" && kind != "RoleBinding") {
			continue
		}
		var b rbacv1.RoleBinding // the two kinds share their fields
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b); err != nil {
			t.Errorf("%s: %v", o.Where(), err)
			continue
		}
		var who []string
		for _, s := range b.Subjects {
			n := s.Kind + " " + s.Name
			if s.Namespace != "" {
				n = s.Kind + " " + s.Namespace + "/" + s.Name
			}
			who = append(who, n)
		}
		where := "cluster-wide"
		if b.Namespace != "" {
			where = "in " + b.Namespace
		}
		lines = append(lines, fmt.Sprintf("%s %s grants %s %s %s to %s", kind, b.Name, b.RoleRef.Kind, b.RoleRef.Name, where, strings.Join(who, ", ")))
	}
	slices.Sort(lines)
	if len(lines) == 0 {
		t.Log("the candidate grants no RBAC bindings")
		return
	}
	t.Logf("the candidate's RBAC bindings:\n%s", strings.Join(lines, "\n"))
}
