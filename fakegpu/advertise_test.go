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

// TestAdvertiseResourceNames covers the resource-name table of the facts
// doc, section 2, and time-slicing's multiplication of counts.
func TestAdvertiseResourceNames(t *testing.T) {
	tests := []struct {
		name    string
		node    advertiseCase
		want    map[string]int64
		wantErr []string
		bug     string
	}{
		{
			// DP: internal/rm — none, MIG off: nvidia.com/gpu per GPU
			name: "none/MIG off",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyNone},
			want: map[string]int64{"nvidia.com/gpu": 8},
		},
		{
			// DP: internal/rm — none, MIG on: nvidia.com/gpu, whole GPU, MIG ignored
			name: "none/MIG on",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyNone, mig: migAll(8, oneG5)},
			want: map[string]int64{"nvidia.com/gpu": 8},
		},
		{
			// DP: internal/rm — an empty strategy is the plugin default, none
			name: "unset strategy is none",
			node: advertiseCase{sku: "a100-40gb", count: 2, mig: migAll(2, oneG5)},
			want: map[string]int64{"nvidia.com/gpu": 2},
		},
		{
			// DP: internal/rm — single, MIG off: nvidia.com/gpu per GPU
			name: "single/MIG off",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle},
			want: map[string]int64{"nvidia.com/gpu": 8},
		},
		{
			// DP: internal/rm — single, MIG on: nvidia.com/gpu, one per MIG device
			name: "single/MIG on",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, oneG5)},
			want: map[string]int64{"nvidia.com/gpu": 56},
		},
		{
			// DP: internal/rm — single, MIG on, another single profile
			name: "single/MIG on 2g.10gb",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, twoG10)},
			want: map[string]int64{"nvidia.com/gpu": 24},
		},
		{
			// DP: internal/rm — single: "all devices on the node must be configured with the same migEnabled value"
			name:    "single/MIG on some GPUs",
			node:    advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migFirst(8, 4, oneG5)},
			want:    map[string]int64{},
			wantErr: []string{"all devices on the node must be configured with the same migEnabled value"},
		},
		{
			// DP: internal/rm — single: "more than one MIG device type present on node" (one GPU)
			name:    "single/mixed profiles on each GPU",
			node:    advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, balanced)},
			want:    map[string]int64{},
			wantErr: []string{"more than one MIG device type present on node"},
		},
		{
			// DP: internal/rm — single: "more than one MIG device type present on node" (across GPUs)
			name:    "single/different profile per GPU",
			node:    advertiseCase{sku: "a100-40gb", count: 2, strategy: MIGStrategySingle, mig: []GPUState{{MIGEnabled: true, Devices: oneG5}, {MIGEnabled: true, Devices: twoG10}}},
			want:    map[string]int64{},
			wantErr: []string{"more than one MIG device type present on node"},
		},
		{
			// DP: internal/rm — single: every GPU must be MIG-enabled with the same single
			// profile; MIG-enabled GPUs with no MIG devices (layout all-enabled) have none,
			// so the plugin fails ("device N has no MIG devices configured").
			name:    "single/MIG on without MIG devices",
			node:    advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, noDevices)},
			want:    map[string]int64{},
			wantErr: []string{"MIG"},
		},
		{
			// DP: internal/rm — mixed, MIG off: nvidia.com/gpu per GPU
			name: "mixed/MIG off",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed},
			want: map[string]int64{"nvidia.com/gpu": 8},
		},
		{
			// DP: internal/rm — mixed names MIG devices nvidia.com/mig-<profile>
			name: "mixed/MIG on",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, oneG5)},
			want: map[string]int64{"nvidia.com/mig-1g.5gb": 56},
		},
		{
			// DP: internal/rm — mixed, several profiles per GPU
			name: "mixed/balanced",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, balanced)},
			want: map[string]int64{"nvidia.com/mig-1g.5gb": 16, "nvidia.com/mig-2g.10gb": 8, "nvidia.com/mig-3g.20gb": 8},
		},
		{
			// DP: internal/rm — mixed turns + into .: nvidia.com/mig-1g.5gb.me
			name: "mixed/+me profile",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, oneG5me)},
			want: map[string]int64{"nvidia.com/mig-1g.5gb.me": 8},
		},
		{
			// DP: internal/rm — mixed, some GPUs MIG-enabled: both kinds advertised
			name: "mixed/MIG on some GPUs",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migFirst(8, 4, oneG5)},
			want: map[string]int64{"nvidia.com/gpu": 4, "nvidia.com/mig-1g.5gb": 28},
		},
		{
			// DP: internal/rm — mixed, MIG-enabled GPUs without MIG devices advertise nothing
			name: "mixed/MIG on without MIG devices",
			node: advertiseCase{sku: "a100-40gb", count: 2, strategy: MIGStrategyMixed, mig: migAll(2, noDevices)},
			want: map[string]int64{},
		},
		{
			// DP: internal/rm — mixed on H100: profile names come from the GPU
			name: "mixed/H100 1g.10gb",
			node: advertiseCase{sku: "h100-80gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, oneG10)},
			want: map[string]int64{"nvidia.com/mig-1g.10gb": 56},
		},
		{
			// DP: internal/rm — the device plugin config's flags.migStrategy applies when the
			// ClusterPolicy sets none (GO leaves MIG_STRATEGY unset for an empty strategy)
			name: "config flags.migStrategy mixed",
			node: advertiseCase{sku: "a100-40gb", count: 8, dp: "version: v1\nflags:\n  migStrategy: mixed\n", mig: migAll(8, oneG5)},
			want: map[string]int64{"nvidia.com/mig-1g.5gb": 56},
		},
		{
			// DP: internal/rm — time-slicing, renameByDefault: 1 L4 × 4 = nvidia.com/gpu.shared: 4, no nvidia.com/gpu
			name: "time-slicing renameByDefault",
			node: advertiseCase{sku: "l4", count: 1, strategy: MIGStrategyNone, dp: dpTimeSlicing4Renamed},
			want: map[string]int64{"nvidia.com/gpu.shared": 4},
		},
		{
			// DP: internal/rm — time-slicing, no rename: 1 L4 × 4 = nvidia.com/gpu: 4
			name: "time-slicing",
			node: advertiseCase{sku: "l4", count: 1, strategy: MIGStrategyNone, dp: dpTimeSlicing4},
			want: map[string]int64{"nvidia.com/gpu": 4},
		},
		{
			// DP: internal/rm — time-slicing multiplies per GPU: 4 L4 × 4 = 16
			name: "time-slicing 4 GPUs",
			node: advertiseCase{sku: "l4", count: 4, strategy: MIGStrategyNone, dp: dpTimeSlicing4},
			want: map[string]int64{"nvidia.com/gpu": 16},
		},
		{
			// DP: internal/rm — explicit rename: the replicas go to the new name only
			name: "time-slicing explicit rename",
			node: advertiseCase{sku: "l4", count: 2, dp: "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      rename: gpu-ts\n      replicas: 4\n"},
			want: map[string]int64{"nvidia.com/gpu-ts": 8},
		},
		{
			// DP: internal/rm — MPS multiplies the count as well: 2 L4 × 3 = 6
			name: "mps",
			node: advertiseCase{sku: "l4", count: 2, dp: dpMPS3},
			want: map[string]int64{"nvidia.com/gpu": 6},
		},
		{
			// DP: api/config/v1 — both set, MPS wins: 2 L4 × MPS's 3, not time-slicing's 4
			name: "time-slicing and mps: mps wins",
			node: advertiseCase{sku: "l4", count: 2, dp: "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 3\n"},
			want: map[string]int64{"nvidia.com/gpu": 6},
		},
		{
			// DP: internal/rm — time-slicing a MIG resource under mixed, renameByDefault
			name: "time-slicing mixed MIG resource",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, oneG5),
				dp: "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n    - name: nvidia.com/mig-1g.5gb\n      replicas: 2\n"},
			want: map[string]int64{"nvidia.com/mig-1g.5gb.shared": 112},
		},
		{
			// DP: internal/rm — time-slicing under single: the MIG devices are nvidia.com/gpu
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

// TestAdvertiseLabels covers the GFD labels of the facts doc, section 3.
func TestAdvertiseLabels(t *testing.T) {
	tests := []struct {
		name   string
		node   advertiseCase
		want   map[string]string
		absent []string
		bug    string
	}{
		{
			// DP: internal/lm — whole GPUs: product sanitised, count, replicas 1, memory, arch, driver
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
				"nvidia.com/gpu.present":                  "true",
				"nvidia.com/cuda.driver-version.full":     FakeDriverVersion,
				"nvidia.com/cuda.driver-version.major":    "550",
				"nvidia.com/cuda.driver-version.minor":    "90",
				"nvidia.com/cuda.driver-version.revision": "07",
			},
			absent: []string{"nvidia.com/mig.strategy"},
		},
		{
			// DP: internal/lm — spaces become -: "NVIDIA H100 80GB HBM3" → NVIDIA-H100-80GB-HBM3
			name: "H100 product spaces",
			node: advertiseCase{sku: "h100-80gb", count: 1, strategy: MIGStrategyNone},
			want: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.family": "hopper", "nvidia.com/gpu.compute.major": "9"},
		},
		{
			// DP: internal/lm — mig.capable=false on a GPU without MIG
			name: "L4 not MIG-capable",
			node: advertiseCase{sku: "l4", count: 1, strategy: MIGStrategyNone},
			want: map[string]string{"nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/mig.capable": "false", "nvidia.com/gpu.replicas": "1"},
		},
		{
			// DP: internal/lm — -SHARED when replicas > 1 and not renamed; gpu.replicas = configured replicas
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
			// DP: internal/lm — renameByDefault: no -SHARED suffix
			name: "time-slicing renameByDefault",
			node: advertiseCase{sku: "l4", count: 1, strategy: MIGStrategyNone, dp: dpTimeSlicing4Renamed},
			want: map[string]string{
				"nvidia.com/gpu.product":          "NVIDIA-L4",
				"nvidia.com/gpu.replicas":         "4",
				"nvidia.com/gpu.sharing-strategy": SharingTimeSlicing,
			},
		},
		{
			// DP: internal/lm — an explicit rename: no -SHARED suffix
			name: "time-slicing explicit rename",
			node: advertiseCase{sku: "l4", count: 1, dp: "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      rename: gpu-ts\n      replicas: 4\n"},
			want: map[string]string{"nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.replicas": "4"},
		},
		{
			// DP: internal/lm — sharing config for another resource: GPU not shared, no suffix, replicas 1
			name: "sharing another resource",
			node: advertiseCase{sku: "l4", count: 1, dp: "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/mig-1g.5gb\n      replicas: 4\n"},
			want: map[string]string{"nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.replicas": "1", "nvidia.com/gpu.sharing-strategy": SharingNone},
		},
		{
			// DP: internal/lm — sharing-strategy=mps under MPS
			name: "mps",
			node: advertiseCase{sku: "l4", count: 2, dp: dpMPS3},
			want: map[string]string{"nvidia.com/gpu.replicas": "3", "nvidia.com/gpu.sharing-strategy": SharingMPS},
		},
		{
			// DP: internal/lm — mig.strategy is set for single
			name: "mig.strategy single",
			node: advertiseCase{sku: "l4", count: 1, strategy: MIGStrategySingle},
			want: map[string]string{"nvidia.com/mig.strategy": "single", "nvidia.com/gpu.product": "NVIDIA-L4"},
		},
		{
			// DP: internal/lm — mig.strategy is set for mixed
			name: "mig.strategy mixed",
			node: advertiseCase{sku: "a100-40gb", count: 1, strategy: MIGStrategyMixed},
			want: map[string]string{"nvidia.com/mig.strategy": "mixed"},
		},
		{
			// DP: internal/lm — mig.strategy is never set for none, even with MIG on
			name:   "mig.strategy none",
			node:   advertiseCase{sku: "a100-40gb", count: 1, strategy: MIGStrategyNone, mig: migAll(1, oneG5)},
			absent: []string{"nvidia.com/mig.strategy"},
		},
		{
			// DP: internal/lm — gpu.replicas is 0 for MIG-enabled GPUs (strategy none too)
			name: "none/MIG on: replicas 0",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyNone, mig: migAll(8, oneG5)},
			want: map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.replicas": "0"},
		},
		{
			// DP: internal/lm — single: product <model>-MIG-<profile>, count = MIG devices, memory = MIG memory
			name: "single/MIG on",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, oneG5)},
			want: map[string]string{
				"nvidia.com/gpu.product":         "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",
				"nvidia.com/gpu.count":           "56",
				"nvidia.com/gpu.memory":          "4864",
				"nvidia.com/gpu.replicas":        "1",
				"nvidia.com/mig.strategy":        "single",
				"nvidia.com/gpu.slices.gi":       "1",
				"nvidia.com/gpu.slices.ci":       "1",
				"nvidia.com/gpu.multiprocessors": "14",
			},
		},
		{
			// DP: internal/lm — single + time-slicing not renamed: -MIG-<profile>-SHARED
			name: "single/MIG on, time-sliced",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, oneG5), dp: dpTimeSlicing4},
			want: map[string]string{
				"nvidia.com/gpu.product":  "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED",
				"nvidia.com/gpu.replicas": "4",
				"nvidia.com/gpu.count":    "56",
			},
		},
		{
			// DP: internal/lm — single, invalid (several profiles): -MIG-INVALID, count/replicas/memory 0
			name: "single/invalid balanced",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, balanced)},
			want: map[string]string{
				"nvidia.com/gpu.product":  "NVIDIA-A100-SXM4-40GB-MIG-INVALID",
				"nvidia.com/gpu.count":    "0",
				"nvidia.com/gpu.replicas": "0",
				"nvidia.com/gpu.memory":   "0",
				"nvidia.com/mig.strategy": "single",
			},
		},
		{
			// DP: internal/lm — single, invalid (MIG on some GPUs only): -MIG-INVALID
			name: "single/invalid partial",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migFirst(8, 1, oneG5)},
			want: map[string]string{
				"nvidia.com/gpu.product":  "NVIDIA-A100-SXM4-40GB-MIG-INVALID",
				"nvidia.com/gpu.count":    "0",
				"nvidia.com/gpu.replicas": "0",
				"nvidia.com/gpu.memory":   "0",
			},
		},
		{
			// DP: internal/lm — single, MIG on but empty ("at least one MIG device is enabled but empty"): -MIG-INVALID
			name: "single/invalid empty MIG",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, noDevices)},
			want: map[string]string{
				"nvidia.com/gpu.product":  "NVIDIA-A100-SXM4-40GB-MIG-INVALID",
				"nvidia.com/gpu.count":    "0",
				"nvidia.com/gpu.replicas": "0",
				"nvidia.com/gpu.memory":   "0",
			},
		},
		{
			// DP: internal/lm — mixed: per-profile labels; physical GPUs MIG-enabled: replicas 0
			name: "mixed/MIG on",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, oneG5)},
			want: map[string]string{
				"nvidia.com/gpu.product":                 "NVIDIA-A100-SXM4-40GB",
				"nvidia.com/gpu.replicas":                "0",
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
			absent: []string{"nvidia.com/mig-2g.10gb.count", "nvidia.com/gpu.slices.gi"},
		},
		{
			// DP: internal/lm — mixed, balanced: one label set per profile
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
			// DP: internal/lm — mixed + time-slicing a MIG resource, not renamed: -SHARED, replicas, strategy
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
			// DP: internal/lm — the MIG device name is the profile with + turned into . (so the
			// product label holds only [A-Za-z0-9-_.]): NVIDIA-A100-SXM4-40GB-MIG-1g.5gb.me
			name: "mixed/+me product",
			node: advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, oneG5me)},
			want: map[string]string{
				"nvidia.com/mig-1g.5gb.me.count":   "8",
				"nvidia.com/mig-1g.5gb.me.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb.me",
			},
		},
		{
			// DP: internal/lm — single: product <model>-MIG-<profile> with + turned into .
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
			checkLabels(r, got.Labels, tc.want, tc.absent...)
		})
	}
}

func TestSanitizeProduct(t *testing.T) {
	tests := []struct{ in, want string }{
		// DP: internal/lm — spaces become -
		{"NVIDIA A100-SXM4-40GB", "NVIDIA-A100-SXM4-40GB"},
		// DP: internal/lm — spaces become -
		{"Tesla T4", "Tesla-T4"},
		// DP: internal/lm — characters outside [A-Za-z0-9-_. ] are dropped
		{"NVIDIA GeForce RTX 3090 (TM)", "NVIDIA-GeForce-RTX-3090-TM"},
		// DP: internal/lm — characters outside [A-Za-z0-9-_. ] are dropped
		{"NVIDIA A100® PCIe/80GB", "NVIDIA-A100-PCIe80GB"},
		// DP: internal/lm — - _ . are kept
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
// label: the kubelet/NFD would refuse the node update otherwise.
func TestAdvertiseLabelsAreValid(t *testing.T) {
	tests := []struct {
		name string
		node advertiseCase
		bug  string
	}{
		// DP: internal/lm — whole GPUs
		{"whole GPUs", advertiseCase{sku: "h200-141gb", count: 8, strategy: MIGStrategyNone}, ""},
		// DP: internal/lm — time-sliced
		{"time-sliced", advertiseCase{sku: "t4", count: 2, dp: dpTimeSlicing4}, ""},
		// DP: internal/lm — single MIG
		{"single MIG", advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, oneG5)}, ""},
		// DP: internal/lm — single invalid
		{"single invalid", advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, balanced)}, ""},
		// DP: internal/lm — mixed balanced
		{"mixed balanced", advertiseCase{sku: "h100-80gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, map[string]int{"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1})}, ""},
		// DP: internal/lm — product: characters outside [A-Za-z0-9-_. ] dropped / + turned into .
		{"mixed +me", advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, oneG5me)}, ""},
		// DP: internal/lm — product: characters outside [A-Za-z0-9-_. ] dropped / + turned into .
		{"single +me", advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategySingle, mig: migAll(8, oneG5me)}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRowCheck(t)
			defer r.finish(tc.bug)
			got := tc.node.run(t)
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
	// DP: internal/rm — the same node and config always advertise the same
	node := advertiseCase{sku: "a100-40gb", count: 8, strategy: MIGStrategyMixed, mig: migAll(8, balanced), dp: dpTimeSlicing4}
	a, b := node.run(t), node.run(t)
	checkResources(t, a.Resources, b.Resources)
	checkLabels(t, b.Labels, a.Labels)
	if len(a.Labels) != len(b.Labels) {
		t.Errorf("label counts differ: %d vs %d", len(a.Labels), len(b.Labels))
	}
}
