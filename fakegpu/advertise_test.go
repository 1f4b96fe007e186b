// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

var (
	oneG5     = map[string]int{"1g.5gb": 7}
	oneG5me   = map[string]int{"1g.5gb+me": 1}
	twoG10    = map[string]int{"2g.10gb": 3}
	balanced  = map[string]int{"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}
	oneG10    = map[string]int{"1g.10gb": 7}
	noDevices = map[string]int{}
)

// advertiseCase is one node: its GPUs and what the stack was configured with.
type advertiseCase struct {
	sku      string
	count    int
	strategy string
	dp       string // device-plugin config document; "" = none
	mig      []GPUState
}

func (c advertiseCase) run(t *testing.T) Advertisement {
	t.Helper()
	state := StackState{MIGStrategy: c.strategy, MIG: c.mig}
	if c.dp != "" {
		state.DevicePlugin = mustDevicePluginConfig(t, c.dp)
	}
	return Advertise(NodeInventory{SKU: mustSKU(t, c.sku), Count: c.count}, state)
}

// TestAdvertiseResourceNames covers the resource-name table of
// stack-facts §2, and time-slicing's multiplication of counts.
func TestAdvertiseResourceNames(t *testing.T) {
	tests := []struct {
		name    string
		node    advertiseCase
		want    map[string]int64
		wantErr []string
		bug     string
	}{
		{
			// stack-facts §2: DP@1b826acc internal/rm — none, MIG off: nvidia.com/gpu per GPU
			name: "none/MIG off",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyNone},
			want: map[string]int64{"nvidia.com/gpu": 8},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm — none, MIG on: nvidia.com/gpu, whole GPU, MIG ignored
			name: "none/MIG on",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyNone, mig: migAll(8, oneG5)},
			want: map[string]int64{"nvidia.com/gpu": 8},
		},
		{
			// not in facts: the plugin's flag default is none (the doc lists none|single|mixed,
			// stack-facts §1 DP@1b826acc api/config/v1/flags.go, and gives no default) — an unset
			// strategy advertises as none
			name: "unset strategy is none",
			node: advertiseCase{sku: "a100-40gb", count: 2, mig: migAll(2, oneG5)},
			want: map[string]int64{"nvidia.com/gpu": 2},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm — single, MIG off: nvidia.com/gpu per GPU
			name: "single/MIG off",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle},
			want: map[string]int64{"nvidia.com/gpu": 8},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm — single, MIG on: nvidia.com/gpu, one per MIG device
			name: "single/MIG on",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, oneG5)},
			want: map[string]int64{"nvidia.com/gpu": 56},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm — single, MIG on, another single profile
			name: "single/MIG on 2g.10gb",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, twoG10)},
			want: map[string]int64{"nvidia.com/gpu": 24},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm — single: "all devices on the node must be configured with the same migEnabled value"
			name:    "single/MIG on some GPUs",
			node:    advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migFirst(8, 4, oneG5)},
			want:    map[string]int64{},
			wantErr: []string{"all devices on the node must be configured with the same migEnabled value"},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm — single: "more than one MIG device type present on node" (one GPU)
			name:    "single/mixed profiles on each GPU",
			node:    advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, balanced)},
			want:    map[string]int64{},
			wantErr: []string{"more than one MIG device type present on node"},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm — single: "more than one MIG device type present on node" (across GPUs)
			name:    "single/different profile per GPU",
			node:    advertiseCase{sku: "a100-40gb", count: 2, strategy: MIGStrategySingle, mig: []GPUState{{MIGEnabled: true, Devices: oneG5}, {MIGEnabled: true, Devices: twoG10}}},
			want:    map[string]int64{},
			wantErr: []string{"more than one MIG device type present on node"},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm — single: every GPU must be MIG-enabled with the
			// same single profile; MIG-enabled GPUs with no MIG devices (layout all-enabled) have
			// none (stack-facts §3: "at least one MIG device is enabled but empty"), so nothing is advertised
			name:    "single/MIG on without MIG devices",
			node:    advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, noDevices)},
			want:    map[string]int64{},
			wantErr: []string{"MIG"},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm — mixed, MIG off: nvidia.com/gpu per GPU
			name: "mixed/MIG off",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed},
			want: map[string]int64{"nvidia.com/gpu": 8},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm — mixed names MIG devices nvidia.com/mig-<profile>
			name: "mixed/MIG on",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, oneG5)},
			want: map[string]int64{"nvidia.com/mig-1g.5gb": 56},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm — mixed, several profiles per GPU
			name: "mixed/balanced",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, balanced)},
			want: map[string]int64{"nvidia.com/mig-1g.5gb": 16, "nvidia.com/mig-2g.10gb": 8, "nvidia.com/mig-3g.20gb": 8},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm — mixed turns + into .: nvidia.com/mig-1g.5gb.me
			name: "mixed/+me profile",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, oneG5me)},
			want: map[string]int64{"nvidia.com/mig-1g.5gb.me": 8},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm — mixed turns + into .: A30's 2g.12gb+me (stack-facts §5) is nvidia.com/mig-2g.12gb.me
			name: "mixed/A30 2g.12gb+me",
			node: advertiseCase{sku: "a30-24gb", count: 2, strategy: MIGStrategyMixed, mig: migAll(2, map[string]int{"2g.12gb+me": 1, "1g.6gb": 2})},
			want: map[string]int64{"nvidia.com/mig-2g.12gb.me": 2, "nvidia.com/mig-1g.6gb": 4},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm — mixed, some GPUs MIG-enabled: both kinds advertised
			name: "mixed/MIG on some GPUs",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migFirst(8, 4, oneG5)},
			want: map[string]int64{"nvidia.com/gpu": 4, "nvidia.com/mig-1g.5gb": 28},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm — mixed: one nvidia.com/mig-<profile> per MIG device,
			// so MIG-enabled GPUs without MIG devices advertise nothing
			name: "mixed/MIG on without MIG devices",
			node: advertiseCase{sku: "a100-40gb", count: 2, strategy: MIGStrategyMixed, mig: migAll(2, noDevices)},
			want: map[string]int64{},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm — mixed on H100: profile names come from the GPU (stack-facts §5)
			name: "mixed/H100 1g.10gb",
			node: advertiseCase{sku: "h100-80gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, oneG10)},
			want: map[string]int64{"nvidia.com/mig-1g.10gb": 56},
		},
		{
			// stack-facts §1: GO@a22dbf67 controllers/object_controls.go applyMIGConfiguration — GO sets
			// MIG_STRATEGY only when spec.mig.strategy is set, so with it unset the config file's
			// flags.migStrategy applies (flag > env > file, flags.go UpdateFromCLIFlags)
			name: "config flags.migStrategy mixed",
			node: advertiseCase{sku: "a100-40gb", count: 8, dp: "version: v1\nflags:\n  migStrategy: mixed\n", mig: migAll(8, oneG5)},
			want: map[string]int64{"nvidia.com/mig-1g.5gb": 56},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm/device_map.go updateDeviceMapWithReplicas — time-slicing,
			// renameByDefault: 1 L4 × 4 = nvidia.com/gpu.shared: 4, no nvidia.com/gpu
			name: "time-slicing renameByDefault",
			node: advertiseCase{sku: "l4", count: 1, strategy: MIGStrategyNone, dp: dpTimeSlicing4Renamed},
			want: map[string]int64{"nvidia.com/gpu.shared": 4},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm/device_map.go updateDeviceMapWithReplicas — time-slicing,
			// no rename: 1 L4 × 4 = nvidia.com/gpu: 4
			name: "time-slicing",
			node: advertiseCase{sku: "l4", count: 1, strategy: MIGStrategyNone, dp: dpTimeSlicing4},
			want: map[string]int64{"nvidia.com/gpu": 4},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm/device_map.go updateDeviceMapWithReplicas — time-slicing
			// multiplies per GPU: 4 L4 × 4 = 16
			name: "time-slicing 4 GPUs",
			node: advertiseCase{sku: "l4", count: 4, strategy: MIGStrategyNone, dp: dpTimeSlicing4},
			want: map[string]int64{"nvidia.com/gpu": 16},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1/replicas.go disableResoureRenaming — a custom rename
			// with renameByDefault false is cleared (a warning): the replicas stay nvidia.com/gpu
			name: "time-slicing explicit rename is ignored",
			node: advertiseCase{sku: "l4", count: 2, dp: "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      rename: gpu-ts\n      replicas: 4\n"},
			want: map[string]int64{"nvidia.com/gpu": 8},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — sharing.mps takes replicas as timeSlicing does, and
			// stack-facts §2: internal/rm/device_map.go updateDeviceMapWithReplicas multiplies: 2 L4 × 3 = 6
			name: "mps",
			node: advertiseCase{sku: "l4", count: 2, dp: dpMPS3},
			want: map[string]int64{"nvidia.com/gpu": 6},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — both set, MPS wins: 2 L4 × MPS's 3, not time-slicing's 4
			name: "time-slicing and mps: mps wins",
			node: advertiseCase{sku: "l4", count: 2, dp: "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 3\n"},
			want: map[string]int64{"nvidia.com/gpu": 6},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm/nvml.go newSharingLabeler — sharing.mps with a
			// MIG-enabled GPU: GFD fails ("MPS sharing is not supported for mig devices"). That
			// nothing is advertised is the simulator's choice (the doc is silent): the plugin
			// refusals of stack-facts §2 cover MIG devices and mixed, neither of which applies under none
			name:    "mps with MIG on, none",
			node:    advertiseCase{sku: "a100-40gb", count: 2, strategy: MIGStrategyNone, mig: migAll(2, oneG5), dp: dpMPS3},
			want:    map[string]int64{},
			wantErr: []string{"MPS sharing is not supported for mig devices"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm/nvml.go newSharingLabeler — GFD fails with one
			// MIG-enabled GPU (stack-facts §2: internal/plugin/mps.go getMPSOptions refuses MIG devices too)
			name:    "mps with MIG on, single",
			node:    advertiseCase{sku: "a100-40gb", count: 2, strategy: MIGStrategySingle, mig: migAll(2, oneG5), dp: dpMPS3},
			want:    map[string]int64{},
			wantErr: []string{"MPS sharing is not supported for mig devices"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm/nvml.go newSharingLabeler — any MIG-enabled GPU is
			// enough: one of two under mixed
			name:    "mps with MIG on one GPU, mixed",
			node:    advertiseCase{sku: "a100-40gb", count: 2, strategy: MIGStrategyMixed, mig: migFirst(2, 1, oneG5), dp: dpMPS3},
			want:    map[string]int64{},
			wantErr: []string{"MPS sharing is not supported for mig devices"},
		},
		{
			// stack-facts §2: DP@1b826acc cmd/nvidia-device-plugin/main.go validateFlags — the plugin
			// refuses MPS with mixed even without MIG-enabled GPUs: "using --mig-strategy=mixed is
			// not supported with MPS"
			name:    "mps with mixed, MIG off",
			node:    advertiseCase{sku: "a100-40gb", count: 2, strategy: MIGStrategyMixed, dp: dpMPS3},
			want:    map[string]int64{},
			wantErr: []string{"using --mig-strategy=mixed is not supported with MPS"},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm/device_map.go updateDeviceMapWithReplicas — time-slicing
			// a MIG resource under mixed, renameByDefault
			name: "time-slicing mixed MIG resource",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, oneG5),
				dp: "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n    - name: nvidia.com/mig-1g.5gb\n      replicas: 2\n"},
			want: map[string]int64{"nvidia.com/mig-1g.5gb.shared": 112},
		},
		{
			// stack-facts §2: DP@1b826acc internal/rm/device_map.go updateDeviceMapWithReplicas — time-slicing
			// under single: the MIG devices are nvidia.com/gpu
			name: "time-slicing single MIG",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, oneG5), dp: dpTimeSlicing4},
			want: map[string]int64{"nvidia.com/gpu": 224},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRowCheck(t)
			defer r.finish(tc.bug)
			got := tc.node.run(t)
			checkErr(r, got.Err, tc.wantErr...)
			checkResources(r, got.Resources, tc.want)
		})
	}
}

// dpMPSAndTimeSlicing sets both sharing sections; MPS wins (stack-facts §1).
const dpMPSAndTimeSlicing = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 3\n"

// dpTimeSlicingGPU4 time-slices whole GPUs 4 ways, not renamed.
const dpTimeSlicingGPU4 = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"

// TestAdvertiseLabels covers the GFD labels of stack-facts §3.
func TestAdvertiseLabels(t *testing.T) {
	tests := []struct {
		name     string
		node     advertiseCase
		want     map[string]string
		absent   []string
		noLabels bool     // GFD publishes nothing
		wantErr  []string // GFD (or the plugin) fails
		bug      string
	}{
		{
			// stack-facts §3: DP@1b826acc internal/lm — whole GPUs: product sanitised, count, replicas 1,
			// memory, family, compute capability, mig.capable, driver version
			name: "A100 whole GPUs",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyNone},
			want: map[string]string{
				"nvidia.com/gpu.product":                  "NVIDIA-A100-SXM4-40GB",
				"nvidia.com/gpu.count":                    "8",
				"nvidia.com/gpu.replicas":                 "1",
				"nvidia.com/gpu.memory":                   "40960",
				"nvidia.com/gpu.sharing-strategy":         SharingNone,
				"nvidia.com/gpu.family":                   "ampere",
				"nvidia.com/gpu.compute.major":            "8",
				"nvidia.com/gpu.compute.minor":            "0",
				"nvidia.com/mig.capable":                  "true",
				"nvidia.com/cuda.driver-version.full":     FakeDriverVersion,
				"nvidia.com/cuda.driver-version.major":    "550",
				"nvidia.com/cuda.driver-version.minor":    "90",
				"nvidia.com/cuda.driver-version.revision": "07",
			},
			absent: []string{"nvidia.com/mig.strategy"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm/nvml.go newVersionLabeler — cuda.runtime-version.{major,minor,full}
			// (driver 550.90.07 ships CUDA 12.4)
			name: "CUDA runtime version",
			node: advertiseCase{sku: "l4", count: 1},
			want: map[string]string{
				"nvidia.com/cuda.runtime-version.full":  "12.4",
				"nvidia.com/cuda.runtime-version.major": "12",
				"nvidia.com/cuda.runtime-version.minor": "4",
			},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm/nvml.go newVersionLabeler — deprecated copies
			// cuda.driver.{major,minor,rev} and cuda.runtime.{major,minor}
			name: "deprecated CUDA version copies",
			node: advertiseCase{sku: "l4", count: 1},
			want: map[string]string{
				"nvidia.com/cuda.driver.major":  "550",
				"nvidia.com/cuda.driver.minor":  "90",
				"nvidia.com/cuda.driver.rev":    "07",
				"nvidia.com/cuda.runtime.major": "12",
				"nvidia.com/cuda.runtime.minor": "4",
			},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm/nvml.go newGPUModeLabeler — gpu.mode by PCI class;
			// the simulated GPUs are compute-class
			name: "gpu.mode compute",
			node: advertiseCase{sku: "h100-80gb", count: 8},
			want: map[string]string{"nvidia.com/gpu.mode": "compute"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm machine-type.go — gpu.machine is `unknown` when
			// /sys/class/dmi/id/product_name is unreadable, as on a simulated node
			name: "gpu.machine unknown",
			node: advertiseCase{sku: "t4", count: 1},
			want: map[string]string{"nvidia.com/gpu.machine": "unknown"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm vgpu.go — vgpu.present=false on a non-vGPU node,
			// and no vgpu.host-driver-* labels
			name:   "vgpu.present false",
			node:   advertiseCase{sku: "a30-24gb", count: 1},
			want:   map[string]string{"nvidia.com/vgpu.present": "false"},
			absent: []string{"nvidia.com/vgpu.host-driver-version", "nvidia.com/vgpu.host-driver-branch"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm timestamp.go — gfd.timestamp is absent with noTimestamp;
			// the simulator never writes it (it would change every run and churn the node)
			name:   "no gfd.timestamp",
			node:   advertiseCase{sku: "l4", count: 1},
			absent: []string{"nvidia.com/gfd.timestamp"},
		},
		{
			// stack-facts §3 and §6: GO@a22dbf67 controllers/state_manager.go gpuNodeLabels — gpu.present
			// is written by the GPU Operator, not by GFD
			name:   "no gpu.present",
			node:   advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, oneG5)},
			absent: []string{"nvidia.com/gpu.present"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm imex.go — gpu.clique only on fabric-attached GPUs
			name:   "no gpu.clique",
			node:   advertiseCase{sku: "h100-80gb", count: 8},
			absent: []string{"nvidia.com/gpu.clique"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm/nvml.go newSharingLabeler — mps.capable=false without sharing.mps
			name: "mps.capable false, no sharing",
			node: advertiseCase{sku: "l4", count: 1},
			want: map[string]string{"nvidia.com/mps.capable": "false"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm/nvml.go newSharingLabeler — mps.capable=false under time-slicing
			name: "mps.capable false, time-slicing",
			node: advertiseCase{sku: "l4", count: 1, dp: dpTimeSlicing4},
			want: map[string]string{"nvidia.com/mps.capable": "false"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm/nvml.go newSharingLabeler — mps.capable=true with sharing.mps
			name: "mps.capable true, mps",
			node: advertiseCase{sku: "l4", count: 2, dp: dpMPS3},
			want: map[string]string{"nvidia.com/mps.capable": "true", "nvidia.com/gpu.sharing-strategy": SharingMPS},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm/nvml.go newSharingLabeler — mps.capable=true when both
			// are set (stack-facts §1: MPS wins)
			name: "mps.capable true, mps and time-slicing",
			node: advertiseCase{sku: "l4", count: 2, dp: dpMPSAndTimeSlicing},
			want: map[string]string{"nvidia.com/mps.capable": "true", "nvidia.com/gpu.replicas": "3"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm/nvml.go newSharingLabeler — mps.capable=true on a
			// MIG-capable GPU whose MIG is off
			name: "mps.capable true, MIG-capable GPU with MIG off",
			node: advertiseCase{sku: "a100-40gb", count: 2, strategy: MIGStrategySingle, dp: dpMPS3},
			want: map[string]string{"nvidia.com/mps.capable": "true", "nvidia.com/mig.capable": "true"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm/nvml.go newSharingLabeler — sharing.mps with a
			// MIG-enabled GPU: GFD fails ("MPS sharing is not supported for mig devices") and
			// publishes nothing
			name:     "mps with MIG on: GFD fails",
			node:     advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, oneG5), dp: dpMPS3},
			noLabels: true,
			wantErr:  []string{"MPS sharing is not supported for mig devices"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm/nvml.go newSharingLabeler — GFD fails with MIG-enabled
			// GPUs under strategy none as well (it checks the GPUs, not the strategy)
			name:     "mps with MIG on, none: GFD fails",
			node:     advertiseCase{sku: "a30-24gb", count: 1, strategy: MIGStrategyNone, mig: migAll(1, map[string]int{"1g.6gb": 4}), dp: dpMPS3},
			noLabels: true,
			wantErr:  []string{"MPS sharing is not supported for mig devices"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — spaces become -: "NVIDIA H100 80GB HBM3" → NVIDIA-H100-80GB-HBM3
			name: "H100 product spaces",
			node: advertiseCase{sku: "h100-80gb", count: 1, strategy: MIGStrategyNone},
			want: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.family": "hopper", "nvidia.com/gpu.compute.major": "9"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — mig.capable=false on a GPU without MIG (stack-facts §5: L4)
			name: "L4 not MIG-capable",
			node: advertiseCase{sku: "l4", count: 1, strategy: MIGStrategyNone},
			want: map[string]string{"nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/mig.capable": "false", "nvidia.com/gpu.replicas": "1"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — -SHARED when replicas > 1 and not renamed; gpu.replicas = configured replicas
			name: "time-slicing not renamed",
			node: advertiseCase{sku: "l4", count: 1, strategy: MIGStrategyNone, dp: dpTimeSlicing4},
			want: map[string]string{
				"nvidia.com/gpu.product":          "NVIDIA-L4-SHARED",
				"nvidia.com/gpu.replicas":         "4",
				"nvidia.com/gpu.count":            "1",
				"nvidia.com/gpu.sharing-strategy": SharingTimeSlicing,
			},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — renameByDefault: no -SHARED suffix
			name: "time-slicing renameByDefault",
			node: advertiseCase{sku: "l4", count: 1, strategy: MIGStrategyNone, dp: dpTimeSlicing4Renamed},
			want: map[string]string{
				"nvidia.com/gpu.product":          "NVIDIA-L4",
				"nvidia.com/gpu.replicas":         "4",
				"nvidia.com/gpu.sharing-strategy": SharingTimeSlicing,
			},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1/replicas.go disableResoureRenaming (GFD calls it
			// too) — a custom rename with renameByDefault false is cleared, so the resource is not
			// renamed and stack-facts §3's -SHARED suffix applies
			name: "time-slicing explicit rename is ignored",
			node: advertiseCase{sku: "l4", count: 1, dp: "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      rename: gpu-ts\n      replicas: 4\n"},
			want: map[string]string{"nvidia.com/gpu.product": "NVIDIA-L4-SHARED", "nvidia.com/gpu.replicas": "4"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — gpu.replicas is 1 when not shared: sharing config
			// for another resource leaves the GPU unshared (no suffix, strategy none)
			name: "sharing another resource",
			node: advertiseCase{sku: "l4", count: 1, dp: "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/mig-1g.5gb\n      replicas: 4\n"},
			want: map[string]string{"nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.replicas": "1", "nvidia.com/gpu.sharing-strategy": SharingNone},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — sharing-strategy=mps under MPS
			name: "mps",
			node: advertiseCase{sku: "l4", count: 2, dp: dpMPS3},
			want: map[string]string{"nvidia.com/gpu.replicas": "3", "nvidia.com/gpu.sharing-strategy": SharingMPS},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — mig.strategy is set for single
			name: "mig.strategy single",
			node: advertiseCase{sku: "l4", count: 1, strategy: MIGStrategySingle},
			want: map[string]string{"nvidia.com/mig.strategy": "single", "nvidia.com/gpu.product": "NVIDIA-L4"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — mig.strategy is set for mixed
			name: "mig.strategy mixed",
			node: advertiseCase{sku: "a100-40gb", count: 1, strategy: MIGStrategyMixed},
			want: map[string]string{"nvidia.com/mig.strategy": "mixed"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — mig.strategy is never set for none, even with MIG on
			name:   "mig.strategy none",
			node:   advertiseCase{sku: "a100-40gb", count: 1, strategy: MIGStrategyNone, mig: migAll(1, oneG5)},
			absent: []string{"nvidia.com/mig.strategy"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — gpu.replicas is 0 with sharing-strategy none when
			// every GPU of the model is MIG-enabled (strategy none too), even with sharing configured
			name: "none/MIG on: replicas 0",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyNone, mig: migAll(8, oneG5), dp: dpTimeSlicing4},
			want: map[string]string{
				"nvidia.com/gpu.product":          "NVIDIA-A100-SXM4-40GB",
				"nvidia.com/gpu.replicas":         "0",
				"nvidia.com/gpu.sharing-strategy": SharingNone,
				"nvidia.com/gpu.count":            "8",
			},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — one non-MIG GPU of the model brings the configured
			// replicas back (strategy none)
			name: "none/MIG on some GPUs: configured replicas",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyNone, mig: migFirst(8, 7, oneG5), dp: dpTimeSlicingGPU4},
			want: map[string]string{
				"nvidia.com/gpu.product":          "NVIDIA-A100-SXM4-40GB-SHARED",
				"nvidia.com/gpu.replicas":         "4",
				"nvidia.com/gpu.sharing-strategy": SharingTimeSlicing,
				"nvidia.com/gpu.count":            "8",
			},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm/mig-strategy.go newGPULabelers — single, MIG off:
			// gpu.count = every physical GPU
			name:   "single/MIG off: count",
			node:   advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle},
			want:   map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.count": "8", "nvidia.com/gpu.memory": "40960"},
			absent: []string{"nvidia.com/gpu.slices.gi", "nvidia.com/gpu.engines.copy"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — single: product <model>-MIG-<profile>, count = MIG
			// devices, memory = MIG memory, MIG attributes under nvidia.com/gpu
			name: "single/MIG on",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, oneG5)},
			want: map[string]string{
				"nvidia.com/gpu.product":          "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",
				"nvidia.com/gpu.count":            "56",
				"nvidia.com/gpu.memory":           "4864",
				"nvidia.com/gpu.replicas":         "1",
				"nvidia.com/gpu.sharing-strategy": SharingNone,
				"nvidia.com/mig.strategy":         "single",
				"nvidia.com/gpu.slices.gi":        "1",
				"nvidia.com/gpu.slices.ci":        "1",
				"nvidia.com/gpu.multiprocessors":  "14",
			},
			absent: []string{"nvidia.com/mig-1g.5gb.count"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — single: gpu.engines.{copy,decoder,encoder,jpeg,ofa};
			// the figures are the catalog's (UNVERIFIED, MIG user guide: 1g.5gb has 1 copy engine,
			// no media engines)
			name: "single/MIG on: engines",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, oneG5)},
			want: map[string]string{
				"nvidia.com/gpu.engines.copy":    "1",
				"nvidia.com/gpu.engines.decoder": "0",
				"nvidia.com/gpu.engines.encoder": "0",
				"nvidia.com/gpu.engines.jpeg":    "0",
				"nvidia.com/gpu.engines.ofa":     "0",
			},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — single +me: the media engines show in gpu.engines.*
			// (catalog figures, UNVERIFIED: 1g.5gb+me has 1 decoder, 1 JPEG, 1 OFA)
			name: "single/+me: engines",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, oneG5me)},
			want: map[string]string{
				"nvidia.com/gpu.engines.copy":    "1",
				"nvidia.com/gpu.engines.decoder": "1",
				"nvidia.com/gpu.engines.encoder": "0",
				"nvidia.com/gpu.engines.jpeg":    "1",
				"nvidia.com/gpu.engines.ofa":     "1",
			},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — single + time-slicing not renamed: -MIG-<profile>-SHARED
			name: "single/MIG on, time-sliced",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, oneG5), dp: dpTimeSlicing4},
			want: map[string]string{
				"nvidia.com/gpu.product":  "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED",
				"nvidia.com/gpu.replicas": "4",
				"nvidia.com/gpu.count":    "56",
			},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm newInvalidMigStrategyLabeler — single, invalid ("more
			// than one MIG device type present on node"): -MIG-INVALID, count/replicas/memory 0,
			// sharing-strategy "" (empty)
			name: "single/invalid balanced",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, balanced)},
			want: map[string]string{
				"nvidia.com/gpu.product":          "NVIDIA-A100-SXM4-40GB-MIG-INVALID",
				"nvidia.com/gpu.count":            "0",
				"nvidia.com/gpu.replicas":         "0",
				"nvidia.com/gpu.memory":           "0",
				"nvidia.com/gpu.sharing-strategy": "",
				"nvidia.com/mig.strategy":         "single",
			},
			absent:  []string{"nvidia.com/gpu.slices.gi", "nvidia.com/gpu.engines.copy", "nvidia.com/mig-1g.5gb.count"},
			wantErr: []string{"more than one MIG device type present on node"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm newInvalidMigStrategyLabeler — single, invalid ("devices
			// with MIG enabled and disable detected"): -MIG-INVALID
			name: "single/invalid partial",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migFirst(8, 1, oneG5)},
			want: map[string]string{
				"nvidia.com/gpu.product":          "NVIDIA-A100-SXM4-40GB-MIG-INVALID",
				"nvidia.com/gpu.count":            "0",
				"nvidia.com/gpu.replicas":         "0",
				"nvidia.com/gpu.memory":           "0",
				"nvidia.com/gpu.sharing-strategy": "",
			},
			wantErr: []string{"all devices on the node must be configured with the same migEnabled value"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm newInvalidMigStrategyLabeler — single, MIG on but empty
			// ("at least one MIG device is enabled but empty"): -MIG-INVALID, even with sharing configured
			name: "single/invalid empty MIG",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, noDevices), dp: dpTimeSlicing4},
			want: map[string]string{
				"nvidia.com/gpu.product":          "NVIDIA-A100-SXM4-40GB-MIG-INVALID",
				"nvidia.com/gpu.count":            "0",
				"nvidia.com/gpu.replicas":         "0",
				"nvidia.com/gpu.memory":           "0",
				"nvidia.com/gpu.sharing-strategy": "",
			},
			wantErr: []string{"MIG"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm and internal/resource/nvml-mig-device.go GetAttributes —
			// mixed: per-profile labels; every physical GPU MIG-enabled: gpu.replicas 0, gpu.count all GPUs
			name: "mixed/MIG on",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, oneG5)},
			want: map[string]string{
				"nvidia.com/gpu.product":                 "NVIDIA-A100-SXM4-40GB",
				"nvidia.com/gpu.count":                   "8",
				"nvidia.com/gpu.replicas":                "0",
				"nvidia.com/gpu.sharing-strategy":        SharingNone,
				"nvidia.com/mig.strategy":                "mixed",
				"nvidia.com/mig-1g.5gb.count":            "56",
				"nvidia.com/mig-1g.5gb.replicas":         "1",
				"nvidia.com/mig-1g.5gb.memory":           "4864",
				"nvidia.com/mig-1g.5gb.product":          "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",
				"nvidia.com/mig-1g.5gb.sharing-strategy": SharingNone,
				"nvidia.com/mig-1g.5gb.slices.gi":        "1",
				"nvidia.com/mig-1g.5gb.slices.ci":        "1",
				"nvidia.com/mig-1g.5gb.multiprocessors":  "14",
			},
			absent: []string{"nvidia.com/mig-2g.10gb.count", "nvidia.com/gpu.slices.gi", "nvidia.com/gpu.engines.copy"},
		},
		{
			// stack-facts §3: DP@1b826acc internal/resource/nvml-mig-device.go GetAttributes — mixed:
			// mig-<profile>.engines.{copy,decoder,encoder,jpeg,ofa} (catalog figures, UNVERIFIED)
			name: "mixed/engines",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, balanced)},
			want: map[string]string{
				"nvidia.com/mig-1g.5gb.engines.copy":     "1",
				"nvidia.com/mig-1g.5gb.engines.decoder":  "0",
				"nvidia.com/mig-1g.5gb.engines.encoder":  "0",
				"nvidia.com/mig-1g.5gb.engines.jpeg":     "0",
				"nvidia.com/mig-1g.5gb.engines.ofa":      "0",
				"nvidia.com/mig-3g.20gb.engines.copy":    "3",
				"nvidia.com/mig-3g.20gb.engines.decoder": "2",
				"nvidia.com/mig-3g.20gb.engines.encoder": "0",
				"nvidia.com/mig-3g.20gb.engines.jpeg":    "0",
				"nvidia.com/mig-3g.20gb.engines.ofa":     "0",
			},
		},
		{
			// stack-facts §3: DP@1b826acc internal/resource/nvml-mig-device.go GetAttributes — mixed +me
			// (the . form): mig-1g.10gb.me.engines.* on H100 (catalog figures, UNVERIFIED)
			name: "mixed/+me engines",
			node: advertiseCase{sku: "h100-80gb", count: 2, strategy: MIGStrategyMixed, mig: migAll(2, map[string]int{"1g.10gb+me": 1})},
			want: map[string]string{
				"nvidia.com/mig-1g.10gb.me.engines.copy":    "1",
				"nvidia.com/mig-1g.10gb.me.engines.decoder": "1",
				"nvidia.com/mig-1g.10gb.me.engines.encoder": "0",
				"nvidia.com/mig-1g.10gb.me.engines.jpeg":    "1",
				"nvidia.com/mig-1g.10gb.me.engines.ofa":     "1",
			},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm/mig-strategy.go newGPULabelers — mixed, some GPUs
			// MIG-enabled: gpu.count counts every physical GPU (8), not the 4 advertised nvidia.com/gpu
			name: "mixed/MIG on some GPUs: count",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migFirst(8, 4, oneG5)},
			want: map[string]string{
				"nvidia.com/gpu.product":          "NVIDIA-A100-SXM4-40GB",
				"nvidia.com/gpu.count":            "8",
				"nvidia.com/gpu.replicas":         "1",
				"nvidia.com/gpu.sharing-strategy": SharingNone,
				"nvidia.com/mig-1g.5gb.count":     "28",
			},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm/mig-strategy.go newGPULabelers — mixed, some GPUs
			// MIG-enabled and time-sliced: a non-MIG GPU brings the configured replicas back; count all 8
			name: "mixed/MIG on some GPUs, time-sliced",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migFirst(8, 4, oneG5), dp: dpTimeSlicingGPU4},
			want: map[string]string{
				"nvidia.com/gpu.product":          "NVIDIA-A100-SXM4-40GB-SHARED",
				"nvidia.com/gpu.count":            "8",
				"nvidia.com/gpu.replicas":         "4",
				"nvidia.com/gpu.sharing-strategy": SharingTimeSlicing,
			},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — mixed, every GPU MIG-enabled: gpu.replicas 0 and
			// sharing-strategy none even with nvidia.com/gpu time-sliced; no -SHARED
			name: "mixed/MIG on, nvidia.com/gpu time-sliced",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, oneG5), dp: dpTimeSlicingGPU4},
			want: map[string]string{
				"nvidia.com/gpu.product":          "NVIDIA-A100-SXM4-40GB",
				"nvidia.com/gpu.count":            "8",
				"nvidia.com/gpu.replicas":         "0",
				"nvidia.com/gpu.sharing-strategy": SharingNone,
			},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — mixed, balanced: one label set per profile
			name: "mixed/balanced",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, balanced)},
			want: map[string]string{
				"nvidia.com/mig-1g.5gb.count":            "16",
				"nvidia.com/mig-2g.10gb.count":           "8",
				"nvidia.com/mig-2g.10gb.memory":          "9856",
				"nvidia.com/mig-2g.10gb.slices.gi":       "2",
				"nvidia.com/mig-3g.20gb.count":           "8",
				"nvidia.com/mig-3g.20gb.product":         "NVIDIA-A100-SXM4-40GB-MIG-3g.20gb",
				"nvidia.com/mig-3g.20gb.multiprocessors": "42",
			},
		},
		{
			// stack-facts §3: DP@1b826acc internal/resource/nvml-mig-device.go GetAttributes — memory is
			// NVML's MIG memory, not the GB in the name (stack-facts §5 UNVERIFIED dump: H100-80GB-HBM3
			// 3g.40gb = 40448 MiB, 60 SMs)
			name: "mixed/H100 3g.40gb memory and SMs",
			node: advertiseCase{sku: "h100-80gb", count: 1, strategy: MIGStrategyMixed, mig: migAll(1, map[string]int{"3g.40gb": 2})},
			want: map[string]string{
				"nvidia.com/mig-3g.40gb.memory":          "40448",
				"nvidia.com/mig-3g.40gb.multiprocessors": "60",
			},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — mixed + time-slicing a MIG resource, not renamed: -SHARED, replicas, strategy
			name: "mixed/MIG time-sliced",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, oneG5),
				dp: "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/mig-1g.5gb\n      replicas: 2\n"},
			want: map[string]string{
				"nvidia.com/mig-1g.5gb.product":          "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED",
				"nvidia.com/mig-1g.5gb.replicas":         "2",
				"nvidia.com/mig-1g.5gb.sharing-strategy": SharingTimeSlicing,
			},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — mixed: the profile with + turned into . (so the
			// product label holds only [A-Za-z0-9-_.]): NVIDIA-A100-SXM4-40GB-MIG-1g.5gb.me
			name: "mixed/+me product",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, oneG5me)},
			want: map[string]string{
				"nvidia.com/mig-1g.5gb.me.count":   "8",
				"nvidia.com/mig-1g.5gb.me.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb.me",
			},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — mixed: A30 2g.12gb+me (stack-facts §5) labels as mig-2g.12gb.me
			name: "mixed/A30 2g.12gb+me",
			node: advertiseCase{sku: "a30-24gb", count: 1, strategy: MIGStrategyMixed, mig: migAll(1, map[string]int{"2g.12gb+me": 1})},
			want: map[string]string{
				"nvidia.com/mig-2g.12gb.me.count":   "1",
				"nvidia.com/mig-2g.12gb.me.product": "NVIDIA-A30-MIG-2g.12gb.me",
			},
		},
		{
			// stack-facts §3: DP@1b826acc internal/lm — single: product <model>-MIG-<profile> with + turned into .
			name: "single/+me product",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, oneG5me)},
			want: map[string]string{
				"nvidia.com/gpu.count":   "8",
				"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb.me",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRowCheck(t)
			defer r.finish(tc.bug)
			got := tc.node.run(t)
			checkErr(r, got.Err, tc.wantErr...)
			if tc.noLabels && len(got.Labels) != 0 {
				r.Errorf("want no GFD labels, got %v", got.Labels)
			}
			checkLabels(r, got.Labels, tc.want, tc.absent...)
		})
	}
}

func TestSanitizeProduct(t *testing.T) {
	tests := []struct{ in, want string }{
		// stack-facts §3: DP@1b826acc internal/lm — spaces become -
		{"NVIDIA A100-SXM4-40GB", "NVIDIA-A100-SXM4-40GB"},
		// stack-facts §3: DP@1b826acc internal/lm — spaces become -
		{"Tesla T4", "Tesla-T4"},
		// stack-facts §3: DP@1b826acc internal/lm — characters outside [A-Za-z0-9-_. ] are dropped
		{"NVIDIA GeForce RTX 3090 (TM)", "NVIDIA-GeForce-RTX-3090-TM"},
		// stack-facts §3: DP@1b826acc internal/lm — characters outside [A-Za-z0-9-_. ] are dropped
		{"NVIDIA A100® PCIe/80GB", "NVIDIA-A100-PCIe80GB"},
		// stack-facts §3: DP@1b826acc internal/lm — - _ . are kept
		{"A_B.C-D", "A_B.C-D"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := sanitizeProduct(tc.in); got != tc.want {
				t.Errorf("sanitizeProduct(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestAdvertiseLabelsAreValid checks every GFD label is a valid Kubernetes
// label: the node update would be refused otherwise.
func TestAdvertiseLabelsAreValid(t *testing.T) {
	tests := []struct {
		name string
		node advertiseCase
		bug  string
	}{
		// stack-facts §3: DP@1b826acc internal/lm — whole GPUs, with the version, mode, machine and vGPU labels
		{"whole GPUs", advertiseCase{sku: "h200-141gb", count: 8, strategy: MIGStrategyNone}, ""},
		// stack-facts §3: DP@1b826acc internal/lm — time-sliced
		{"time-sliced", advertiseCase{sku: "t4", count: 2, dp: dpTimeSlicing4}, ""},
		// stack-facts §3: DP@1b826acc internal/lm/nvml.go newSharingLabeler — MPS, mps.capable
		{"mps", advertiseCase{sku: "l40s", count: 2, dp: dpMPS3}, ""},
		// stack-facts §3: DP@1b826acc internal/lm — single MIG, with gpu.engines.*
		{"single MIG", advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, oneG5)}, ""},
		// stack-facts §3: DP@1b826acc internal/lm newInvalidMigStrategyLabeler — single invalid, sharing-strategy ""
		{"single invalid", advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, balanced)}, ""},
		// stack-facts §3: DP@1b826acc internal/lm — mixed balanced, with mig-<profile>.engines.*
		{"mixed balanced", advertiseCase{sku: "h100-80gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, map[string]int{"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1})}, ""},
		// stack-facts §3: DP@1b826acc internal/lm — product: characters outside [A-Za-z0-9-_. ] dropped / + turned into .
		{"mixed +me", advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, oneG5me)}, ""},
		// stack-facts §3: DP@1b826acc internal/lm — product: characters outside [A-Za-z0-9-_. ] dropped / + turned into .
		{"single +me", advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, oneG5me)}, ""},
		// stack-facts §3: DP@1b826acc internal/lm — mixed A30 2g.12gb+me
		{"mixed A30 +me", advertiseCase{sku: "a30-24gb", count: 2, strategy: MIGStrategyMixed, mig: migAll(2, map[string]int{"2g.12gb+me": 1, "1g.6gb": 2})}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRowCheck(t)
			defer r.finish(tc.bug)
			got := tc.node.run(t)
			if len(got.Labels) == 0 {
				r.Errorf("no labels (err %v)", got.Err)
			}
			for _, k := range sortedKeys(got.Labels) {
				for _, msg := range validation.IsQualifiedName(k) {
					r.Errorf("label key %q: %s", k, msg)
				}
				for _, msg := range validation.IsValidLabelValue(got.Labels[k]) {
					r.Errorf("label %s value %q: %s", k, got.Labels[k], msg)
				}
			}
		})
	}
}

func TestAdvertiseIsPure(t *testing.T) {
	// not in facts: a simulator property — the controller recomputes a node's advertisement
	// every reconcile, so the same node and config must always advertise the same (which is
	// also why gfd.timestamp is not written)
	node := advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, balanced), dp: dpTimeSlicing4}
	a, b := node.run(t), node.run(t)
	checkResources(t, a.Resources, b.Resources)
	checkLabels(t, b.Labels, a.Labels)
	if len(a.Labels) != len(b.Labels) {
		t.Errorf("label counts differ: %d vs %d", len(a.Labels), len(b.Labels))
	}
}
