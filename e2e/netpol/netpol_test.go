// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package netpol

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var imds = netip.MustParseAddr("169.254.169.254")

func policy(name string, sel map[string]string, types []networkingv1.PolicyType, egress ...networkingv1.NetworkPolicyEgressRule) networkingv1.NetworkPolicy {
	return networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: name},
		Spec:       networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: sel}, PolicyTypes: types, Egress: egress},
	}
}

func to(cidr string, except ...string) networkingv1.NetworkPolicyEgressRule {
	return networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: cidr, Except: except}}}}
}

func TestEgressTo(t *testing.T) {
	egress := []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	both := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	denyAll := policy("default-deny", nil, both)
	for _, tc := range []struct {
		name     string
		policies []networkingv1.NetworkPolicy
		want     []string // substrings, one per path; empty: unreachable
	}{
		{"no policy: nothing is isolated", nil, []string{"no NetworkPolicy isolates"}},
		{"default deny", []networkingv1.NetworkPolicy{denyAll}, nil},
		{"ingress-only default deny does not isolate egress",
			[]networkingv1.NetworkPolicy{policy("ingress", nil, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress})}, []string{"no NetworkPolicy isolates"}},
		{"isolation by a labelled selector covers only some pods",
			[]networkingv1.NetworkPolicy{policy("gpu", map[string]string{"app": "x"}, egress)}, []string{"no NetworkPolicy isolates"}},
		{"internet egress with the metadata address excepted",
			[]networkingv1.NetworkPolicy{denyAll, policy("web", nil, egress, to("0.0.0.0/0", "169.254.169.254/32"))}, nil},
		{"the except may be wider than the address",
			[]networkingv1.NetworkPolicy{denyAll, policy("web", nil, egress, to("0.0.0.0/0", "10.0.0.0/8", "169.254.0.0/16"))}, nil},
		{"internet egress without the except",
			[]networkingv1.NetworkPolicy{denyAll, policy("web", nil, egress, to("0.0.0.0/0"))}, []string{"t/web spec.egress[0] allows it (ipBlock 0.0.0.0/0"}},
		{"a rule for some pods still counts",
			[]networkingv1.NetworkPolicy{denyAll, policy("web", map[string]string{"app": "x"}, egress, to("169.254.169.254/32"))}, []string{"t/web spec.egress[0]"}},
		{"a rule with no to allows every destination",
			[]networkingv1.NetworkPolicy{denyAll, policy("any", nil, egress, networkingv1.NetworkPolicyEgressRule{})}, []string{"no to: every destination"}},
		{"policyTypes unset: egress rules make it an egress policy",
			[]networkingv1.NetworkPolicy{denyAll, policy("web", nil, nil, to("169.254.0.0/16"))}, []string{"t/web spec.egress[0]"}},
		{"an ingress-only policy's egress rules are not enforced",
			[]networkingv1.NetworkPolicy{denyAll, policy("web", nil, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, to("0.0.0.0/0"))}, nil},
		{"pod selectors do not reach an address outside the cluster",
			[]networkingv1.NetworkPolicy{denyAll, policy("pods", nil, egress, networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}})}, nil},
		{"another block does not contain it",
			[]networkingv1.NetworkPolicy{denyAll, policy("store", nil, egress, to("10.20.0.0/16"))}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := EgressTo(tc.policies, imds)
			if assert.Len(t, got, len(tc.want), "%q", got) {
				for i, w := range tc.want {
					assert.Contains(t, got[i], w)
				}
			}
		})
	}
}
