// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"encoding/json"
	"fmt"
	"strconv"
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
	// What decides whether a container without the nvidia handler sees
	// its GPU (stack-facts §6): spec.cdi.enabled (unset: false in the served
	// CRD), spec.toolkit.enabled, and whether the toolkit makes nvidia the
	// default runtime (its installer does unless toolkit.env says
	// NVIDIA_RUNTIME_SET_AS_DEFAULT or CONTAINERD_SET_AS_DEFAULT=false).
	CDIEnabled          bool
	ToolkitEnabled      bool
	ToolkitSetAsDefault bool
	// DevicePluginEnv is spec.devicePlugin.env: DP_DISABLE_HEALTHCHECKS and
	// DP_ENABLE_HEALTHCHECKS decide which Xids mark a GPU unhealthy,
	// DEVICE_LIST_STRATEGY and DEVICE_ID_STRATEGY what Allocate returns.
	DevicePluginEnv map[string]string
	// Toolkit is what spec.toolkit.env makes of the toolkit's config.toml
	// (access §1.4), and ToolkitVersion spec.toolkit.version, the image
	// tag ("" = the Operator's own, ToolkitDefaultVersion).
	Toolkit        ToolkitSettings
	ToolkitVersion string
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
			Env     []envVar  `json:"env"`
		} `json:"devicePlugin"`
		MIGManager struct {
			Enabled *bool      `json:"enabled"`
			Config  *configRef `json:"config"`
		} `json:"migManager"`
		GFD struct {
			Enabled *bool `json:"enabled"`
		} `json:"gfd"`
		CDI struct {
			Enabled *bool `json:"enabled"`
		} `json:"cdi"`
		Toolkit struct {
			Enabled *bool    `json:"enabled"`
			Env     []envVar `json:"env"`
			Version string   `json:"version"`
		} `json:"toolkit"`
		Operator struct {
			RuntimeClass string `json:"runtimeClass"`
		} `json:"operator"`
	} `json:"spec"`
}

type envVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type configRef struct {
	Name    string `json:"name"`
	Default string `json:"default"`
	// NameSet, DefaultSet: the manifest has the key (the CRD defaults only
	// absent keys; default "" is a valid choice).
	NameSet, DefaultSet bool `json:"-"`
}

// UnmarshalJSON records whether default was given.
func (c *configRef) UnmarshalJSON(b []byte) error {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	type plain configRef
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*c = configRef(p)
	_, c.NameSet = m["name"]
	_, c.DefaultSet = m["default"]
	return nil
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

		GFDEnabled:          enabled(s.GFD.Enabled),
		RuntimeClass:        s.Operator.RuntimeClass,
		CDIEnabled:          s.CDI.Enabled != nil && *s.CDI.Enabled,
		ToolkitEnabled:      enabled(s.Toolkit.Enabled),
		ToolkitSetAsDefault: true,
	}
	if c := s.MIGManager.Config; c != nil {
		// The served CRD defaults both fields, but only inside a config
		// object that is present (GOmod@d73a0086 CRD; stack-facts §4 step 1
		// names the default, the CRD and GOmod state_manager.go, which
		// checks Config != nil, say it applies only then).
		out.MIGManagerConfig, out.MIGManagerDefault = c.Name, c.Default
		if !c.NameSet {
			out.MIGManagerConfig = DefaultMIGPartedConfigMap
		}
		if out.MIGManagerDefault == "" && !c.DefaultSet {
			out.MIGManagerDefault = MIGConfigAllDisabled
		}
	}
	for _, e := range s.DevicePlugin.Env {
		if out.DevicePluginEnv == nil {
			out.DevicePluginEnv = map[string]string{}
		}
		out.DevicePluginEnv[e.Name] = e.Value
	}
	out.ToolkitVersion = s.Toolkit.Version
	for i, e := range s.Toolkit.Env {
		if (e.Name == "NVIDIA_RUNTIME_SET_AS_DEFAULT" || e.Name == "CONTAINERD_SET_AS_DEFAULT") && strings.EqualFold(e.Value, "false") {
			out.ToolkitSetAsDefault = false
		}
		// The installer reads these as boolean flags from the environment
		// (access §1.4); a value it cannot parse stops the toolkit, so it
		// is refused here with the field named.
		var dst *bool
		var want bool
		switch e.Name {
		case "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED":
			dst, want = &out.Toolkit.EnvvarRefusedUnprivileged, false
		case "ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS":
			dst, want = &out.Toolkit.VolumeMountsAccepted, true
		default:
			continue
		}
		b, err := strconv.ParseBool(e.Value)
		if err != nil {
			return out, fmt.Errorf("spec.toolkit.env[%d] (%s): %q is not a boolean", i, e.Name, e.Value)
		}
		*dst = b == want
	}
	for i, st := range out.DeviceListStrategy() {
		if !oneOf(st, DeviceListStrategies) {
			return out, fmt.Errorf("spec.devicePlugin.env DEVICE_LIST_STRATEGY: invalid strategy: %s (valid: %s; entry %d)", st, strings.Join(DeviceListStrategies, ", "), i)
		}
	}
	if id := out.DeviceIDStrategy(); id != "uuid" && id != "index" {
		return out, fmt.Errorf("spec.devicePlugin.env DEVICE_ID_STRATEGY: invalid strategy: %s (valid: uuid, index)", id)
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

// OperatorRuntimeClass is the RuntimeClass the Operator creates for a
// ClusterPolicy: named spec.operator.runtimeClass, with the handler of
// the same name (stack-facts §6, "The RuntimeClass the Operator makes").
// With CDI off it is the only one; the others it deletes.
func (c ClusterPolicySettings) OperatorRuntimeClass() (name, handler string) {
	return c.RuntimeClass, c.RuntimeClass
}
