// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Resource and label names the real stack publishes.
const (
	ResourceGPU       = "nvidia.com/gpu"
	ResourceMIGPrefix = "nvidia.com/mig-"
	LabelPrefix       = "nvidia.com/"

	// Labels a platform team sets on a node to pick its configs.
	LabelDevicePluginConfig = "nvidia.com/device-plugin.config"
	LabelMIGConfig          = "nvidia.com/mig.config"
	LabelMIGConfigState     = "nvidia.com/mig.config.state"

	// FakeDriverVersion is the driver the simulated nodes report.
	FakeDriverVersion = "550.90.07"
	// FakeCUDARuntimeVersion is the CUDA version that driver ships (R550
	// is CUDA 12.4): GFD's cuda.runtime-version labels.
	FakeCUDARuntimeVersion = "12.4"
)

// NodeInventory is the physical GPUs of one node.
type NodeInventory struct {
	SKU   SKU
	Count int
}

// StackState is what the GPU stack on a node was configured with.
type StackState struct {
	// MIGStrategy comes from ClusterPolicy spec.mig.strategy. The Operator
	// passes it to the plugin and GFD as MIG_STRATEGY, which beats the config
	// file, so the selected device-plugin config's flags.migStrategy only
	// counts when this is "" (unset); with neither, the strategy is none.
	MIGStrategy string
	// DevicePlugin is the node's selected device-plugin config (nil: defaults).
	DevicePlugin *DevicePluginConfig
	// MIG is the per-GPU MIG state (nil or shorter than the inventory: MIG disabled).
	MIG []GPUState
}

// Advertisement is what the device plugin and GFD publish for a node.
type Advertisement struct {
	// Resources maps extended resource names to counts (capacity = allocatable).
	Resources map[string]int64
	// Labels are GFD's node labels.
	Labels map[string]string
	// Err is set when the device plugin would refuse to start with this
	// state (for example an inconsistent single-strategy layout), or GFD
	// would (MPS with a MIG-enabled GPU); Resources is then empty, as on a
	// real node.
	Err error
}

// ResourceNames lists the advertised resource names, sorted.
func (a Advertisement) ResourceNames() []string { return sortedKeys(a.Resources) }

// device is one allocatable unit before sharing: a whole GPU or a MIG device.
type device struct {
	resource string // nvidia.com/gpu or nvidia.com/mig-<profile>
	profile  *MIGProfile
	// migEnabled marks a whole GPU that is in MIG mode (strategy none):
	// GFD labels those without sharing (replicas 0, no -SHARED).
	migEnabled bool
}

// effectiveMIGStrategy is the strategy the plugin runs with: MIG_STRATEGY
// (from the ClusterPolicy) first, then the config file's flags.migStrategy
// (stack-facts §1: environment beats file), then the plugin's default, none.
func effectiveMIGStrategy(state StackState) string {
	if state.MIGStrategy != "" {
		return state.MIGStrategy
	}
	if f := state.DevicePlugin; f != nil && f.Flags.MigStrategy != nil {
		return *f.Flags.MigStrategy
	}
	return MIGStrategyNone
}

// Advertise computes the resources and labels a node with inv publishes
// under state, as the real device plugin (internal/rm) and GFD
// (internal/lm) would. It is pure: same input, same output.
func Advertise(inv NodeInventory, state StackState) Advertisement {
	strategy := effectiveMIGStrategy(state)
	migState := func(i int) GPUState {
		if i < len(state.MIG) {
			return state.MIG[i]
		}
		return GPUState{}
	}

	sharing, _ := state.DevicePlugin.SharingMode()
	if err := checkMPSCapable(inv, sharing, migState); err != nil {
		// GFD exits before it writes a label (stack-facts §3). The plugin
		// refuses MPS on MIG devices and with mixed (stack-facts §2); under
		// none the doc does not say it fails, but the node is taken as
		// advertising nothing all the same: no pool is built on a
		// half-started stack.
		return Advertisement{Resources: map[string]int64{}, Labels: map[string]string{}, Err: err}
	}

	labels := baseLabels(inv.SKU)
	// stack-facts §3: mps.capable is true exactly when sharing.mps is
	// configured (and no GPU is MIG-enabled, checked above).
	labels["nvidia.com/mps.capable"] = strconv.FormatBool(sharing == SharingMPS)
	if strategy != MIGStrategyNone {
		labels["nvidia.com/mig.strategy"] = strategy
	}

	devices, err := enumerate(inv, strategy, migState)
	if err != nil {
		// GFD labels the node as invalid (stack-facts §3
		// newInvalidMigStrategyLabeler); the plugin advertises nothing.
		labels["nvidia.com/gpu.product"] = sanitizeProduct(inv.SKU.Product) + "-MIG-INVALID"
		labels["nvidia.com/gpu.count"] = "0"
		labels["nvidia.com/gpu.replicas"] = "0"
		labels["nvidia.com/gpu.memory"] = "0"
		labels["nvidia.com/gpu.sharing-strategy"] = ""
		return Advertisement{Resources: map[string]int64{}, Labels: labels, Err: err}
	}

	if err := MPSError(state.DevicePlugin, strategy, inv.SKU, anyMIGDevice(devices)); err != nil {
		// The plugin (or the MPS daemon it waits for) refuses; GFD keeps
		// labelling the node.
		return Advertisement{Resources: map[string]int64{}, Labels: labels, Err: err}
	}

	resources := map[string]int64{}
	perResource := map[string][]device{}
	for _, d := range devices {
		perResource[d.resource] = append(perResource[d.resource], d)
	}
	for _, name := range sortedKeys(perResource) {
		devs := perResource[name]
		replicas, advertised := state.DevicePlugin.Replicas(name)
		resources[advertised] += int64(len(devs) * replicas)
		renamed := advertised != name
		shareStrategy := SharingNone
		if replicas > 1 {
			shareStrategy = sharing
		}
		if name == ResourceGPU {
			product := sanitizeProduct(inv.SKU.Product)
			mem := inv.SKU.MemoryMiB
			// gpu.count counts every physical GPU, MIG-enabled or not
			// (stack-facts §3): under mixed it is not the nvidia.com/gpu count.
			count := inv.Count
			if p := devs[0].profile; p != nil { // single strategy: the MIG devices are the GPUs
				product += "-MIG-" + migDeviceName(p.Name)
				mem = p.MemoryMiB
				count = len(devs)
				addMIGLabels(labels, "nvidia.com/gpu", *p)
			}
			labelReplicas := replicas
			if allMIGEnabled(devs) {
				// GFD labels MIG-enabled whole GPUs without sharing; a
				// non-MIG GPU of the same model brings the configured
				// replicas back (stack-facts §3 gpu.replicas).
				labelReplicas, shareStrategy = 0, SharingNone
			}
			if labelReplicas > 1 && !renamed {
				product += "-SHARED"
			}
			labels["nvidia.com/gpu.product"] = product
			labels["nvidia.com/gpu.count"] = strconv.Itoa(count)
			labels["nvidia.com/gpu.replicas"] = strconv.Itoa(labelReplicas)
			labels["nvidia.com/gpu.memory"] = strconv.Itoa(mem)
			labels["nvidia.com/gpu.sharing-strategy"] = shareStrategy
			continue
		}
		p := devs[0].profile
		prefix := name // nvidia.com/mig-1g.5gb
		product := sanitizeProduct(inv.SKU.Product) + "-MIG-" + migDeviceName(p.Name)
		if replicas > 1 && !renamed {
			product += "-SHARED"
		}
		labels[prefix+".product"] = product
		labels[prefix+".count"] = strconv.Itoa(len(devs))
		labels[prefix+".replicas"] = strconv.Itoa(replicas)
		labels[prefix+".memory"] = strconv.Itoa(p.MemoryMiB)
		labels[prefix+".sharing-strategy"] = shareStrategy
		addMIGLabels(labels, prefix, *p)
	}
	if _, ok := perResource[ResourceGPU]; !ok {
		// Every GPU is MIG-enabled under mixed (or none exist): GFD still
		// describes the physical GPUs, with 0 replicas.
		labels["nvidia.com/gpu.product"] = sanitizeProduct(inv.SKU.Product)
		labels["nvidia.com/gpu.count"] = strconv.Itoa(inv.Count)
		labels["nvidia.com/gpu.replicas"] = "0"
		labels["nvidia.com/gpu.memory"] = strconv.Itoa(inv.SKU.MemoryMiB)
		labels["nvidia.com/gpu.sharing-strategy"] = SharingNone
	}
	return Advertisement{Resources: resources, Labels: labels}
}

// enumerate lists the devices the plugin would serve under strategy, or the
// error it would refuse to start with.
func enumerate(inv NodeInventory, strategy string, migState func(int) GPUState) ([]device, error) {
	var devices []device
	migEnabled := 0
	profilesSeen := map[string]bool{}
	for i := 0; i < inv.Count; i++ {
		st := migState(i)
		if !st.MIGEnabled || strategy == MIGStrategyNone {
			devices = append(devices, device{resource: ResourceGPU, migEnabled: st.MIGEnabled})
			continue
		}
		migEnabled++
		if strategy == MIGStrategySingle && countDevices(st.Devices) == 0 {
			// Layout all-enabled: single needs every GPU to expose MIG
			// devices (GFD: "at least one MIG device is enabled but empty").
			return nil, fmt.Errorf("device %d has no MIG devices configured", i)
		}
		for _, name := range sortedKeys(st.Devices) {
			p, ok := inv.SKU.Profile(name)
			if !ok {
				return nil, fmt.Errorf("GPU %d: %s has no MIG profile %q", i, inv.SKU.Product, name)
			}
			profilesSeen[name] = true
			res := ResourceGPU
			if strategy == MIGStrategyMixed {
				res = ResourceMIGPrefix + migDeviceName(name)
			}
			for n := 0; n < st.Devices[name]; n++ {
				devices = append(devices, device{resource: res, profile: &p})
			}
		}
	}
	if strategy == MIGStrategySingle && migEnabled > 0 {
		if migEnabled != inv.Count {
			return nil, fmt.Errorf("all devices on the node must be configured with the same migEnabled value")
		}
		if len(profilesSeen) > 1 {
			return nil, fmt.Errorf("more than one MIG device type present on node")
		}
	}
	return devices, nil
}

// migDeviceName is the name the plugin and GFD give a MIG profile: "+" is
// not allowed in resource names or label values, so 1g.5gb+me is 1g.5gb.me.
func migDeviceName(profile string) string { return strings.ReplaceAll(profile, "+", ".") }

// checkMPSCapable is GFD's refusal of MPS on a node with a MIG-enabled
// GPU, whatever the MIG strategy (stack-facts §3 mps.capable).
func checkMPSCapable(inv NodeInventory, sharing string, migState func(int) GPUState) error {
	if sharing != SharingMPS {
		return nil
	}
	for i := 0; i < inv.Count; i++ {
		if migState(i).MIGEnabled {
			return fmt.Errorf("GPU %d is MIG-enabled: MPS sharing is not supported for mig devices", i)
		}
	}
	return nil
}

// anyMIGDevice reports whether the plugin serves a MIG device.
func anyMIGDevice(devices []device) bool {
	for _, d := range devices {
		if d.profile != nil {
			return true
		}
	}
	return false
}

// countDevices is the number of MIG devices on one GPU.
func countDevices(devices map[string]int) int {
	n := 0
	for _, c := range devices {
		n += c
	}
	return n
}

// allMIGEnabled reports whether devs are all whole GPUs in MIG mode.
func allMIGEnabled(devs []device) bool {
	for _, d := range devs {
		if !d.migEnabled {
			return false
		}
	}
	return len(devs) > 0
}

// baseLabels are GFD's labels that depend only on the GPU model and the
// driver (stack-facts §3). Not written, on purpose:
//   - nvidia.com/gpu.present: the GPU Operator writes it, not GFD
//     (stack-facts §6);
//   - nvidia.com/gfd.timestamp: it changes on every run, so the node
//     controller would rewrite the node forever (as GFD with noTimestamp);
//   - vgpu.host-driver-*, gpu.clique: no simulated GPU is a vGPU or
//     fabric-attached.
func baseLabels(sku SKU) map[string]string {
	major, minor, rev := splitVersion(FakeDriverVersion)
	cudaMajor, cudaMinor, _ := splitVersion(FakeCUDARuntimeVersion)
	return map[string]string{
		"nvidia.com/gpu.family":                   sku.Family,
		"nvidia.com/gpu.compute.major":            strconv.Itoa(sku.ComputeMajor),
		"nvidia.com/gpu.compute.minor":            strconv.Itoa(sku.ComputeMinor),
		"nvidia.com/mig.capable":                  strconv.FormatBool(sku.MIGCapable()),
		"nvidia.com/cuda.driver-version.full":     FakeDriverVersion,
		"nvidia.com/cuda.driver-version.major":    major,
		"nvidia.com/cuda.driver-version.minor":    minor,
		"nvidia.com/cuda.driver-version.revision": rev,
		"nvidia.com/cuda.runtime-version.full":    FakeCUDARuntimeVersion,
		"nvidia.com/cuda.runtime-version.major":   cudaMajor,
		"nvidia.com/cuda.runtime-version.minor":   cudaMinor,
		// Deprecated copies GFD still writes.
		"nvidia.com/cuda.driver.major":  major,
		"nvidia.com/cuda.driver.minor":  minor,
		"nvidia.com/cuda.driver.rev":    rev,
		"nvidia.com/cuda.runtime.major": cudaMajor,
		"nvidia.com/cuda.runtime.minor": cudaMinor,
		// The simulated GPUs are compute-class (PCI class 3D controller).
		"nvidia.com/gpu.mode": "compute",
		// GFD reads /sys/class/dmi/id/product_name; a simulated node has no
		// machine to read, and GFD writes unknown when it cannot read it.
		"nvidia.com/gpu.machine":  "unknown",
		"nvidia.com/vgpu.present": "false",
	}
}

// addMIGLabels writes the MIG device attributes GFD publishes under prefix
// (nvidia.com/gpu under single, nvidia.com/mig-<profile> under mixed).
func addMIGLabels(labels map[string]string, prefix string, p MIGProfile) {
	labels[prefix+".slices.gi"] = strconv.Itoa(p.ComputeSlices)
	labels[prefix+".slices.ci"] = strconv.Itoa(p.ComputeSlices)
	labels[prefix+".multiprocessors"] = strconv.Itoa(p.Multiprocessors)
	labels[prefix+".engines.copy"] = strconv.Itoa(p.Engines.Copy)
	labels[prefix+".engines.decoder"] = strconv.Itoa(p.Engines.Decoder)
	labels[prefix+".engines.encoder"] = strconv.Itoa(p.Engines.Encoder)
	labels[prefix+".engines.jpeg"] = strconv.Itoa(p.Engines.JPEG)
	labels[prefix+".engines.ofa"] = strconv.Itoa(p.Engines.OFA)
}

var productJunk = regexp.MustCompile(`[^A-Za-z0-9\-_. ]`)

// sanitizeProduct turns an NVML product name into a label value as GFD does.
func sanitizeProduct(s string) string {
	return strings.ReplaceAll(productJunk.ReplaceAllString(s, ""), " ", "-")
}

func splitVersion(v string) (major, minor, rev string) {
	parts := strings.SplitN(v, ".", 3)
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	return parts[0], parts[1], parts[2]
}

// SortedResourceNames is a helper for callers that print advertisements.
func SortedResourceNames(m map[string]int64) []string {
	names := sortedKeys(m)
	sort.Strings(names)
	return names
}
