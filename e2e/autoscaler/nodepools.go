// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaler

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/utils/ptr"

	"github.com/gpupool/gpupool/e2e/explain"
)

// NodePoolResource is Karpenter's NodePool API.
var NodePoolResource = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "nodepools"}

// nodePool is the part of a Karpenter NodePool (karpenter.sh/v1) an
// explanation reads.
type nodePool struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		Limits   corev1.ResourceList `json:"limits"`
		Template struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				Taints       []corev1.Taint `json:"taints"`
				Requirements []struct {
					Key      string   `json:"key"`
					Operator string   `json:"operator"`
					Values   []string `json:"values"`
				} `json:"requirements"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
	Status struct {
		Resources corev1.ResourceList `json:"resources"`
	} `json:"status"`
}

// NodeOverlayResource is Karpenter's NodeOverlay API (alpha).
var NodeOverlayResource = schema.GroupVersionResource{Group: Group, Version: "v1alpha1", Resource: "nodeoverlays"}

// OverlayGate is what a reader knows of Karpenter's NodeOverlay feature
// gate (autoscaler-facts §8.6).
type OverlayGate int

const (
	// OverlayGateUnknown: a Karpenter gpupool did not start; an overlay's
	// ValidationSucceeded condition is the sign it applies (§8.8).
	OverlayGateUnknown OverlayGate = iota
	OverlayGateOn
	OverlayGateOff
)

// GateOf is the NodeOverlay gate of the feature gates Karpenter was
// started with (off unless named: its default).
func GateOf(gates map[string]bool) OverlayGate {
	if gates[gateNodeOverlay] {
		return OverlayGateOn
	}
	return OverlayGateOff
}

const gateNodeOverlay = "NodeOverlay"

// nodeOverlay is the part of a NodeOverlay explain reads.
type nodeOverlay struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
		Capacity     corev1.ResourceList              `json:"capacity"`
		Weight       *int32                           `json:"weight"`
	} `json:"spec"`
	Status struct {
		Conditions []metav1.Condition `json:"conditions"`
	} `json:"status"`
}

// NodePools reads the cluster's Karpenter NodePools as explain sees them,
// with the machines each may buy from types (the simulated cloud's
// instance types): those its requirements on the instance type, capacity
// type and zone allow, with the capacity of the NodeOverlays Karpenter
// applies to them. None where Karpenter's API is not served.
func NodePools(ctx context.Context, dyn dynamic.Interface, types []InstanceType, gate OverlayGate) ([]explain.NodePool, error) {
	list, err := dyn.Resource(NodePoolResource).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing NodePools: %w", err)
	}
	var overlays []nodeOverlay
	ol, err := dyn.Resource(NodeOverlayResource).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
	case err != nil:
		return nil, fmt.Errorf("listing NodeOverlays: %w", err)
	default:
		for _, item := range ol.Items {
			var o nodeOverlay
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &o); err != nil {
				return nil, fmt.Errorf("NodeOverlay %s: %w", item.GetName(), err)
			}
			overlays = append(overlays, o)
		}
	}
	// Applied lowest weight first, so a higher weight wins (the API's doc
	// of weight). Two of one weight setting one machine's capacity are a
	// conflict Karpenter writes in their status (§8.8), which notApplied
	// reads.
	sort.SliceStable(overlays, func(i, j int) bool {
		wi, wj := ptr.Deref(overlays[i].Spec.Weight, 0), ptr.Deref(overlays[j].Spec.Weight, 0)
		if wi != wj {
			return wi < wj
		}
		return overlays[i].Metadata.Name < overlays[j].Metadata.Name
	})
	var out []explain.NodePool
	for _, item := range list.Items {
		np, err := ExplainedNodePool(&item, types)
		if err != nil {
			return nil, err
		}
		overlay(&np, item.Object, overlays, gate)
		out = append(out, np)
	}
	return out, nil
}

// overlay adds to each machine np may buy the capacity of the
// NodeOverlays that select it for np (autoscaler-facts §8.7), where
// Karpenter applies them, and names the others with why not.
func overlay(np *explain.NodePool, obj map[string]any, overlays []nodeOverlay, gate OverlayGate) {
	templateLabels, _, _ := unstructured.NestedStringMap(obj, "spec", "template", "metadata", "labels")
	for i := range np.Offers {
		o := &np.Offers[i]
		for _, ov := range overlays {
			if len(ov.Spec.Capacity) == 0 || !selects(ov.Spec.Requirements, np.Name, templateLabels, o.InstanceType) {
				continue
			}
			if why := notApplied(ov, gate); why != "" {
				np.Unapplied = append(np.Unapplied, explain.Overlay{Name: ov.Metadata.Name, InstanceType: o.InstanceType, Capacity: ov.Spec.Capacity, Why: why})
				continue
			}
			for name, q := range ov.Spec.Capacity {
				o.Resources[name] = q
			}
			o.Overlays = append(o.Overlays, ov.Metadata.Name)
		}
	}
}

// notApplied says why Karpenter does not apply the overlay ("" when it
// does, or may yet: an overlay it has not evaluated yet under a gate
// known on is taken as applied, so a verdict of "no node, ever" is never
// given early).
func notApplied(ov nodeOverlay, gate OverlayGate) string {
	if gate == OverlayGateOff {
		return "Karpenter runs with its NodeOverlay feature gate off, its default, and applies no NodeOverlay (autoscaler-facts §8.6)"
	}
	for _, c := range ov.Status.Conditions {
		if c.Type != "ValidationSucceeded" {
			continue
		}
		if c.Status == metav1.ConditionFalse {
			return fmt.Sprintf("Karpenter refused it (%s: %s; autoscaler-facts §8.8)", c.Reason, c.Message)
		}
		return ""
	}
	if gate == OverlayGateUnknown {
		return "Karpenter has not evaluated it (no ValidationSucceeded condition): it applies NodeOverlays only with its NodeOverlay feature gate on (autoscaler-facts §8.6, §8.8)"
	}
	return ""
}

// selects reports whether an overlay's requirements select the instance
// type for the NodePool: matched, as a node selector, against the labels
// Karpenter matches them with that explain models (the NodePool's name,
// its template's labels, the instance type's name). A requirement on
// another label is left out, so an overlay explain cannot judge counts as
// selecting. Overlays add extended resources (§8.5), so that errs towards
// a machine holding more: explain may then miss why a pool cannot scale,
// but does not call a pool unable to scale on that account.
func selects(reqs []corev1.NodeSelectorRequirement, nodePool string, templateLabels map[string]string, instanceType string) bool {
	labels := map[string]string{LabelNodePool: nodePool, LabelInstanceType: instanceType}
	for k, v := range templateLabels {
		labels[k] = v
	}
	sel := selectorOn(reqs, func(key string) bool {
		_, ok := labels[key]
		return ok
	})
	return sel == nil || sel.Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}})
}

// selectorOn is a node selector of the requirements on the keys explain
// models (modelled), or nil when there are none or it cannot parse them:
// the rest are left to Karpenter, so explain's model is narrower, not
// wrong.
func selectorOn(reqs []corev1.NodeSelectorRequirement, modelled func(key string) bool) *nodeaffinity.NodeSelector {
	var known []corev1.NodeSelectorRequirement
	for _, r := range reqs {
		if modelled(r.Key) {
			known = append(known, r)
		}
	}
	if len(known) == 0 {
		return nil
	}
	sel, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: known}}})
	if err != nil {
		return nil
	}
	return sel
}

// OverlaysAdding names the NodeOverlays among objs (a candidate's
// objects) that give instanceType resource res for the NodePool np, as
// Karpenter would apply them with its gate on (autoscaler-facts §8.7).
func OverlaysAdding(objs []*unstructured.Unstructured, np *unstructured.Unstructured, instanceType, res string) []string {
	if np == nil {
		return nil // no NodePool: reviewed on its own
	}
	templateLabels, _, _ := unstructured.NestedStringMap(np.Object, "spec", "template", "metadata", "labels")
	var out []string
	for _, u := range objs {
		if u.GroupVersionKind().Group != Group || u.GetKind() != "NodeOverlay" {
			continue
		}
		var ov nodeOverlay
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ov) != nil {
			continue
		}
		if _, adds := ov.Spec.Capacity[corev1.ResourceName(res)]; adds && selects(ov.Spec.Requirements, np.GetName(), templateLabels, instanceType) {
			out = append(out, u.GetName())
		}
	}
	return out
}

// ExplainedNodePool is one NodePool as explain sees it.
func ExplainedNodePool(u *unstructured.Unstructured, types []InstanceType) (explain.NodePool, error) {
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return explain.NodePool{}, err
	}
	var np nodePool
	if err := json.Unmarshal(raw, &np); err != nil {
		return explain.NodePool{}, fmt.Errorf("NodePool %s: %w", u.GetName(), err)
	}
	out := explain.NodePool{Name: np.Metadata.Name, Labels: map[string]string{}, Taints: np.Spec.Template.Spec.Taints,
		Limits: np.Spec.Limits, InUse: np.Status.Resources}
	for k, v := range np.Spec.Template.Metadata.Labels {
		out.Labels[k] = v
	}
	var reqs []corev1.NodeSelectorRequirement
	for _, r := range np.Spec.Template.Spec.Requirements {
		if r.Operator == "In" && len(r.Values) == 1 {
			out.Labels[r.Key] = r.Values[0] // a single-value In is a label of its nodes (autoscaler-facts §4.3)
		}
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOperator(r.Operator), Values: r.Values})
	}
	for _, it := range types {
		if !it.meets(reqs) {
			out.Unmet = append(out.Unmet, it.Name)
			continue
		}
		res := corev1.ResourceList{}
		for name, v := range it.Resources {
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return explain.NodePool{}, fmt.Errorf("instance type %s: %s: %w", it.Name, name, err)
			}
			res[corev1.ResourceName(name)] = q
		}
		out.Offers = append(out.Offers, explain.Offer{InstanceType: it.Name, Resources: res, Templates: it.ResourceSliceTemplates})
	}
	return out, nil
}

// meets reports whether a NodePool with these requirements may buy the
// instance type: a node of it, with one of its offerings' capacity type
// and zone (autoscaler-facts §3.2, §4.3), matches the requirements on those
// three labels, as a node selector matches. Requirements on other labels
// are left to Karpenter: explain's model is narrower, not wrong, and so is
// a requirement the selector cannot parse.
func (it InstanceType) meets(reqs []corev1.NodeSelectorRequirement) bool {
	sel := selectorOn(reqs, func(key string) bool {
		return key == LabelInstanceType || key == LabelCapacityType || key == LabelZone
	})
	if sel == nil {
		return true
	}
	for _, o := range it.Offerings {
		labels := map[string]string{LabelInstanceType: it.Name}
		for _, key := range []string{LabelCapacityType, LabelZone} {
			if v := offered(o, key); v != "" {
				labels[key] = v
			}
		}
		if sel.Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}}) {
			return true
		}
	}
	return false
}

// offered is the single value an offering's requirement on key gives.
func offered(o Offering, key string) string {
	for _, r := range o.Requirements {
		if r.Key == key && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			return r.Values[0]
		}
	}
	return ""
}
