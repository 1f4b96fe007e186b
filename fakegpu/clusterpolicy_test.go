// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"reflect"
	"testing"
)

func TestParseClusterPolicy(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    ClusterPolicySettings
		wantErr []string
		bug     string
	}{
		{
			// not in the facts (stack-facts §6 lists the flags, not their defaults): GO api/nvidia/v1/clusterpolicy_types.go
			// IsEnabled treats an unset enable flag as true
			name: "enable flags default true",
			doc:  "kind: ClusterPolicy\nspec:\n  mig:\n    strategy: none\n",
			want: ClusterPolicySettings{MIGStrategy: MIGStrategyNone, DevicePluginEnabled: true, MIGManagerEnabled: true, GFDEnabled: true, RuntimeClass: "nvidia", ToolkitEnabled: true, ToolkitSetAsDefault: true},
		},
		{
			// stack-facts §6: GO: api/nvidia/v1/clusterpolicy_types.go — devicePlugin/gfd/migManager .enabled: false
			name: "components disabled",
			doc:  "kind: ClusterPolicy\nspec:\n  mig:\n    strategy: mixed\n  devicePlugin:\n    enabled: false\n  gfd:\n    enabled: false\n  migManager:\n    enabled: false\n",
			want: ClusterPolicySettings{MIGStrategy: MIGStrategyMixed, RuntimeClass: "nvidia", ToolkitEnabled: true, ToolkitSetAsDefault: true},
		},
		{
			// stack-facts §6: GO: api/nvidia/v1/clusterpolicy_types.go — devicePlugin.config.name/.default and migManager.config.name/.default
			name: "config references",
			doc: `kind: ClusterPolicy
spec:
  mig:
    strategy: single
  operator:
    runtimeClass: nvidia-cdi
  devicePlugin:
    config:
      name: time-slicing-config
      default: any
  migManager:
    config:
      name: custom-mig-parted-config
      default: all-disabled
`,
			want: ClusterPolicySettings{
				MIGStrategy: MIGStrategySingle, DevicePluginEnabled: true, DevicePluginConfig: "time-slicing-config", DevicePluginDefault: "any",
				MIGManagerEnabled: true, MIGManagerConfig: "custom-mig-parted-config", MIGManagerDefault: "all-disabled", GFDEnabled: true, RuntimeClass: "nvidia-cdi",
				ToolkitEnabled: true, ToolkitSetAsDefault: true,
			},
		},
		{
			// stack-facts §6: GO: api/nvidia/v1/clusterpolicy_types.go — spec.mig.strategy is none|single|mixed
			name:    "bad strategy",
			doc:     "kind: ClusterPolicy\nspec:\n  mig:\n    strategy: both\n",
			wantErr: []string{"spec.mig.strategy", `"both"`},
		},
		{
			// stack-facts §6: GO: api/nvidia/v1/clusterpolicy_types.go — only a ClusterPolicy is one
			name:    "wrong kind",
			doc:     "kind: ConfigMap\ndata: {}\n",
			wantErr: []string{"kind", "ConfigMap"},
		},
		{
			// stack-facts §1 "Precedence": GO@a22dbf67 controllers/object_controls.go applyMIGConfiguration — with spec.mig.strategy unset the Operator
			// sets no MIG_STRATEGY, so the plugin and GFD use their default (none: the simulator's reading; the doc names no default); "single" is
			// only the Helm chart's default (CRD config/crd/bases/nvidia.com_clusterpolicies.yaml
			// has no default for it).
			name: "strategy unset",
			doc:  "kind: ClusterPolicy\nspec: {}\n",
			want: ClusterPolicySettings{MIGStrategy: MIGStrategyNone, DevicePluginEnabled: true, MIGManagerEnabled: true, GFDEnabled: true, RuntimeClass: "nvidia", ToolkitEnabled: true, ToolkitSetAsDefault: true},
		},
		{
			// stack-facts §2 (device health: DP_DISABLE_HEALTHCHECKS, DP_ENABLE_HEALTHCHECKS are the
			// plugin's env) — spec.devicePlugin.env is read
			name: "device plugin env",
			doc:  "kind: ClusterPolicy\nspec:\n  devicePlugin:\n    env: [{name: DP_DISABLE_HEALTHCHECKS, value: all}]\n",
			want: ClusterPolicySettings{MIGStrategy: MIGStrategyNone, DevicePluginEnabled: true, MIGManagerEnabled: true, GFDEnabled: true, RuntimeClass: "nvidia",
				ToolkitEnabled: true, ToolkitSetAsDefault: true, DevicePluginEnv: map[string]string{"DP_DISABLE_HEALTHCHECKS": "all"}},
		},
		{
			// stack-facts §4 step 1 (and, for "only when present", GOmod@d73a0086's CRD and
			// controllers/state_manager.go, which checks Config != nil): the served CRD defaults migManager.config.name to
			// default-mig-parted-config and .default to all-disabled inside a config that is present
			name: "mig manager config defaulted by the CRD",
			doc:  "kind: ClusterPolicy\nspec:\n  migManager:\n    config: {}\n",
			want: ClusterPolicySettings{MIGStrategy: MIGStrategyNone, DevicePluginEnabled: true, MIGManagerEnabled: true, GFDEnabled: true, RuntimeClass: "nvidia",
				MIGManagerConfig: DefaultMIGPartedConfigMap, MIGManagerDefault: MIGConfigAllDisabled, ToolkitEnabled: true, ToolkitSetAsDefault: true},
		},
		{
			// stack-facts §4 step 1: default "" (the CRD's other enum value) is kept: GO writes no mig.config label
			name: "mig manager default empty kept",
			doc:  "kind: ClusterPolicy\nspec:\n  migManager:\n    config: {name: custom, default: \"\"}\n",
			want: ClusterPolicySettings{MIGStrategy: MIGStrategyNone, DevicePluginEnabled: true, MIGManagerEnabled: true, GFDEnabled: true, RuntimeClass: "nvidia",
				MIGManagerConfig: "custom", ToolkitEnabled: true, ToolkitSetAsDefault: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRowCheck(t)
			defer r.finish(tc.bug)
			got, err := ParseClusterPolicy([]byte(tc.doc))
			checkErr(r, err, tc.wantErr...)
			// An unset strategy may be kept as "" (the plugin's default, none) or spelled none.
			if got.MIGStrategy == "" {
				got.MIGStrategy = MIGStrategyNone
			}
			if err == nil && !reflect.DeepEqual(got, tc.want) {
				r.Errorf("ParseClusterPolicy = %+v, want %+v", got, tc.want)
			}
		})
	}
}
