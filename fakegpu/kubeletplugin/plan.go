// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package kubeletplugin

import (
	"maps"
	"slices"
	"time"

	"github.com/gpupool/gpupool/fakegpu"
)

// Plan is what the plugin serves on one node: the same advertisement the
// simulated stack publishes for a KWOK node with these labels and
// annotations, as devices a real kubelet can allocate.
type Plan struct {
	// Resources maps each extended resource served to its devices.
	Resources map[string]Resource
	// Down says why nothing is served ("" when the plugin serves).
	Down string
	// GPUs are the node's devices as the NVIDIA runtime names them, and
	// Runtime the toolkit settings it decides with (the ClusterPolicy's):
	// what the node's fake runtime reads (nvidiaruntime.NodeConfig).
	GPUs    fakegpu.NodeGPUs
	Runtime fakegpu.RuntimeSettings
}

// Resource is one extended resource the plugin serves.
type Resource struct {
	// DeviceIDs in the order ListAndWatch lists them: fakegpu.DeviceIDs,
	// the IDs the simulated kubelet allocates.
	DeviceIDs []string
	// Replicas per physical device (1: not shared).
	Replicas int
	// Unhealthy lists the devices ListAndWatch reports unhealthy, sorted.
	Unhealthy []string
	// FailRequestsGreaterThanOne: Allocate refuses a container more than
	// one of these devices (a shared resource under the device-plugin
	// config's failRequestsGreaterThanOne).
	FailRequestsGreaterThanOne bool
	// Policy decides what Allocate answers (the device list and ID
	// strategies, access §3.2), GPUs are the node's UUIDs by index; a nil
	// Policy answers with the variable alone.
	Policy *fakegpu.ClusterPolicySettings
	GPUs   []string
}

// ResourceNames lists the served resources, sorted.
func (p Plan) ResourceNames() []string { return slices.Sorted(maps.Keys(p.Resources)) }

// migChangeNeverDone is the reconfiguration delay the plugin models the MIG
// manager with: only the controller's record of an applied layout ends it.
const migChangeNeverDone = 100 * 365 * 24 * time.Hour

// PlanFor computes what the plugin on node serves under stack (nil: no GPU
// Operator config), given the node's labels and annotations.
func PlanFor(node string, stack *fakegpu.Stack, labels, annotations map[string]string) Plan {
	if stack == nil {
		stack = &fakegpu.Stack{}
	}
	inv, isGPU, err := fakegpu.Inventory(annotations)
	switch {
	case !isGPU:
		return Plan{Down: "the node has no fakegpu GPU inventory (annotation " + fakegpu.AnnotationSKU + ")"}
	case err != nil:
		return Plan{Down: "the node's GPU inventory is invalid: " + err.Error()}
	}
	// The MIG manager is the fakegpu controller's part: it records the
	// layout on the GPUs in the node's annotations. The plugin serves that
	// layout, and while the label asks for another it counts as paused, as
	// the real MIG manager pauses the plugin before repartitioning.
	d := stack.Desired(inv, fakegpu.NodeObservation{Name: node, Labels: labels, Annotations: annotations, Now: time.Now()}, migChangeNeverDone)
	if d.PluginDown != "" {
		return Plan{Down: d.PluginDown}
	}
	if labels[fakegpu.LabelDeployDevicePlugin] == fakegpu.PausedForMIGChange {
		return Plan{Down: "the MIG manager paused the device plugin (" + fakegpu.LabelDeployDevicePlugin + "=" + fakegpu.PausedForMIGChange + ")"}
	}
	// No error here: a config error already made Desired report PluginDown.
	cfg, _ := stack.DevicePluginConfigFor(labels)
	shared := cfg.SharedReplicas()
	out := Plan{Resources: map[string]Resource{}, GPUs: fakegpu.NodeGPUsOf(node, inv.Count, d.Served)}
	if stack.Policy != nil {
		out.Runtime = fakegpu.RuntimeSettings{Toolkit: stack.Policy.Toolkit, CDIEnabled: stack.Policy.CDIEnabled}
	}
	for name, count := range d.Served {
		if count <= 0 {
			continue
		}
		replicas := max(shared[name], 1)
		out.Resources[name] = Resource{
			DeviceIDs:                  fakegpu.DeviceIDs(node, name, count, shared[name]),
			Replicas:                   replicas,
			Unhealthy:                  d.Unhealthy[name],
			FailRequestsGreaterThanOne: replicas > 1 && cfg.FailsRequestsGreaterThanOne(),
			Policy:                     stack.Policy,
			GPUs:                       out.GPUs.GPUs,
		}
	}
	return out
}
