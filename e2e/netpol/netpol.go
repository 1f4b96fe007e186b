// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package netpol reads NetworkPolicy objects the way a network plugin would
// enforce them, for clusters where nothing enforces them (simulated nodes):
// checks can then say what the policies allow, not only that they exist.
package netpol

import (
	"fmt"
	"net/netip"

	networkingv1 "k8s.io/api/networking/v1"
)

// EgressTo lists every way pods of one namespace could send traffic to
// addr under policies (that namespace's NetworkPolicies), on any port; an
// empty list means no pod can. It is conservative: a pod is assumed
// unisolated unless a policy selecting every pod isolates its egress, and a
// rule counts when it allows addr to any pod it selects.
func EgressTo(policies []networkingv1.NetworkPolicy, addr netip.Addr) []string {
	var paths []string
	isolatedAll := false
	for _, np := range policies {
		if !hasEgress(&np) {
			continue
		}
		sel := np.Spec.PodSelector
		isolatedAll = isolatedAll || len(sel.MatchLabels)+len(sel.MatchExpressions) == 0
		for i, rule := range np.Spec.Egress {
			if why, ok := allows(rule, addr); ok {
				paths = append(paths, fmt.Sprintf("NetworkPolicy %s/%s spec.egress[%d] allows it (%s)", np.Namespace, np.Name, i, why))
			}
		}
	}
	if !isolatedAll {
		paths = append([]string{"no NetworkPolicy isolates the egress of every pod, so a pod no policy selects may reach it"}, paths...)
	}
	return paths
}

// hasEgress: policyTypes, or when unset, Egress if the policy has egress
// rules (the API's defaulting).
func hasEgress(np *networkingv1.NetworkPolicy) bool {
	if len(np.Spec.PolicyTypes) == 0 {
		return len(np.Spec.Egress) > 0
	}
	for _, t := range np.Spec.PolicyTypes {
		if t == networkingv1.PolicyTypeEgress {
			return true
		}
	}
	return false
}

func allows(rule networkingv1.NetworkPolicyEgressRule, addr netip.Addr) (string, bool) {
	if len(rule.To) == 0 {
		return "no to: every destination", true
	}
	for _, peer := range rule.To {
		// Pod and namespace selectors pick pods; addr is not a pod.
		if peer.IPBlock == nil {
			continue
		}
		cidr, err := netip.ParsePrefix(peer.IPBlock.CIDR)
		if err != nil || !cidr.Contains(addr) {
			continue
		}
		excepted := false
		for _, e := range peer.IPBlock.Except {
			if ex, err := netip.ParsePrefix(e); err == nil && ex.Contains(addr) {
				excepted = true
			}
		}
		if !excepted {
			return "ipBlock " + peer.IPBlock.CIDR + " without an except for " + addr.String(), true
		}
	}
	return "", false
}
