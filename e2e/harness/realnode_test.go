// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpupool/gpupool/e2e/plan"
	"github.com/gpupool/gpupool/fakegpu"
)

// The enlist wait ends early only on what the candidate's config makes
// last: a ClusterPolicy without a device plugin; not a plugin pod that is
// down for now, and not a node that is no GPU node.
func TestPluginNeverServes(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "real", Labels: map[string]string{"kubernetes.io/hostname": "real"}}}
	inventory := map[string]any{fakegpu.AnnotationSKU: "h100-80gb", fakegpu.AnnotationGPUs: "8"}
	runWith := func(p *fakegpu.ClusterPolicySettings) *Run {
		return &Run{Plan: &plan.Plan{Stack: &fakegpu.Stack{Policy: p}}}
	}
	on := &fakegpu.ClusterPolicySettings{DevicePluginEnabled: true, GFDEnabled: true}
	off := &fakegpu.ClusterPolicySettings{GFDEnabled: true}

	assert.Empty(t, runWith(on).pluginNeverServes(node, map[string]any{}, inventory))
	down := map[string]any{fakegpu.AnnotationDevicePlugin: fakegpu.DevicePluginDown}
	for k, v := range inventory {
		down[k] = v
	}
	assert.Empty(t, runWith(on).pluginNeverServes(node, map[string]any{}, down), "a plugin pod down comes back")
	assert.Contains(t, runWith(off).pluginNeverServes(node, map[string]any{}, inventory), "devicePlugin.enabled=false")
	assert.Contains(t, runWith(on).pluginNeverServes(node, map[string]any{fakegpu.LabelDeployDevicePlugin: "false"}, inventory), "not deployed")
	assert.Empty(t, runWith(off).pluginNeverServes(node, map[string]any{}, map[string]any{}), "not a GPU node")
	assert.Empty(t, (&Run{}).pluginNeverServes(node, map[string]any{}, inventory), "no config to judge by")
}
