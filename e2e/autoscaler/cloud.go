// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaler

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/upstream"
	"github.com/gpupool/gpupool/fakegpu"
)

// CRDs are Karpenter's and its KWOK provider's CustomResourceDefinitions,
// as the pinned release ships them (embedded, e2e/upstream), in install
// order.
func CRDs() ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, rel := range upstream.KarpenterCRDs {
		data, err := upstream.KarpenterFile(rel)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			return nil, fmt.Errorf("%s@%s/%s: %w", upstream.KarpenterModule, upstream.KarpenterVersion(), rel, err)
		}
		if u.GetKind() != "CustomResourceDefinition" {
			return nil, fmt.Errorf("%s@%s/%s: a %s, not a CustomResourceDefinition", upstream.KarpenterModule, upstream.KarpenterVersion(), rel, u.GetKind())
		}
		out = append(out, u)
	}
	return out, nil
}

// InstanceTypeFor is the machine a cloud sells for a pool's nodes, as its
// API describes one: CPU, memory, pods and physical GPUs, nothing a device
// plugin makes of them (no MIG profiles, no time-slice replicas:
// autoscaler-facts §3.3). Its name says the SKU and GPU count.
func InstanceTypeFor(p fleet.Pool) (InstanceType, error) {
	sku, ok := fakegpu.Catalog[p.SKU]
	if !ok {
		return InstanceType{}, fmt.Errorf("pool %s: SKU %q is not in the catalogue", p.Name, p.SKU)
	}
	if p.GPUsPerNode <= 0 {
		return InstanceType{}, fmt.Errorf("pool %s: gpusPerNode must be positive for an instance type, got %d", p.Name, p.GPUsPerNode)
	}
	name := fmt.Sprintf("sim-%s-x%d", sku.Key, p.GPUsPerNode)
	// The GPUs as NVIDIA's DRA driver would publish them, for pods that
	// claim devices; on a pool whose nodes run the device plugin instead
	// they are never published, as a cloud's description would not know.
	templates, err := fakegpu.DRATemplates(name, fakegpu.NodeInventory{SKU: sku, Count: p.GPUsPerNode})
	if err != nil {
		return InstanceType{}, fmt.Errorf("pool %s: %w", p.Name, err)
	}
	return InstanceType{
		Name: name,
		// One zone, on demand; a price per GPU, so a NodePool offered
		// several sizes prefers the smallest that fits, as a cloud's do.
		Offerings:        []Offering{OfferingIn("on-demand", "sim-zone-a", float64(p.GPUsPerNode))},
		Architecture:     "amd64",
		OperatingSystems: []string{"linux"},
		Resources: map[string]string{
			"cpu":            p.NodeCPU(),
			"memory":         p.NodeMemory(),
			"pods":           strconv.Itoa(p.NodeMaxPods()),
			"nvidia.com/gpu": strconv.Itoa(p.GPUsPerNode),
		},
		ResourceSliceTemplates: templates,
	}, nil
}

// Groups of Karpenter's API and its KWOK provider's.
const (
	Group     = "karpenter.sh"
	KWOKGroup = "karpenter.kwok.sh"
)

// Owns reports whether an object of the group is the autoscaler's to act
// on (a NodePool, a KWOKNodeClass): in a cluster a real Karpenter runs
// in, it would scale the real cloud.
func Owns(group string) bool { return group == Group || group == KWOKGroup }
