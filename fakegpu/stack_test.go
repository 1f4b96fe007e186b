// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"strings"
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
			// stack-facts §1: DP@1b826acc cmd/config-manager/main.go — no nvidia.com/device-plugin.config label: the default key
			name: "default config",
			objs: std, sku: "l4", count: 1,
			want: map[string]int64{"nvidia.com/gpu": 1},
		},
		{
			// stack-facts §1: DP@1b826acc cmd/config-manager/main.go — the node label picks a key of the config ConfigMap
			name: "label picks time-slicing",
			objs: std, labels: map[string]string{LabelDevicePluginConfig: "ts-4"}, sku: "l4", count: 1,
			want:      map[string]int64{"nvidia.com/gpu.shared": 4},
			wantLabel: map[string]string{"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.product": "NVIDIA-L4"},
		},
		{
			// stack-facts §1: DP@1b826acc cmd/config-manager/main.go — a label naming a missing key: "specified config X does not exist", plugin down
			name: "label names a missing key",
			objs: std, labels: map[string]string{LabelDevicePluginConfig: "ts-8"}, sku: "l4", count: 1,
			want:    map[string]int64{},
			wantErr: []string{"specified config ts-8 does not exist"},
		},
		{
			// stack-facts §1: DP@1b826acc cmd/config-manager/main.go — a missing key fails the plugin even on a MIG node
			name: "missing key on a MIG node",
			objs: std, labels: map[string]string{LabelDevicePluginConfig: "nope", LabelMIGConfig: "all-1g.5gb"}, sku: "a100-40gb", count: 8,
			want:    map[string]int64{},
			wantErr: []string{"does not exist"},
		},
		{
			// stack-facts §6: GO controllers — no ClusterPolicy: no Operator, no device plugin, nothing advertised
			name: "no ClusterPolicy",
			objs: []*unstructured.Unstructured{stackDPConfigMap()}, sku: "l4", count: 1,
			want: map[string]int64{}, wantErr: []string{"ClusterPolicy"}, noLabels: true,
		},
		{
			// stack-facts §6: GO api/nvidia/v1/clusterpolicy_types.go — devicePlugin.enabled=false: nothing advertised
			name: "device plugin disabled",
			objs: []*unstructured.Unstructured{stackPolicy(MIGStrategyMixed, map[string]any{"devicePlugin": map[string]any{"enabled": false}})},
			sku:  "l4", count: 1,
			want: map[string]int64{}, wantErr: []string{"devicePlugin.enabled=false"}, noLabels: true,
		},
		{
			// stack-facts §6: GO api/nvidia/v1/clusterpolicy_types.go — gfd.enabled=false: no GFD labels, resources still advertised
			name: "GFD disabled",
			objs: []*unstructured.Unstructured{stackPolicy(MIGStrategyMixed, map[string]any{"gfd": map[string]any{"enabled": false}}), stackDPConfigMap()},
			sku:  "l4", count: 2,
			want: map[string]int64{"nvidia.com/gpu": 2}, noLabels: true,
		},
		{
			// stack-facts §4 steps 1–2: GOmod@d73a0086 controllers/state_manager.go labelGPUNodes — with
			// migManager.config.default unset ("") GO writes no nvidia.com/mig.config, and the manager
			// ignores a missing label: no state, MIG stays as it is (off)
			name: "MIG node without mig.config label, no default",
			objs: std, sku: "a100-40gb", count: 8,
			want: map[string]int64{"nvidia.com/gpu": 8},
		},
		{
			// stack-facts §4 step 1: with migManager.config.default all-disabled GO labels a MIG-capable node
			// all-disabled, which its fresh GPUs already are (step 3: success at once)
			name: "MIG node without mig.config label, default all-disabled",
			objs: []*unstructured.Unstructured{stackPolicy(MIGStrategyMixed, map[string]any{"migManager": map[string]any{"config": map[string]any{"default": "all-disabled"}}}), stackDPConfigMap()},
			sku:  "a100-40gb", count: 8,
			want: map[string]int64{"nvidia.com/gpu": 8}, wantState: "success",
		},
		{
			// stack-facts §4 steps 1–2 + §2 (mixed): nvidia.com/mig.config picks the layout of GOmod's default
			// ConfigMap (default-mig-parted-config)
			name: "mig.config all-1g.5gb",
			objs: std, labels: map[string]string{LabelMIGConfig: "all-1g.5gb"}, sku: "a100-40gb", count: 8,
			want: map[string]int64{"nvidia.com/mig-1g.5gb": 56}, wantState: "success",
		},
		{
			// stack-facts §4 step 8: a layout with a profile the GPU lacks (§5: H100 has no 1g.5gb): state
			// failed; MIG staying off is the simulator's assumption (not in facts)
			name: "mig.config the GPU cannot take",
			objs: std, labels: map[string]string{LabelMIGConfig: "all-1g.5gb"}, sku: "h100-80gb", count: 8,
			want: map[string]int64{"nvidia.com/gpu": 8}, wantState: "failed",
		},
		{
			// stack-facts §4 step 3: a layout not in mig-configs fails at assert --valid-config: state failed,
			// the GPUs unchanged
			name: "mig.config unknown layout",
			objs: std, labels: map[string]string{LabelMIGConfig: "all-9g.99gb"}, sku: "a100-40gb", count: 8,
			want: map[string]int64{"nvidia.com/gpu": 8}, wantState: "failed",
		},
		{
			// stack-facts §6: GO labels gpu.deploy.mig-manager only on MIG-capable nodes (§5: the L4 is not),
			// so the MIG manager does not run there: no state
			name: "no MIG manager state on L4",
			objs: std, labels: map[string]string{LabelMIGConfig: "all-1g.5gb"}, sku: "l4", count: 1,
			want: map[string]int64{"nvidia.com/gpu": 1},
		},
		{
			// stack-facts §6 "Sample: config/samples/v1_clusterpolicy.yaml" (mig.strategy single) with GOmod's
			// default layouts; stack-facts §3 single-strategy product label
			name:   "sample policy, all-1g.5gb",
			objs:   []*unstructured.Unstructured{clusterPolicyObj("gpu-cluster-policy", map[string]any{"mig": map[string]any{"strategy": "single"}})},
			labels: map[string]string{LabelMIGConfig: "all-1g.5gb"}, sku: "a100-40gb", count: 8,
			want: map[string]int64{"nvidia.com/gpu": 56}, wantState: "success",
			wantLabel: map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "nvidia.com/mig.strategy": "single"},
		},
		{
			// stack-facts §2 single ("more than one MIG device type present on node") and §3 (-MIG-INVALID):
			// nothing advertised, though the MIG manager itself succeeded
			name:   "sample policy, all-balanced",
			objs:   []*unstructured.Unstructured{clusterPolicyObj("gpu-cluster-policy", map[string]any{"mig": map[string]any{"strategy": "single"}})},
			labels: map[string]string{LabelMIGConfig: "all-balanced"}, sku: "a100-40gb", count: 8,
			want: map[string]int64{}, wantErr: []string{"more than one MIG device type present on node"}, wantState: "success",
			wantLabel: map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-INVALID"},
		},
		{
			// stack-facts §1 "Precedence": DP@1b826acc api/config/v1/flags.go UpdateFromCLIFlags (env beats the
			// file) + GO@a22dbf67 controllers/object_controls.go applyMIGConfiguration (MIG_STRATEGY from
			// spec.mig.strategy): the ClusterPolicy's mixed wins over the selected config's flags.migStrategy single.
			name: "ClusterPolicy strategy beats config flags.migStrategy",
			objs: std, labels: map[string]string{LabelDevicePluginConfig: "flag-single", LabelMIGConfig: "all-balanced"}, sku: "a100-40gb", count: 8,
			want:      map[string]int64{"nvidia.com/mig-1g.5gb": 16, "nvidia.com/mig-2g.10gb": 8, "nvidia.com/mig-3g.20gb": 8},
			wantState: "success",
		},
		{
			// stack-facts §1 (GO@a22dbf67 applyMIGConfiguration sets MIG_STRATEGY only when spec.mig.strategy is
			// set) + stack-facts §2 none (whole GPUs, MIG ignored) + §3 (no mig.strategy label for none); that the
			// plugin's own default is none is DP's flag default, which the doc does not spell out
			name:   "policy without mig.strategy",
			objs:   []*unstructured.Unstructured{clusterPolicyObj("cp", map[string]any{})},
			labels: map[string]string{LabelMIGConfig: "all-1g.5gb"}, sku: "a100-40gb", count: 8,
			want: map[string]int64{"nvidia.com/gpu": 8}, wantState: "success",
			absent: []string{"nvidia.com/mig.strategy"},
		},
		{
			// stack-facts §1 "Precedence" (DP@1b826acc flags.go UpdateFromCLIFlags; GO@a22dbf67 applyMIGConfiguration):
			// spec.mig.strategy unset, no MIG_STRATEGY: the selected config's flags.migStrategy decides
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
			// stack-facts §6: GO controllers — no ClusterPolicy is not an error: the stack is simply absent
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
			// stack-facts §6: GO api/nvidia/v1/clusterpolicy_types.go — devicePlugin.config.name names the ConfigMap it reads
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
			// stack-facts §1 "Per-node choice and blast radius": a missing default key is not refused;
			// it breaks every unlabelled node, with upstream's message (two spaces: the empty label)
			name: "default key missing",
			objs: []*unstructured.Unstructured{clusterPolicyObj("cp", map[string]any{"devicePlugin": map[string]any{"config": map[string]any{"name": "dp-config", "default": "absent"}}}), stackDPConfigMap()},
			check: func(t *testing.T, s *Stack) {
				if _, err := s.DevicePluginConfigFor(nil); err == nil || !strings.Contains(err.Error(), "specified config  does not exist") {
					t.Errorf("unlabelled node: %v, want upstream's \"specified config  does not exist\"", err)
				}
				if _, err := s.DevicePluginConfigFor(map[string]string{LabelDevicePluginConfig: "ts-4"}); err != nil {
					t.Errorf("a node labelled with a key that exists: %v", err)
				}
				if w := strings.Join(s.Warnings(), "\n"); !strings.Contains(w, "spec.devicePlugin.config.default") || !strings.Contains(w, `"absent"`) {
					t.Errorf("warnings %q should name the missing default", w)
				}
			},
		},
		{
			// the simulator's choice (stack-facts §6 only names devicePlugin.config.name): a named
			// ConfigMap that does not exist refuses the candidate
			name:    "device-plugin ConfigMap missing",
			objs:    []*unstructured.Unstructured{stackPolicy(MIGStrategySingle, nil)},
			wantErr: []string{"spec.devicePlugin.config.name", `"dp-config"`},
		},
		{
			// stack-facts §1 "Per-node choice and blast radius": the config-manager never parses the
			// ConfigMap; a malformed key breaks only the nodes selecting it, with the plugin's error
			name: "invalid device-plugin config",
			objs: []*unstructured.Unstructured{stackPolicy(MIGStrategySingle, nil), configMapObj("dp-config", map[string]string{
				"default": "version: v1\n", "bad": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 1\n",
			})},
			check: func(t *testing.T, s *Stack) {
				l4 := NodeInventory{SKU: mustSKU(t, "l4"), Count: 1}
				if got := s.Node(nil, l4); got.Err != nil || got.Resources[ResourceGPU] != 1 {
					t.Errorf("a node on the default key: %+v, want 1 nvidia.com/gpu", got.Advertisement)
				}
				got := s.Node(map[string]string{LabelDevicePluginConfig: "bad"}, l4)
				if got.Err == nil || !strings.Contains(got.Err.Error(), "unable to load config: unable to finalize config: unable to parse config file: error parsing config file:") ||
					!strings.Contains(got.Err.Error(), "number of replicas must be >= 2") || len(got.Resources) != 0 {
					t.Errorf("a node on the bad key: %+v, want the plugin's load error and nothing advertised", got.Advertisement)
				}
				if w := strings.Join(s.Warnings(), "\n"); !strings.Contains(w, "data[bad]") {
					t.Errorf("warnings %q should name data[bad]", w)
				}
			},
		},
		{
			// the simulator's choice, not in facts: a second ClusterPolicy is refused
			name:    "two ClusterPolicies",
			objs:    []*unstructured.Unstructured{stackPolicy(MIGStrategySingle, nil), clusterPolicyObj("second", map[string]any{}), stackDPConfigMap()},
			wantErr: []string{"more than one ClusterPolicy"},
		},
		{
			// stack-facts §6: GO api/nvidia/v1/clusterpolicy_types.go — a bad spec.mig.strategy is refused
			name:    "bad strategy",
			objs:    []*unstructured.Unstructured{clusterPolicyObj("cp", map[string]any{"mig": map[string]any{"strategy": "both"}})},
			wantErr: []string{"spec.mig.strategy"},
		},
		{
			// stack-facts §6: migManager.config.name is a ConfigMap with key config.yaml; stack-facts §4: GPUs 4–7
			// are MIG-disabled by the layout's second entry
			name: "custom mig-parted ConfigMap",
			objs: []*unstructured.Unstructured{clusterPolicyObj("cp", map[string]any{"mig": map[string]any{"strategy": "mixed"}, "migManager": map[string]any{"config": map[string]any{"name": "custom-mig"}}}), customMIG},
			check: func(t *testing.T, s *Stack) {
				got := s.Node(map[string]string{LabelMIGConfig: "half"}, NodeInventory{SKU: mustSKU(t, "a100-40gb"), Count: 8})
				checkResources(t, got.Resources, map[string]int64{"nvidia.com/gpu": 4, "nvidia.com/mig-3g.20gb": 8})
			},
		},
		{
			// stack-facts §4 step 2: GOmod mounts ConfigMap default-mig-parted-config: naming it uses the Operator's own
			name: "default mig-parted ConfigMap by name",
			objs: []*unstructured.Unstructured{clusterPolicyObj("cp", map[string]any{"migManager": map[string]any{"config": map[string]any{"name": DefaultMIGPartedConfigMap}}})},
			check: func(t *testing.T, s *Stack) {
				if s.MIGParted != defaultMIG {
					t.Errorf("MIGParted is not the Operator's default config")
				}
			},
		},
		{
			// stack-facts §6 names migManager.config.name; refusing a candidate whose named ConfigMap is absent is
			// the simulator's choice (the doc does not say what the MIG manager does without it)
			name:    "custom mig-parted ConfigMap missing",
			objs:    []*unstructured.Unstructured{clusterPolicyObj("cp", map[string]any{"migManager": map[string]any{"config": map[string]any{"name": "custom-mig"}}})},
			wantErr: []string{"spec.migManager.config.name", `"custom-mig"`},
		},
		{
			// stack-facts §4 "mig-parted config", blast radius: a file that does not parse does not stop the
			// candidate; every MIG-capable node the manager runs on ends failed, whatever it selects
			// (all-disabled too), a node without the manager (L4) is untouched; Warnings says so
			name: "unparsable mig-parted ConfigMap",
			objs: []*unstructured.Unstructured{migPolicy("custom-mig"), configMapObj("custom-mig", map[string]string{"config.yaml": "version: v1\nmig-configs:\n  all-disabled:\n  - devices: all\n    mig-enabled: false\n  bad:\n  - devices: all\n    mig-enabled: false\n    mig-device: {}\n"})},
			check: func(t *testing.T, s *Stack) {
				checkErr(t, s.MIGPartedErr, "custom-mig", "data[config.yaml]", "mig-configs.bad[0]", "unexpected field: mig-device")
				checkMIGPartedWarning(t, s, "custom-mig", "unexpected field: mig-device")
				for _, layout := range []string{"all-disabled", "all-1g.5gb"} {
					got := s.Node(map[string]string{LabelMIGConfig: layout}, NodeInventory{SKU: mustSKU(t, "a100-40gb"), Count: 8})
					if got.MIGConfigState != MIGStateFailed {
						t.Errorf("A100 node selecting %s: state %q, want failed", layout, got.MIGConfigState)
					}
					checkResources(t, got.Resources, map[string]int64{"nvidia.com/gpu": 8})
				}
				if got := s.Node(nil, NodeInventory{SKU: mustSKU(t, "l4"), Count: 1}); got.MIGConfigState != "" || got.Err != nil {
					t.Errorf("L4 node: state %q, err %v; want no MIG manager and the plugin serving", got.MIGConfigState, got.Err)
				}
			},
		},
		{
			// stack-facts §4 "mig-parted config", blast radius: a file that parses, with an unknown name on one
			// node and a layout one GPU model cannot take on another, fails only those nodes
			name: "unknown or unfit layout fails only the nodes selecting it",
			objs: []*unstructured.Unstructured{migPolicy("")},
			check: func(t *testing.T, s *Stack) {
				if s.MIGPartedErr != nil || len(s.Warnings()) != 0 {
					t.Errorf("MIGPartedErr %v, Warnings %v; want neither", s.MIGPartedErr, s.Warnings())
				}
				a100 := NodeInventory{SKU: mustSKU(t, "a100-40gb"), Count: 8}
				for layout, want := range map[string]string{"all-9g.99gb": MIGStateFailed, "all-1g.10gb.me": MIGStateFailed, "all-1g.5gb": MIGStateSuccess} {
					if got := s.Node(map[string]string{LabelMIGConfig: layout}, a100).MIGConfigState; got != want {
						t.Errorf("A100 node selecting %s: state %q, want %q", layout, got, want)
					}
				}
				h100 := NodeInventory{SKU: mustSKU(t, "h100-80gb"), Count: 8}
				if got := s.Node(map[string]string{LabelMIGConfig: "all-1g.10gb.me"}, h100).MIGConfigState; got != MIGStateSuccess {
					t.Errorf("H100 node selecting all-1g.10gb.me: state %q, want success", got)
				}
			},
		},
		{
			// The doc does not say what a mig-parted ConfigMap without key config.yaml does; taken as a
			// file that does not parse (stack-facts §4 blast radius): the candidate is accepted, runs fail
			name: "mig-parted ConfigMap without config.yaml",
			objs: []*unstructured.Unstructured{migPolicy("custom-mig"), configMapObj("custom-mig", map[string]string{"config.yml": "version: v1\n"})},
			check: func(t *testing.T, s *Stack) {
				checkErr(t, s.MIGPartedErr, "custom-mig", "config.yaml")
				checkMIGPartedWarning(t, s, "custom-mig", "config.yaml")
				got := s.Node(map[string]string{LabelMIGConfig: "all-1g.5gb"}, NodeInventory{SKU: mustSKU(t, "a100-40gb"), Count: 8})
				if got.MIGConfigState != MIGStateFailed {
					t.Errorf("state %q, want failed", got.MIGConfigState)
				}
			},
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

// migPolicy is a ClusterPolicy (mixed) whose MIG manager reads ConfigMap
// name ("": the Operator's default) and has no device-plugin ConfigMap.
func migPolicy(name string) *unstructured.Unstructured {
	spec := map[string]any{"mig": map[string]any{"strategy": MIGStrategyMixed}}
	if name != "" {
		spec["migManager"] = map[string]any{"config": map[string]any{"name": name}}
	}
	return clusterPolicyObj("cp", spec)
}

// checkMIGPartedWarning asserts Warnings has one line about the mig-parted
// file, with these substrings.
func checkMIGPartedWarning(t *testing.T, s *Stack, want ...string) {
	t.Helper()
	var lines []string
	for _, w := range s.Warnings() {
		if strings.Contains(w, "MIG manager") {
			lines = append(lines, w)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("Warnings about the MIG manager = %q, want one", lines)
	}
	for _, w := range want {
		if !strings.Contains(lines[0], w) {
			t.Errorf("warning %q does not contain %q", lines[0], w)
		}
	}
}
