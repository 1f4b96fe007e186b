package fakegpu

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// ClusterPolicySettings are the fields of the GPU Operator's ClusterPolicy
// (GO: api/nvidia/v1/clusterpolicy_types.go) that decide what nodes
// advertise. The full object is validated by the real CRD in the apiserver;
// this is the simulator's read of it.
type ClusterPolicySettings struct {
	// MIGStrategy is spec.mig.strategy, "" when unset: the CRD has no
	// default ("single" is only the Helm chart's), and with it unset the
	// Operator sets no MIG_STRATEGY, so the plugin's config file decides.
	MIGStrategy         string
	DevicePluginEnabled bool
	DevicePluginConfig  string // ConfigMap name; "" = plugin defaults
	DevicePluginDefault string // default key in that ConfigMap
	MIGManagerEnabled   bool
	MIGManagerConfig    string // ConfigMap name with key config.yaml
	MIGManagerDefault   string
	GFDEnabled          bool
	RuntimeClass        string
}

type clusterPolicyDoc struct {
	Kind string `json:"kind"`
	Spec struct {
		MIG struct {
			Strategy string `json:"strategy"`
		} `json:"mig"`
		DevicePlugin struct {
			Enabled *bool     `json:"enabled"`
			Config  configRef `json:"config"`
		} `json:"devicePlugin"`
		MIGManager struct {
			Enabled *bool     `json:"enabled"`
			Config  configRef `json:"config"`
		} `json:"migManager"`
		GFD struct {
			Enabled *bool `json:"enabled"`
		} `json:"gfd"`
		Operator struct {
			RuntimeClass string `json:"runtimeClass"`
		} `json:"operator"`
	} `json:"spec"`
}

type configRef struct {
	Name    string `json:"name"`
	Default string `json:"default"`
}

// ParseClusterPolicy reads the settings from a ClusterPolicy manifest,
// applying the Operator's defaults (components enabled, runtime class
// nvidia). An unset spec.mig.strategy stays "" (see MIGStrategy).
func ParseClusterPolicy(data []byte) (ClusterPolicySettings, error) {
	var doc clusterPolicyDoc
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return ClusterPolicySettings{}, fmt.Errorf("ClusterPolicy: %w", err)
	}
	if doc.Kind != "ClusterPolicy" {
		return ClusterPolicySettings{}, fmt.Errorf("kind: want ClusterPolicy, got %q", doc.Kind)
	}
	s := doc.Spec
	out := ClusterPolicySettings{
		MIGStrategy:         s.MIG.Strategy,
		DevicePluginEnabled: enabled(s.DevicePlugin.Enabled),
		DevicePluginConfig:  s.DevicePlugin.Config.Name,
		DevicePluginDefault: s.DevicePlugin.Config.Default,
		MIGManagerEnabled:   enabled(s.MIGManager.Enabled),
		MIGManagerConfig:    s.MIGManager.Config.Name,
		MIGManagerDefault:   s.MIGManager.Config.Default,
		GFDEnabled:          enabled(s.GFD.Enabled),
		RuntimeClass:        s.Operator.RuntimeClass,
	}
	if out.MIGStrategy != "" && !oneOf(out.MIGStrategy, MIGStrategies) {
		return out, fmt.Errorf("spec.mig.strategy: unknown MIG strategy %q (valid: %s)", out.MIGStrategy, strings.Join(MIGStrategies, ", "))
	}
	if out.RuntimeClass == "" {
		out.RuntimeClass = "nvidia"
	}
	return out, nil
}

func enabled(b *bool) bool { return b == nil || *b }
