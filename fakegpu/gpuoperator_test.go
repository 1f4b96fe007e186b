// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"slices"
	"testing"

	"sigs.k8s.io/yaml"
)

// Files of the GPU Operator module, read unmodified.
const (
	goMIGPartedConfigMap  = "assets/state-mig-manager/0400_configmap.yaml"
	goSampleClusterPolicy = "config/samples/v1_clusterpolicy.yaml"
)

// configMapDoc is the part of a ConfigMap manifest the tests read.
type configMapDoc struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Data map[string]string `json:"data"`
}

// goDefaultMIGParted parses the GPU Operator's default mig-parted ConfigMap
// and its config.yaml.
func goDefaultMIGParted(t *testing.T) (configMapDoc, *MIGPartedConfig) {
	t.Helper()
	var cm configMapDoc
	if err := yaml.Unmarshal(readGPUOperatorFile(t, goMIGPartedConfigMap), &cm); err != nil {
		t.Fatalf("%s: %v", goMIGPartedConfigMap, err)
	}
	doc, ok := cm.Data["config.yaml"]
	if !ok {
		t.Fatalf("%s: no data[config.yaml] (keys %v)", goMIGPartedConfigMap, sortedKeys(cm.Data))
	}
	cfg, err := ParseMIGPartedConfig([]byte(doc))
	if err != nil {
		t.Fatalf("%s data[config.yaml]: ParseMIGPartedConfig: %v", goMIGPartedConfigMap, err)
	}
	return cm, cfg
}

func TestGPUOperatorDefaultMIGPartedConfigLoads(t *testing.T) {
	cm, cfg := goDefaultMIGParted(t)
	// stack-facts §4 step 2: GOmod mounts ConfigMap default-mig-parted-config — the default ConfigMap is default-mig-parted-config, key config.yaml
	if cm.Kind != "ConfigMap" || cm.Metadata.Name != DefaultMIGPartedConfigMap {
		t.Errorf("kind/name = %s/%s, want ConfigMap/%s", cm.Kind, cm.Metadata.Name, DefaultMIGPartedConfigMap)
	}
	names := cfg.Names()
	for _, want := range []string{
		"all-disabled", "all-enabled", "all-balanced",
		"all-1g.5gb", "all-1g.10gb", "all-1g.18gb", "all-2g.10gb", "all-3g.20gb", "all-7g.40gb", "all-1g.6gb",
	} {
		if !slices.Contains(names, want) {
			t.Errorf("layout %s missing (have %v)", want, names)
		}
	}
}

// TestGPUOperatorDefaultMIGLayouts applies the GPU Operator's own
// mig-parted layouts to 8-GPU nodes and checks what the device plugin
// advertises under the single (the sample ClusterPolicy's) and mixed strategies.
func TestGPUOperatorDefaultMIGLayouts(t *testing.T) {
	_, cfg := goDefaultMIGParted(t)
	const gpus = 8
	invalid := map[string]int64{}
	tests := []struct {
		name     string
		sku      string
		layout   string
		strategy string
		want     map[string]int64
		applyErr bool     // mig-parted refuses the layout for this GPU (state failed)
		wantErr  []string // the device plugin fails (nothing advertised)
		product  string   // nvidia.com/gpu.product, when checked
	}{
		// --- A100-40GB ---
		// stack-facts §2: DP@1b826acc internal/rm — mixed: 8 × 7 = 56 nvidia.com/mig-1g.5gb
		{"A100-40GB all-1g.5gb mixed", "a100-40gb", "all-1g.5gb", MIGStrategyMixed, map[string]int64{"nvidia.com/mig-1g.5gb": 56}, false, nil, "NVIDIA-A100-SXM4-40GB"},
		// stack-facts §2: DP@1b826acc internal/rm — single: 8 × 7 = 56 nvidia.com/gpu; stack-facts §3: internal/lm — product -MIG-1g.5gb
		{"A100-40GB all-1g.5gb single", "a100-40gb", "all-1g.5gb", MIGStrategySingle, map[string]int64{"nvidia.com/gpu": 56}, false, nil, "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"},
		// stack-facts §2: DP@1b826acc internal/rm — mixed, all-balanced (A100-40GB entry): 2×1g.5gb + 2g.10gb + 3g.20gb per GPU
		{"A100-40GB all-balanced mixed", "a100-40gb", "all-balanced", MIGStrategyMixed, map[string]int64{"nvidia.com/mig-1g.5gb": 16, "nvidia.com/mig-2g.10gb": 8, "nvidia.com/mig-3g.20gb": 8}, false, nil, ""},
		// stack-facts §2: DP@1b826acc internal/rm — single + all-balanced: "more than one MIG device type present on node", nothing advertised
		{"A100-40GB all-balanced single", "a100-40gb", "all-balanced", MIGStrategySingle, invalid, false, []string{"more than one MIG device type present on node"}, "NVIDIA-A100-SXM4-40GB-MIG-INVALID"},
		// stack-facts §2: DP@1b826acc internal/rm — all-disabled: whole GPUs
		{"A100-40GB all-disabled mixed", "a100-40gb", "all-disabled", MIGStrategyMixed, map[string]int64{"nvidia.com/gpu": 8}, false, nil, "NVIDIA-A100-SXM4-40GB"},
		// stack-facts §2: DP@1b826acc internal/rm — all-disabled: whole GPUs
		{"A100-40GB all-disabled single", "a100-40gb", "all-disabled", MIGStrategySingle, map[string]int64{"nvidia.com/gpu": 8}, false, nil, "NVIDIA-A100-SXM4-40GB"},
		// stack-facts §5: MP@bd7160f4 config-default.yaml — all-1g.10gb's A100-40GB entry (by device-filter) is 4 × 1g.10gb
		{"A100-40GB all-1g.10gb mixed", "a100-40gb", "all-1g.10gb", MIGStrategyMixed, map[string]int64{"nvidia.com/mig-1g.10gb": 32}, false, nil, ""},

		// --- A100-80GB ---
		// stack-facts §2: DP@1b826acc internal/rm — mixed: 8 × 7 = 56 nvidia.com/mig-1g.10gb
		{"A100-80GB all-1g.10gb mixed", "a100-80gb", "all-1g.10gb", MIGStrategyMixed, map[string]int64{"nvidia.com/mig-1g.10gb": 56}, false, nil, ""},
		// stack-facts §2: DP@1b826acc internal/rm — single: 56 nvidia.com/gpu
		{"A100-80GB all-1g.10gb single", "a100-80gb", "all-1g.10gb", MIGStrategySingle, map[string]int64{"nvidia.com/gpu": 56}, false, nil, "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"},
		// stack-facts §2: DP@1b826acc internal/rm — mixed, all-balanced (A100-80GB entry): 2×1g.10gb + 2g.20gb + 3g.40gb per GPU
		{"A100-80GB all-balanced mixed", "a100-80gb", "all-balanced", MIGStrategyMixed, map[string]int64{"nvidia.com/mig-1g.10gb": 16, "nvidia.com/mig-2g.20gb": 8, "nvidia.com/mig-3g.40gb": 8}, false, nil, ""},
		// stack-facts §2: DP@1b826acc internal/rm — single + all-balanced: invalid, nothing advertised
		{"A100-80GB all-balanced single", "a100-80gb", "all-balanced", MIGStrategySingle, invalid, false, []string{"more than one MIG device type present on node"}, "NVIDIA-A100-SXM4-80GB-MIG-INVALID"},
		// stack-facts §2: DP@1b826acc internal/rm — all-disabled: whole GPUs
		{"A100-80GB all-disabled mixed", "a100-80gb", "all-disabled", MIGStrategyMixed, map[string]int64{"nvidia.com/gpu": 8}, false, nil, ""},
		// stack-facts §2: DP@1b826acc internal/rm — all-disabled: whole GPUs
		{"A100-80GB all-disabled single", "a100-80gb", "all-disabled", MIGStrategySingle, map[string]int64{"nvidia.com/gpu": 8}, false, nil, ""},
		// stack-facts §4 step 8: MP@bd7160f4 pkg/mig/reconfigure — A100-80GB has no 1g.5gb: the layout fails
		{"A100-80GB all-1g.5gb fails", "a100-80gb", "all-1g.5gb", MIGStrategyMixed, nil, true, nil, ""},

		// --- H100-80GB ---
		// stack-facts §2: DP@1b826acc internal/rm — mixed: 56 nvidia.com/mig-1g.10gb
		{"H100-80GB all-1g.10gb mixed", "h100-80gb", "all-1g.10gb", MIGStrategyMixed, map[string]int64{"nvidia.com/mig-1g.10gb": 56}, false, nil, ""},
		// stack-facts §2: DP@1b826acc internal/rm — single: 56 nvidia.com/gpu
		{"H100-80GB all-1g.10gb single", "h100-80gb", "all-1g.10gb", MIGStrategySingle, map[string]int64{"nvidia.com/gpu": 56}, false, nil, "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"},
		// stack-facts §2: DP@1b826acc internal/rm — mixed, all-balanced (H100-80GB entry): 2×1g.10gb + 2g.20gb + 3g.40gb per GPU
		{"H100-80GB all-balanced mixed", "h100-80gb", "all-balanced", MIGStrategyMixed, map[string]int64{"nvidia.com/mig-1g.10gb": 16, "nvidia.com/mig-2g.20gb": 8, "nvidia.com/mig-3g.40gb": 8}, false, nil, ""},
		// stack-facts §2: DP@1b826acc internal/rm — single + all-balanced: invalid, nothing advertised
		{"H100-80GB all-balanced single", "h100-80gb", "all-balanced", MIGStrategySingle, invalid, false, []string{"more than one MIG device type present on node"}, "NVIDIA-H100-80GB-HBM3-MIG-INVALID"},
		// stack-facts §2: DP@1b826acc internal/rm — all-disabled: whole GPUs
		{"H100-80GB all-disabled mixed", "h100-80gb", "all-disabled", MIGStrategyMixed, map[string]int64{"nvidia.com/gpu": 8}, false, nil, ""},
		// stack-facts §2: DP@1b826acc internal/rm — all-disabled: whole GPUs
		{"H100-80GB all-disabled single", "h100-80gb", "all-disabled", MIGStrategySingle, map[string]int64{"nvidia.com/gpu": 8}, false, nil, "NVIDIA-H100-80GB-HBM3"},

		// --- H200-141GB ---
		// stack-facts §2: DP@1b826acc internal/rm — mixed: 56 nvidia.com/mig-1g.18gb
		{"H200 all-1g.18gb mixed", "h200-141gb", "all-1g.18gb", MIGStrategyMixed, map[string]int64{"nvidia.com/mig-1g.18gb": 56}, false, nil, ""},
		// stack-facts §2: DP@1b826acc internal/rm — single: 56 nvidia.com/gpu
		{"H200 all-1g.18gb single", "h200-141gb", "all-1g.18gb", MIGStrategySingle, map[string]int64{"nvidia.com/gpu": 56}, false, nil, "NVIDIA-H200-MIG-1g.18gb"},
		// stack-facts §2: DP@1b826acc internal/rm — mixed, all-balanced (H200 entry): 2×1g.18gb + 2g.35gb + 3g.71gb per GPU
		{"H200 all-balanced mixed", "h200-141gb", "all-balanced", MIGStrategyMixed, map[string]int64{"nvidia.com/mig-1g.18gb": 16, "nvidia.com/mig-2g.35gb": 8, "nvidia.com/mig-3g.71gb": 8}, false, nil, ""},
		// stack-facts §2: DP@1b826acc internal/rm — single + all-balanced: invalid, nothing advertised
		{"H200 all-balanced single", "h200-141gb", "all-balanced", MIGStrategySingle, invalid, false, []string{"more than one MIG device type present on node"}, "NVIDIA-H200-MIG-INVALID"},
		// stack-facts §2: DP@1b826acc internal/rm — all-disabled: whole GPUs
		{"H200 all-disabled mixed", "h200-141gb", "all-disabled", MIGStrategyMixed, map[string]int64{"nvidia.com/gpu": 8}, false, nil, ""},
		// stack-facts §2: DP@1b826acc internal/rm — all-disabled: whole GPUs
		{"H200 all-disabled single", "h200-141gb", "all-disabled", MIGStrategySingle, map[string]int64{"nvidia.com/gpu": 8}, false, nil, "NVIDIA-H200"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sku := mustSKU(t, tc.sku)
			mig, err := cfg.Apply(tc.layout, sku, gpus)
			if tc.applyErr {
				if err == nil {
					t.Fatalf("Apply(%s) on %s: want an error (state failed), got %+v", tc.layout, tc.sku, mig)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply(%s) on %s: %v", tc.layout, tc.sku, err)
			}
			got := Advertise(NodeInventory{SKU: sku, Count: gpus}, StackState{MIGStrategy: tc.strategy, MIG: mig})
			checkErr(t, got.Err, tc.wantErr...)
			checkResources(t, got.Resources, tc.want)
			if tc.product != "" {
				checkLabels(t, got.Labels, map[string]string{"nvidia.com/gpu.product": tc.product})
			}
		})
	}
}

func TestGPUOperatorSampleClusterPolicy(t *testing.T) {
	data := readGPUOperatorFile(t, goSampleClusterPolicy)
	p, err := ParseClusterPolicy(data)
	if err != nil {
		t.Fatalf("ParseClusterPolicy(%s): %v", goSampleClusterPolicy, err)
	}
	tests := []struct {
		field     string
		got, want any
	}{
		// stack-facts §6: config/samples/v1_clusterpolicy.yaml — spec.mig.strategy: single
		{"MIGStrategy", p.MIGStrategy, MIGStrategySingle},
		// stack-facts §6: config/samples/v1_clusterpolicy.yaml — spec.devicePlugin.enabled: true
		{"DevicePluginEnabled", p.DevicePluginEnabled, true},
		// stack-facts §6: config/samples/v1_clusterpolicy.yaml — spec.gfd.enabled: true
		{"GFDEnabled", p.GFDEnabled, true},
		// stack-facts §6: config/samples/v1_clusterpolicy.yaml — spec.migManager.enabled: true
		{"MIGManagerEnabled", p.MIGManagerEnabled, true},
		// stack-facts §6: config/samples/v1_clusterpolicy.yaml — spec.devicePlugin.config.name: "" (plugin defaults)
		{"DevicePluginConfig", p.DevicePluginConfig, ""},
		// stack-facts §6: config/samples/v1_clusterpolicy.yaml — spec.migManager.config.name: "" (Operator's default ConfigMap)
		{"MIGManagerConfig", p.MIGManagerConfig, ""},
		// stack-facts §6: GO api/nvidia/v1/clusterpolicy_types.go — spec.operator.runtimeClass: nvidia
		{"RuntimeClass", p.RuntimeClass, "nvidia"},
	}
	for _, tc := range tests {
		t.Run(tc.field, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("%s = %v, want %v", tc.field, tc.got, tc.want)
			}
		})
	}
}
