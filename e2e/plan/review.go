// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpupool/gpupool/e2e/autoscaler"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/upstream"
	"github.com/gpupool/gpupool/fakegpu"
)

// Review lists what a reviewer would point out in the plan before any
// check runs: each a cause that many checks would otherwise only show as
// their own failures, said in words. The real cluster accepts all of them.
//   - a ValidatingAdmissionPolicy no binding names is never enforced, and a
//     binding whose policy is not in the candidate enforces nothing;
//   - a pool whose nodes select a device-plugin config key the ConfigMap
//     lacks (or cannot load) advertises no GPU; a key no pool selects
//     configures nothing;
//   - a trust domain no namespace of the candidate belongs to has no
//     tenant whose pods may use it;
//   - an autoscaled pool whose NodePool the candidate lacks never gets a
//     node, and a NodePool no autoscaled pool names makes nodes no check
//     holds to a design;
//   - an autoscaled pool whose pods ask a resource its machine does not
//     list (a MIG profile, the renamed nvidia.com/gpu.shared) never
//     scales from zero: the autoscaler knows only what an instance type
//     lists (autoscaler-facts §3.3), unless a NodeOverlay adds it and
//     Karpenter runs with its NodeOverlay gate on (§8.5, §8.6);
//   - an autoscaled pool whose DRA driver publishes other devices than
//     the whole GPUs Karpenter plans claims on (§10).
func Review(pl *Plan) []string {
	var out []string
	out = append(out, reviewPolicies(pl)...)
	out = append(out, reviewDevicePluginKeys(pl)...)
	out = append(out, reviewTrustDomains(pl)...)
	out = append(out, reviewNodePools(pl)...)
	out = append(out, reviewScaleFromZero(pl)...)
	return out
}

func reviewScaleFromZero(pl *Plan) []string {
	var out []string
	var objects []*unstructured.Unstructured
	nodePools := map[string]*unstructured.Unstructured{}
	for _, o := range pl.Candidate.Objects {
		objects = append(objects, o.Unstructured)
		if o.GroupVersionKind().Group == autoscaler.Group && o.GetKind() == "NodePool" {
			nodePools[o.GetName()] = o.Unstructured
		}
	}
	var gates map[string]bool
	if a := pl.Candidate.Meta.Spec.Autoscaler; a != nil {
		gates = a.FeatureGates
	}
	gate := autoscaler.GateOf(gates)
	for _, p := range pl.Fleet.Autoscaled() {
		name := p.Name
		if len(p.TrustDomains) == 1 {
			name += " (trust domain " + p.TrustDomains[0].Name + ")"
		}
		if p.DRA != nil {
			// Karpenter fits claims to the devices the instance type
			// lists (autoscaler-facts §10), which the cloud describes as
			// the driver's defaults publish them (fakegpu.DRATemplates).
			if p.DRA.Mode != fakegpu.DRAWholeGPU || p.DRA.ConsumableShares != "" {
				out = append(out, fmt.Sprintf("fleet %s: autoscaled pool %s is served through DRA as %s, but Karpenter %s plans a pod's claims on the whole GPUs the cloud lists for its machine (driver defaults): it may make a node for claims the node's devices cannot satisfy, or none for claims they could",
					pl.Fleet.File, name, draSetup(p.DRA), upstream.KarpenterVersion()))
			}
			continue
		}
		res, _, err := pl.Intended(p.Pool)
		if err != nil {
			continue // the checks say what the pool's design lacks
		}
		it, err := autoscaler.InstanceTypeFor(p.Pool)
		if err != nil {
			continue
		}
		if _, listed := it.Resources[res]; listed {
			continue
		}
		overlays := autoscaler.OverlaysAdding(objects, nodePools[p.NodePool], it.Name, res)
		if len(overlays) > 0 && gate == autoscaler.OverlayGateOn {
			continue
		}
		if len(overlays) > 0 {
			out = append(out, fmt.Sprintf("fleet %s: autoscaled pool %s's pods ask %s, which NodeOverlay %s adds to its machine %s, but the candidate runs Karpenter with its NodeOverlay feature gate off, so no overlay applies (spec.autoscaler.featureGates; autoscaler-facts §8.6) and a Pending pod of the pool never makes a node",
				pl.Fleet.File, name, res, strings.Join(overlays, ", "), it.Name))
			continue
		}
		var lists []string
		for _, name := range slices.Sorted(maps.Keys(it.Resources)) {
			if strings.Contains(name, "/") {
				lists = append(lists, name+" "+it.Resources[name])
			}
		}
		out = append(out, fmt.Sprintf("fleet %s: autoscaled pool %s's pods ask %s, which its machine %s does not list (it lists %s): an autoscaler knows only what an instance type lists, so a Pending pod of the pool never makes a node (autoscaler-facts §3.3)",
			pl.Fleet.File, name, res, it.Name, strings.Join(lists, ", ")))
	}
	return out
}

func reviewNodePools(pl *Plan) []string {
	nodePools := map[string]string{} // name → where
	for _, o := range pl.Candidate.Objects {
		if o.GroupVersionKind().Group == autoscaler.Group && o.GetKind() == "NodePool" {
			nodePools[o.GetName()] = o.Where()
		}
	}
	var out []string
	named := map[string]bool{}
	for _, p := range pl.Fleet.Autoscaled() {
		named[p.NodePool] = true
		if _, ok := nodePools[p.NodePool]; !ok {
			out = append(out, fmt.Sprintf("fleet %s: autoscaled pool %s is scaled by NodePool %s, which the candidate lacks: its pods stay Pending, as no NodePool makes a node for them", pl.Fleet.File, p.Name, p.NodePool))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(nodePools)) {
		if !named[name] {
			out = append(out, fmt.Sprintf("%s: no autoscaled pool of fleet %s names NodePool %s: the nodes it makes are held to no pool's design", nodePools[name], pl.Fleet.File, name))
		}
	}
	return out
}

func reviewPolicies(pl *Plan) []string {
	policies := map[string]string{} // name → where
	bound := map[string]bool{}
	type binding struct{ policy, where string }
	var bindings []binding
	for _, o := range pl.Candidate.Objects {
		if o.GroupVersionKind().Group != "admissionregistration.k8s.io" {
			continue
		}
		switch o.GetKind() {
		case "ValidatingAdmissionPolicy":
			policies[o.GetName()] = o.Where()
		case "ValidatingAdmissionPolicyBinding":
			name, _, _ := unstructured.NestedString(o.Object, "spec", "policyName")
			bound[name] = true
			bindings = append(bindings, binding{name, o.Where()})
		}
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(policies)) {
		if !bound[name] {
			out = append(out, fmt.Sprintf("%s: no ValidatingAdmissionPolicyBinding names this policy: it is never enforced, and every pod it should deny is admitted", policies[name]))
		}
	}
	for _, b := range bindings {
		if _, ok := policies[b.policy]; !ok {
			out = append(out, fmt.Sprintf("%s: names policy %q, which the candidate does not hold: it enforces nothing", b.where, b.policy))
		}
	}
	return out
}

func reviewDevicePluginKeys(pl *Plan) []string {
	s := pl.Stack
	if s == nil || s.Policy == nil || (s.DevicePlugin == nil && s.DevicePluginBroken == nil) {
		return nil
	}
	var out []string
	selected := map[string]bool{s.Policy.DevicePluginDefault: true}
	seen := map[string]bool{}
	for _, spec := range fleet.NodeSpecs(pl.Fleet) {
		if seen[spec.Pool.Name] {
			continue
		}
		seen[spec.Pool.Name] = true
		n, err := spec.Node()
		if err != nil || n.Labels[fakegpu.LabelDeployDevicePlugin] == "false" {
			continue
		}
		key := n.Labels[fakegpu.LabelDevicePluginConfig]
		selected[key] = true
		if _, err := s.DevicePluginConfigFor(n.Labels); err != nil {
			out = append(out, fmt.Sprintf("pool %s: its nodes select device-plugin config %q (%s), and the device plugin will not start there (%v): the pool advertises no GPU, and every check that places a pod on it fails", spec.Pool.Name, key, fakegpu.LabelDevicePluginConfig, err))
		}
	}
	keys := append(slices.Collect(maps.Keys(s.DevicePlugin)), slices.Collect(maps.Keys(s.DevicePluginBroken))...)
	slices.Sort(keys)
	for _, k := range keys {
		if !selected[k] {
			out = append(out, fmt.Sprintf("ConfigMap %s data[%s]: no pool of fleet %s selects this key, nor is it spec.devicePlugin.config.default: it configures nothing here", s.Policy.DevicePluginConfig, k, pl.Fleet.Metadata.Name))
		}
	}
	return out
}

func reviewTrustDomains(pl *Plan) []string {
	var namespaces []labels.Set
	for _, o := range pl.Candidate.Objects {
		if o.GroupVersionKind().Group == "" && o.GetKind() == "Namespace" {
			namespaces = append(namespaces, labels.Set(o.GetLabels()))
		}
	}
	var out []string
	for _, p := range pl.Fleet.Spec.Pools {
		for _, d := range p.TrustDomains {
			sel := labels.SelectorFromSet(d.Labels)
			if !slices.ContainsFunc(namespaces, func(l labels.Set) bool { return sel.Matches(l) }) {
				out = append(out, fmt.Sprintf("pool %s, trust domain %s: no namespace of the candidate is labelled %s, so no tenant may use its nodes and the checks that need one fail", p.Name, d.Name, labels.Set(d.Labels)))
			}
		}
	}
	return out
}

// draSetup says a pool's DRA driver setup: "mode static-mig", "mode gpu
// with consumable shares 4".
func draSetup(d *fleet.DRA) string {
	if d.ConsumableShares == "" {
		return "mode " + d.Mode
	}
	return "mode " + d.Mode + " with consumable shares " + d.ConsumableShares
}
