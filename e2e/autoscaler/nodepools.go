// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaler

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

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

// NodePools reads the cluster's Karpenter NodePools as explain sees them,
// with the machines each may buy from types (the simulated cloud's
// instance types): those its requirements on the instance type, capacity
// type and zone allow. None where Karpenter's API is not served.
func NodePools(ctx context.Context, dyn dynamic.Interface, types []InstanceType) ([]explain.NodePool, error) {
	list, err := dyn.Resource(NodePoolResource).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing NodePools: %w", err)
	}
	var out []explain.NodePool
	for _, item := range list.Items {
		np, err := ExplainedNodePool(&item, types)
		if err != nil {
			return nil, err
		}
		out = append(out, np)
	}
	return out, nil
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
		out.Offers = append(out.Offers, explain.Offer{InstanceType: it.Name, Resources: res})
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
	var own []corev1.NodeSelectorRequirement
	for _, r := range reqs {
		if r.Key == LabelInstanceType || r.Key == LabelCapacityType || r.Key == LabelZone {
			own = append(own, r)
		}
	}
	if len(own) == 0 {
		return true
	}
	sel, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: own}}})
	if err != nil {
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
