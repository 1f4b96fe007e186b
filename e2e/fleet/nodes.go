// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fleet

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpupool/gpupool/fakegpu"
)

// Labels and annotations the harness puts on every node it creates.
const (
	LabelPool        = "gpupool.dev/pool"
	LabelTrustDomain = "gpupool.dev/trust-domain"
	LabelManagedBy   = "app.kubernetes.io/managed-by"
	ManagedBy        = "gpupool"

	// AnnotationKwokNode makes the kwok controller own the node.
	AnnotationKwokNode = "kwok.x-k8s.io/node"
)

// NodeSpec is one node to create, before the GPU stack adds its part.
type NodeSpec struct {
	Pool        Pool
	TrustDomain *TrustDomain
	Name        string
	// Images is the fleet's spec.images, as every GPU node's runtime
	// would read them (nil: none declared).
	Images fakegpu.ImageEnvs
}

// NodeSpecs expands the fleet's pools into one entry per node.
func NodeSpecs(f *Fleet) []NodeSpec {
	var out []NodeSpec
	images := f.ImageEnvs()
	for _, p := range f.Spec.Pools {
		domain := -1
		left := 0
		for i := 0; i < p.Nodes; i++ {
			spec := NodeSpec{Pool: p, Name: fmt.Sprintf("%s-%d", p.Name, i), Images: images}
			if len(p.TrustDomains) > 0 {
				for left == 0 {
					domain++
					left = p.TrustDomains[domain].Nodes
				}
				td := p.TrustDomains[domain]
				spec.TrustDomain = &td
				left--
			}
			out = append(out, spec)
		}
	}
	return out
}

// Node builds the Node object for spec: the hardware (as fakegpu's
// inventory annotations) and the labels and taints a platform team sets.
// What the GPUs advertise is the simulated GPU Operator's business: its
// controller fills in resources and GFD labels from the candidate's configs.
func (s NodeSpec) Node() (*corev1.Node, error) {
	p := s.Pool
	labels := map[string]string{
		"kubernetes.io/hostname": s.Name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
		"type":                   "kwok",
		LabelPool:                p.Name,
		LabelManagedBy:           ManagedBy,
	}
	for k, v := range p.Labels {
		labels[k] = v
	}
	taints := append([]corev1.Taint(nil), p.Taints...)
	if td := s.TrustDomain; td != nil {
		labels[LabelTrustDomain] = td.Name
		for k, v := range td.Labels {
			labels[k] = v
		}
		taints = append(taints, td.Taints...)
	}
	annotations := map[string]string{AnnotationKwokNode: "fake"}
	if p.GPU() {
		annotations[fakegpu.AnnotationSKU] = p.SKU
		annotations[fakegpu.AnnotationGPUs] = strconv.Itoa(p.GPUsPerNode)
		if len(s.Images) > 0 {
			annotations[fakegpu.AnnotationImageEnv] = s.Images.Encode()
		}
		if sh := p.Sharing; sh != nil {
			if sh.MIG != nil {
				labels[fakegpu.LabelMIGConfig] = sh.MIG.Config
			}
			if r := p.Replicated(); r != nil {
				labels[fakegpu.LabelDevicePluginConfig] = r.Config
			}
		}
		if d := p.DRA; d != nil {
			annotations[fakegpu.AnnotationDRA] = d.Mode
			if d.ConsumableShares != "" {
				annotations[fakegpu.AnnotationDRAShares] = d.ConsumableShares
			}
			if _, set := p.Labels[fakegpu.LabelDeployDevicePlugin]; !set {
				labels[fakegpu.LabelDeployDevicePlugin] = "false"
			}
		}
	}

	cpu, mem, pods := p.NodeCPU(), p.NodeMemory(), p.NodeMaxPods()
	capacity := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem, corev1.ResourcePods: strconv.Itoa(pods)} {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("pool %s: %s: %w", p.Name, name, err)
		}
		capacity[name] = q
	}

	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Labels: labels, Annotations: annotations},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			NodeInfo: corev1.NodeSystemInfo{
				Architecture: "amd64", OperatingSystem: "linux",
				KubeletVersion: "fake", ContainerRuntimeVersion: "kwok",
			},
			Phase: corev1.NodeRunning,
			// Born Ready: otherwise the node lifecycle controller taints a
			// new node node.kubernetes.io/not-ready:NoSchedule and, with
			// kwokctl's 25 s node-monitor-period, keeps every pod off it
			// for up to that long after kwok reports Ready.
			// The pressure conditions too, as a kubelet reports them: the
			// node lifecycle controller treats a missing one as never
			// reported.
			Conditions: bornConditions(),
		},
	}, nil
}

func bornConditions() []corev1.NodeCondition {
	now := metav1.Now()
	out := []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "kwok simulates a ready kubelet", LastHeartbeatTime: now, LastTransitionTime: now,
	}}
	for _, c := range []struct {
		t      corev1.NodeConditionType
		reason string
	}{
		{corev1.NodeMemoryPressure, "KubeletHasSufficientMemory"},
		{corev1.NodeDiskPressure, "KubeletHasNoDiskPressure"},
		{corev1.NodePIDPressure, "KubeletHasSufficientPID"},
		{corev1.NodeNetworkUnavailable, "RouteCreated"},
	} {
		out = append(out, corev1.NodeCondition{Type: c.t, Status: corev1.ConditionFalse, Reason: c.reason, LastHeartbeatTime: now, LastTransitionTime: now})
	}
	return out
}
