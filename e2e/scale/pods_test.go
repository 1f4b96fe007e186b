// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/workload"
	"github.com/gpupool/gpupool/fakegpu"
)

// resolver answers as the harness would: every GPU pool's tenants ask
// nvidia.com/gpu, and trust domain d's namespace is tenant-d.
type resolver struct{}

func (resolver) IntendedResource(fleet.Pool) (string, error) { return fakegpu.ResourceGPU, nil }
func (resolver) Intended(p fleet.Pool) (string, int64, error) {
	return fakegpu.ResourceGPU, int64(p.GPUsPerNode), nil
}
func (resolver) TrustNamespace(_ context.Context, d fleet.TrustDomain) (string, error) {
	return "tenant-" + d.Name, nil
}

func deviceClass(name, resource string, created time.Time) resourcev1.DeviceClass {
	c := resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
	if resource != "" {
		c.Spec.ExtendedResourceName = &resource
	}
	return c
}

// draFleet: a DRA pool, the same split between two trust domains, and a
// device-plugin pool.
func draFleet() *fleet.Fleet {
	taint := corev1.Taint{Key: "sku", Value: "h100-dra", Effect: corev1.TaintEffectNoSchedule}
	return &fleet.Fleet{Spec: fleet.Spec{Pools: []fleet.Pool{
		{Name: "dra", SKU: "h100-80gb", Nodes: 2, GPUsPerNode: 8, Labels: map[string]string{"sku": "h100-dra"}, Taints: []corev1.Taint{taint}, DRA: &fleet.DRA{Mode: fakegpu.DRAWholeGPU}},
		{Name: "dra-tenants", SKU: "h100-80gb", Nodes: 2, GPUsPerNode: 8, DRA: &fleet.DRA{Mode: fakegpu.DRAWholeGPU},
			TrustDomains: []fleet.TrustDomain{
				{Name: "a", Nodes: 1, Labels: map[string]string{"trust": "a"}, Taints: []corev1.Taint{{Key: "trust", Value: "a", Effect: corev1.TaintEffectNoSchedule}}},
				{Name: "b", Nodes: 1, Labels: map[string]string{"trust": "b"}, Taints: []corev1.Taint{{Key: "trust", Value: "b", Effect: corev1.TaintEffectNoSchedule}}},
			}},
		{Name: "h100", SKU: "h100-80gb", Nodes: 1, GPUsPerNode: 8},
	}}}
}

func TestClaimTemplatesCarryTheClaimAndNoLimit(t *testing.T) {
	classes := []resourcev1.DeviceClass{deviceClass("mig.nvidia.com", "", time.Unix(0, 0)), deviceClass("gpu.nvidia.com", fakegpu.ResourceGPU, time.Unix(0, 0))}
	w := &Workload{File: "w.yaml", Spec: WorkloadSpec{Mix: []MixEntry{
		{Pool: "dra", Weight: 1, Shape: ShapeClaim},
		{Pool: "dra-tenants", Weight: 1, Shape: ShapeClaim},
		{Pool: "dra", Weight: 1}, // well-formed: the limit, which DRA serves
	}}}
	ts, err := buildTemplates(context.Background(), w, draFleet(), resolver{}, classes, "run-1")
	require.NoError(t, err)
	require.Len(t, ts, 3)

	for _, tc := range []struct {
		name       string
		entry      int
		namespaces []string
	}{
		{"a pool without trust domains", 0, []string{Namespace}},
		{"one template per trust domain's namespace", 1, []string{"tenant-a", "tenant-b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm := ts[tc.entry]
			assert.Empty(t, tm.expected, "claim pods must be placed")
			require.Len(t, tm.pods, len(tc.namespaces))
			require.Len(t, tm.claims, len(tc.namespaces))
			for i, p := range tm.pods {
				ct := tm.claims[i]
				assert.Equal(t, tc.namespaces[i], p.Namespace)
				assert.Equal(t, p.Namespace, ct.Namespace, "the template is in the pod's namespace")
				assert.Equal(t, claimTemplateName("run-1", tc.entry), ct.Name)
				require.Len(t, p.Spec.ResourceClaims, 1)
				assert.Equal(t, PodClaim, p.Spec.ResourceClaims[0].Name)
				require.NotNil(t, p.Spec.ResourceClaims[0].ResourceClaimTemplateName)
				assert.Equal(t, ct.Name, *p.Spec.ResourceClaims[0].ResourceClaimTemplateName)
				assert.Equal(t, []corev1.ResourceClaim{{Name: PodClaim}}, p.Spec.Containers[0].Resources.Claims)
				for name := range p.Spec.Containers[0].Resources.Limits {
					assert.False(t, strings.HasPrefix(string(name), "nvidia.com/"), "claim pod limits %s", name)
				}
				require.NotNil(t, p.Spec.RuntimeClassName)
				assert.Equal(t, workload.RuntimeClass, *p.Spec.RuntimeClassName, "as the well-formed pod")
				assert.NotEmpty(t, p.Spec.Tolerations)

				req := ct.Spec.Spec.Devices.Requests
				require.Len(t, req, 1)
				require.NotNil(t, req[0].Exactly)
				assert.Equal(t, "gpu.nvidia.com", req[0].Exactly.DeviceClassName, "the class mapping nvidia.com/gpu")
				assert.Equal(t, int64(1), req[0].Exactly.Count)
				for _, l := range []map[string]string{p.Labels, ct.Labels, ct.Spec.ObjectMeta.Labels} {
					assert.Equal(t, "run-1", l[LabelRun], "labelled for cleanup")
				}
			}
		})
	}
	assert.Equal(t, map[string]string{"sku": "h100-dra"}, ts[0].pods[0].Spec.NodeSelector)
	assert.Empty(t, ts[2].claims, "a well-formed entry has no template")
	assert.Empty(t, ts[2].pods[0].Spec.ResourceClaims)
	assert.Contains(t, ts[2].pods[0].Spec.Containers[0].Resources.Limits, corev1.ResourceName(fakegpu.ResourceGPU))
}

func TestClaimTemplatesNeedAMappedClassAndADRAPool(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pool    string
		classes []resourcev1.DeviceClass
		want    string
	}{
		{"no class maps the resource", "dra", []resourcev1.DeviceClass{deviceClass("mig.nvidia.com", "", time.Unix(0, 0))},
			"w.yaml: spec.mix[0] (claim on pool dra): no DeviceClass maps nvidia.com/gpu (spec.extendedResourceName); the cluster's DeviceClasses: mig.nvidia.com"},
		{"no class at all", "dra", nil, "no DeviceClass maps nvidia.com/gpu (spec.extendedResourceName); the cluster's DeviceClasses: none"},
		{"a device-plugin pool", "h100", nil, "w.yaml: spec.mix[0].shape: claim needs a pool whose GPUs DRA serves; pool h100 has no dra: in the fleet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &Workload{File: "w.yaml", Spec: WorkloadSpec{Mix: []MixEntry{{Pool: tc.pool, Weight: 1, Shape: ShapeClaim}}}}
			_, err := buildTemplates(context.Background(), w, draFleet(), resolver{}, tc.classes, "run-1")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// When several classes map the name, the claim names the one the
// scheduler would pick for the limit: the newest, on a tie the lexically
// first.
func TestClassForPicksAsTheScheduler(t *testing.T) {
	old, newer := time.Unix(100, 0), time.Unix(200, 0)
	for _, tc := range []struct {
		name    string
		classes []resourcev1.DeviceClass
		want    string
	}{
		{"one", []resourcev1.DeviceClass{deviceClass("gpu.nvidia.com", fakegpu.ResourceGPU, old), deviceClass("other", "example.com/gpu", newer)}, "gpu.nvidia.com"},
		{"the newest", []resourcev1.DeviceClass{deviceClass("a", fakegpu.ResourceGPU, old), deviceClass("b", fakegpu.ResourceGPU, newer)}, "b"},
		{"a tie, lexically first", []resourcev1.DeviceClass{deviceClass("b", fakegpu.ResourceGPU, old), deviceClass("a", fakegpu.ResourceGPU, old)}, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := classFor(tc.classes, fakegpu.ResourceGPU)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
