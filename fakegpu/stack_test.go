package fakegpu

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func clusterPolicyObj(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "nvidia.com/v1",
		"kind":       "ClusterPolicy",
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}}
}

func configMapObj(name string, data map[string]string) *unstructured.Unstructured {
	d := map[string]any{}
	for k, v := range data {
		d[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": name, "namespace": "gpu-operator"},
		"data":       d,
	}}
}

// stackPolicy is a ClusterPolicy naming the device-plugin ConfigMap
// "dp-config" with default key "default", and the given MIG strategy.
func stackPolicy(strategy string, extra map[string]any) *unstructured.Unstructured {
	spec := map[string]any{
		"mig":          map[string]any{"strategy": strategy},
		"devicePlugin": map[string]any{"config": map[string]any{"name": "dp-config", "default": "default"}},
	}
	for k, v := range extra {
		spec[k] = v
	}
	return clusterPolicyObj("cluster-policy", spec)
}

func stackDPConfigMap() *unstructured.Unstructured {
	return configMapObj("dp-config", map[string]string{
		"default":     "version: v1\n",
		"ts-4":        dpTimeSlicing4Renamed,
		"flag-single": "version: v1\nflags:\n  migStrategy: single\n",
		"flag-mixed":  "version: v1\nflags:\n  migStrategy: mixed\n",
	})
}

func TestStackNode(t *testing.T) {
	_, defaultMIG := goDefaultMIGParted(t)
	std := []*unstructured.Unstructured{stackPolicy(MIGStrategyMixed, nil), stackDPConfigMap()}
	tests := []struct {
		name      string
		objs      []*unstructured.Unstructured
		labels    map[string]string
		sku       string
		count     int
		want      map[string]int64
		wantErr   []string
		wantState string            // nvidia.com/mig.config.state, "" = not set
		wantLabel map[string]string // GFD labels to check
		absent    []string          // GFD labels that must not be set
		noLabels  bool              // GFD publishes nothing
		bug       string
	}{
		{
			// DP: api/config/v1 — no nvidia.com/device-plugin.config label: the default key
			name: "default config",
			objs: std, sku: "l4", count: 1,
			want: map[string]int64{"nvidia.com/gpu": 1},
		},
		{
			// DP: api/config/v1 — the node label picks a key of the config ConfigMap
			name: "label picks time-slicing",
			objs: std, labels: map[string]string{LabelDevicePluginConfig: "ts-4"}, sku: "l4", count: 1,
			want:      map[string]int64{"nvidia.com/gpu.shared": 4},
			wantLabel: map[string]string{"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.product": "NVIDIA-L4"},
		},
		{
			// DP: api/config/v1 — a label naming a missing key: "specified config X does not exist", plugin down
			name: "label names a missing key",
			objs: std, labels: map[string]string{LabelDevicePluginConfig: "ts-8"}, sku: "l4", count: 1,
			want:    map[string]int64{},
			wantErr: []string{"specified config ts-8 does not exist"},
		},
		{
			// DP: api/config/v1 — a missing key fails the plugin even on a MIG node
			name: "missing key on a MIG node",
			objs: std, labels: map[string]string{LabelDevicePluginConfig: "nope", LabelMIGConfig: "all-1g.5gb"}, sku: "a100-40gb", count: 8,
			want:    map[string]int64{},
			wantErr: []string{"does not exist"},
		},
		{
			// GO: controllers — no ClusterPolicy: no Operator, no device plugin, nothing advertised
			name: "no ClusterPolicy",
			objs: []*unstructured.Unstructured{stackDPConfigMap()}, sku: "l4", count: 1,
			want: map[string]int64{}, wantErr: []string{"ClusterPolicy"}, noLabels: true,
		},
		{
			// GO: api/nvidia/v1/clusterpolicy_types.go — devicePlugin.enabled=false: nothing advertised
			name: "device plugin disabled",
			objs: []*unstructured.Unstructured{stackPolicy(MIGStrategyMixed, map[string]any{"devicePlugin": map[string]any{"enabled": false}})},
			sku:  "l4", count: 1,
			want: map[string]int64{}, wantErr: []string{"devicePlugin.enabled=false"}, noLabels: true,
		},
		{
			// GO: api/nvidia/v1/clusterpolicy_types.go — gfd.enabled=false: no GFD labels, resources still advertised
			name: "GFD disabled",
			objs: []*unstructured.Unstructured{stackPolicy(MIGStrategyMixed, map[string]any{"gfd": map[string]any{"enabled": false}}), stackDPConfigMap()},
			sku:  "l4", count: 2,
			want: map[string]int64{"nvidia.com/gpu": 2}, noLabels: true,
		},
		{
			// MP: cmd/nvidia-mig-manager — a MIG-capable node without nvidia.com/mig.config gets all-disabled
			name: "MIG node without mig.config label",
			objs: std, sku: "a100-40gb", count: 8,
			want: map[string]int64{"nvidia.com/gpu": 8}, wantState: "success",
		},
		{
			// MP: cmd/nvidia-mig-manager — nvidia.com/mig.config picks the layout; GO default ConfigMap; mixed
			name: "mig.config all-1g.5gb",
			objs: std, labels: map[string]string{LabelMIGConfig: "all-1g.5gb"}, sku: "a100-40gb", count: 8,
			want: map[string]int64{"nvidia.com/mig-1g.5gb": 56}, wantState: "success",
		},
		{
			// MP: pkg/mig/reconfigure — a layout with a profile the GPU lacks: state failed, MIG stays off
			name: "mig.config the GPU cannot take",
			objs: std, labels: map[string]string{LabelMIGConfig: "all-1g.5gb"}, sku: "h100-80gb", count: 8,
			want: map[string]int64{"nvidia.com/gpu": 8}, wantState: "failed",
		},
		{
			// MP: cmd/nvidia-mig-manager — a layout not in mig-configs: state failed
			name: "mig.config unknown layout",
			objs: std, labels: map[string]string{LabelMIGConfig: "all-9g.99gb"}, sku: "a100-40gb", count: 8,
			want: map[string]int64{"nvidia.com/gpu": 8}, wantState: "failed",
		},
		{
			// MP: cmd/nvidia-mig-manager — the MIG manager does not run on GPUs that are not MIG-capable
			name: "no MIG manager state on L4",
			objs: std, labels: map[string]string{LabelMIGConfig: "all-1g.5gb"}, sku: "l4", count: 1,
			want: map[string]int64{"nvidia.com/gpu": 1},
		},
		{
			// GO: config/samples/v1_clusterpolicy.yaml — the sample policy (single) with the GO default layouts
			name:   "sample policy, all-1g.5gb",
			objs:   []*unstructured.Unstructured{clusterPolicyObj("gpu-cluster-policy", map[string]any{"mig": map[string]any{"strategy": "single"}})},
			labels: map[string]string{LabelMIGConfig: "all-1g.5gb"}, sku: "a100-40gb", count: 8,
			want: map[string]int64{"nvidia.com/gpu": 56}, wantState: "success",
			wantLabel: map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "nvidia.com/mig.strategy": "single"},
		},
		{
			// DP: internal/rm — single + all-balanced: invalid, nothing advertised (MIG manager itself succeeded)
			name:   "sample policy, all-balanced",
			objs:   []*unstructured.Unstructured{clusterPolicyObj("gpu-cluster-policy", map[string]any{"mig": map[string]any{"strategy": "single"}})},
			labels: map[string]string{LabelMIGConfig: "all-balanced"}, sku: "a100-40gb", count: 8,
			want: map[string]int64{}, wantErr: []string{"more than one MIG device type present on node"}, wantState: "success",
			wantLabel: map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-INVALID"},
		},
		{
			// DP: api/config/v1 (NewConfig: command line/env beat the config file) + GO: controllers
			// (applyMIGConfiguration sets MIG_STRATEGY from spec.mig.strategy): the ClusterPolicy's
			// mixed wins over the selected config's flags.migStrategy single.
			name: "ClusterPolicy strategy beats config flags.migStrategy",
			objs: std, labels: map[string]string{LabelDevicePluginConfig: "flag-single", LabelMIGConfig: "all-balanced"}, sku: "a100-40gb", count: 8,
			want:      map[string]int64{"nvidia.com/mig-1g.5gb": 16, "nvidia.com/mig-2g.10gb": 8, "nvidia.com/mig-3g.20gb": 8},
			wantState: "success",
		},
		{
			// GO: controllers (applyMIGConfiguration) — spec.mig.strategy unset: no MIG_STRATEGY, the
			// plugin's default none applies: whole GPUs even with MIG on, no mig.strategy label
			name:   "policy without mig.strategy",
			objs:   []*unstructured.Unstructured{clusterPolicyObj("cp", map[string]any{})},
			labels: map[string]string{LabelMIGConfig: "all-1g.5gb"}, sku: "a100-40gb", count: 8,
			want: map[string]int64{"nvidia.com/gpu": 8}, wantState: "success",
			absent: []string{"nvidia.com/mig.strategy"},
		},
		{
			// GO: controllers (applyMIGConfiguration) + DP: api/config/v1 — spec.mig.strategy unset:
			// the selected config's flags.migStrategy decides
			name:   "policy without mig.strategy, config says mixed",
			objs:   []*unstructured.Unstructured{clusterPolicyObj("cp", map[string]any{"devicePlugin": map[string]any{"config": map[string]any{"name": "dp-config", "default": "flag-mixed"}}}), stackDPConfigMap()},
			labels: map[string]string{LabelMIGConfig: "all-1g.5gb"}, sku: "a100-40gb", count: 8,
			want: map[string]int64{"nvidia.com/mig-1g.5gb": 56}, wantState: "success",
			wantLabel: map[string]string{"nvidia.com/mig.strategy": "mixed"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRowCheck(t)
			defer r.finish(tc.bug)
			s, err := StackFromObjects(tc.objs, defaultMIG)
			if err != nil {
				t.Fatalf("StackFromObjects: %v", err)
			}
			got := s.Node(tc.labels, NodeInventory{SKU: mustSKU(t, tc.sku), Count: tc.count})
			checkErr(r, got.Err, tc.wantErr...)
			checkResources(r, got.Resources, tc.want)
			if got.MIGConfigState != tc.wantState {
				r.Errorf("MIGConfigState = %q, want %q", got.MIGConfigState, tc.wantState)
			}
			if tc.wantState != "" {
				checkLabels(r, got.Labels, map[string]string{LabelMIGConfigState: tc.wantState})
			} else {
				checkLabels(r, got.Labels, nil, LabelMIGConfigState)
			}
			if tc.noLabels {
				delete(got.Labels, LabelMIGConfigState)
				if len(got.Labels) != 0 {
					r.Errorf("want no GFD labels, got %v", got.Labels)
				}
			}
			checkLabels(r, got.Labels, tc.wantLabel, tc.absent...)
		})
	}
}

func TestStackFromObjects(t *testing.T) {
	_, defaultMIG := goDefaultMIGParted(t)
	customMIG := configMapObj("custom-mig", map[string]string{"config.yaml": "version: v1\nmig-configs:\n  half:\n  - devices: [0, 1, 2, 3]\n    mig-enabled: true\n    mig-devices: {\"3g.20gb\": 2}\n  - devices: [4, 5, 6, 7]\n    mig-enabled: false\n"})
	tests := []struct {
		name    string
		objs    []*unstructured.Unstructured
		wantErr []string
		check   func(t *testing.T, s *Stack)
	}{
		{
			// GO: controllers — no ClusterPolicy is not an error: the stack is simply absent
			name: "no ClusterPolicy",
			objs: []*unstructured.Unstructured{stackDPConfigMap()},
			check: func(t *testing.T, s *Stack) {
				if s.Policy != nil {
					t.Errorf("Policy = %+v, want nil", s.Policy)
				}
				if got := s.Node(nil, NodeInventory{SKU: mustSKU(t, "a100-40gb"), Count: 8}); len(got.Resources) != 0 {
					t.Errorf("no ClusterPolicy advertised %v", got.Resources)
				}
			},
		},
		{
			// GO: api/nvidia/v1/clusterpolicy_types.go — devicePlugin.config.name names the ConfigMap it reads
			name: "policy and its ConfigMap",
			objs: []*unstructured.Unstructured{stackPolicy(MIGStrategySingle, nil), stackDPConfigMap()},
			check: func(t *testing.T, s *Stack) {
				if s.Policy == nil || s.Policy.MIGStrategy != MIGStrategySingle || s.Policy.DevicePluginDefault != "default" {
					t.Errorf("Policy = %+v", s.Policy)
				}
				if keys := sortedKeys(s.DevicePlugin); len(keys) != 4 {
					t.Errorf("device-plugin configs = %v, want 4 keys", keys)
				}
				if s.MIGParted != defaultMIG {
					t.Errorf("MIGParted is not the Operator's default config")
				}
			},
		},
		{
			// GO: api/nvidia/v1/clusterpolicy_types.go — devicePlugin.config.default must be a key of the ConfigMap
			name:    "default key missing",
			objs:    []*unstructured.Unstructured{clusterPolicyObj("cp", map[string]any{"devicePlugin": map[string]any{"config": map[string]any{"name": "dp-config", "default": "absent"}}}), stackDPConfigMap()},
			wantErr: []string{"spec.devicePlugin.config.default", `"absent"`, "dp-config"},
		},
		{
			// GO: api/nvidia/v1/clusterpolicy_types.go — devicePlugin.config.name must exist
			name:    "device-plugin ConfigMap missing",
			objs:    []*unstructured.Unstructured{stackPolicy(MIGStrategySingle, nil)},
			wantErr: []string{"spec.devicePlugin.config.name", `"dp-config"`},
		},
		{
			// DP: api/config/v1 — an invalid config in the ConfigMap names its key and field
			name: "invalid device-plugin config",
			objs: []*unstructured.Unstructured{stackPolicy(MIGStrategySingle, nil), configMapObj("dp-config", map[string]string{
				"default": "version: v1\n", "bad": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 1\n",
			})},
			wantErr: []string{"dp-config", "data[bad]", "number of replicas must be >= 2"},
		},
		{
			// GO: controllers — only one ClusterPolicy is honoured
			name:    "two ClusterPolicies",
			objs:    []*unstructured.Unstructured{stackPolicy(MIGStrategySingle, nil), clusterPolicyObj("second", map[string]any{}), stackDPConfigMap()},
			wantErr: []string{"more than one ClusterPolicy"},
		},
		{
			// GO: api/nvidia/v1/clusterpolicy_types.go — a bad spec.mig.strategy is refused
			name:    "bad strategy",
			objs:    []*unstructured.Unstructured{clusterPolicyObj("cp", map[string]any{"mig": map[string]any{"strategy": "both"}})},
			wantErr: []string{"spec.mig.strategy"},
		},
		{
			// GO: api/nvidia/v1/clusterpolicy_types.go — migManager.config.name: a custom ConfigMap with key config.yaml
			name: "custom mig-parted ConfigMap",
			objs: []*unstructured.Unstructured{clusterPolicyObj("cp", map[string]any{"mig": map[string]any{"strategy": "mixed"}, "migManager": map[string]any{"config": map[string]any{"name": "custom-mig"}}}), customMIG},
			check: func(t *testing.T, s *Stack) {
				got := s.Node(map[string]string{LabelMIGConfig: "half"}, NodeInventory{SKU: mustSKU(t, "a100-40gb"), Count: 8})
				checkResources(t, got.Resources, map[string]int64{"nvidia.com/gpu": 4, "nvidia.com/mig-3g.20gb": 8})
			},
		},
		{
			// GO: assets/state-mig-manager — naming default-mig-parted-config uses the Operator's own
			name: "default mig-parted ConfigMap by name",
			objs: []*unstructured.Unstructured{clusterPolicyObj("cp", map[string]any{"migManager": map[string]any{"config": map[string]any{"name": DefaultMIGPartedConfigMap}}})},
			check: func(t *testing.T, s *Stack) {
				if s.MIGParted != defaultMIG {
					t.Errorf("MIGParted is not the Operator's default config")
				}
			},
		},
		{
			// GO: api/nvidia/v1/clusterpolicy_types.go — a custom mig-parted ConfigMap that is absent
			name:    "custom mig-parted ConfigMap missing",
			objs:    []*unstructured.Unstructured{clusterPolicyObj("cp", map[string]any{"migManager": map[string]any{"config": map[string]any{"name": "custom-mig"}}})},
			wantErr: []string{"spec.migManager.config.name", `"custom-mig"`},
		},
		{
			// GO: assets/state-mig-manager — the mig-parted ConfigMap needs key config.yaml
			name:    "mig-parted ConfigMap without config.yaml",
			objs:    []*unstructured.Unstructured{clusterPolicyObj("cp", map[string]any{"migManager": map[string]any{"config": map[string]any{"name": "custom-mig"}}}), configMapObj("custom-mig", map[string]string{"config.yml": "version: v1\n"})},
			wantErr: []string{"custom-mig", "config.yaml"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := StackFromObjects(tc.objs, defaultMIG)
			checkErr(t, err, tc.wantErr...)
			if len(tc.wantErr) > 0 {
				if s != nil {
					t.Errorf("want a nil Stack with the error, got %+v", s)
				}
				return
			}
			if err == nil && tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}
