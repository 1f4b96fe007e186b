package fakegpu

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Stack is the GPU Operator configuration of a cluster: the ClusterPolicy
// and the ConfigMaps it names. Node labels pick a config out of it.
type Stack struct {
	// Policy is nil when no ClusterPolicy exists: no Operator, no device
	// plugin, nothing advertised.
	Policy *ClusterPolicySettings
	// DevicePlugin is the ConfigMap named by devicePlugin.config.name
	// (nil when no name is set: the plugin runs with its defaults).
	DevicePlugin DevicePluginConfigs
	// MIGParted is the mig-parted config the MIG manager uses.
	MIGParted *MIGPartedConfig
}

// NodeResult is what the simulated stack publishes for one node.
type NodeResult struct {
	Advertisement
	// MIGConfigState is the nvidia.com/mig.config.state value ("" when the
	// MIG manager does not run on this node).
	MIGConfigState string
}

// Node computes what a node with these labels and GPUs advertises. A
// failure of the device plugin (missing config key, invalid layout) is
// reported in Err with nothing advertised, as on a real node.
func (s *Stack) Node(labels map[string]string, inv NodeInventory) NodeResult {
	if s.Policy == nil || !s.Policy.DevicePluginEnabled {
		return NodeResult{Advertisement: Advertisement{
			Resources: map[string]int64{}, Labels: map[string]string{},
			Err: fmt.Errorf("no device plugin: the ClusterPolicy is missing or has devicePlugin.enabled=false"),
		}}
	}
	state := StackState{MIGStrategy: s.Policy.MIGStrategy}
	var res NodeResult
	cfg, err := s.DevicePluginConfigFor(labels)
	if err != nil {
		// The config manager exits: the plugin on this node is down.
		return NodeResult{Advertisement: Advertisement{Resources: map[string]int64{}, Labels: baseLabels(inv.SKU), Err: err}}
	}
	state.DevicePlugin = cfg

	if inv.SKU.MIGCapable() && s.Policy.MIGManagerEnabled && s.MIGParted != nil {
		layout := labels[LabelMIGConfig]
		if layout == "" {
			layout = s.Policy.MIGManagerDefault
		}
		if layout == "" {
			layout = "all-disabled"
		}
		gpus, err := s.MIGParted.Apply(layout, inv.SKU, inv.Count)
		if err != nil {
			res.MIGConfigState = "failed"
			// The GPUs keep whatever layout they had; a fresh node has MIG off.
		} else {
			res.MIGConfigState = "success"
			state.MIG = gpus
		}
	}
	res.Advertisement = Advertise(inv, state)
	if !s.Policy.GFDEnabled {
		res.Labels = map[string]string{}
	}
	if res.MIGConfigState != "" {
		res.Labels[LabelMIGConfigState] = res.MIGConfigState
	}
	return res
}

// DevicePluginConfigFor returns the device-plugin config a node with these
// labels runs with (nil: the plugin's defaults), or the error that stops
// the plugin's config manager.
func (s *Stack) DevicePluginConfigFor(labels map[string]string) (*DevicePluginConfig, error) {
	if s.Policy == nil || s.DevicePlugin == nil {
		return nil, nil
	}
	key := labels[LabelDevicePluginConfig]
	if key == "" {
		key = s.Policy.DevicePluginDefault
	}
	if key == "" {
		return nil, nil
	}
	cfg, ok := s.DevicePlugin[key]
	if !ok {
		return nil, fmt.Errorf("specified config %s does not exist (ConfigMap %s has: %s)",
			key, s.Policy.DevicePluginConfig, strings.Join(sortedKeys(s.DevicePlugin), ", "))
	}
	return cfg, nil
}

// StackFromObjects finds the ClusterPolicy among objs and the ConfigMaps it
// names. defaultMIG is the Operator's built-in mig-parted config, used when
// the ClusterPolicy names none (or names the Operator's default ConfigMap
// and objs do not override it).
func StackFromObjects(objs []*unstructured.Unstructured, defaultMIG *MIGPartedConfig) (*Stack, error) {
	s := &Stack{MIGParted: defaultMIG}
	configMaps := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterPolicy":
			if s.Policy != nil {
				return nil, fmt.Errorf("more than one ClusterPolicy (%s)", o.GetName())
			}
			data, err := o.MarshalJSON()
			if err != nil {
				return nil, err
			}
			p, err := ParseClusterPolicy(data)
			if err != nil {
				return nil, fmt.Errorf("ClusterPolicy %s: %w", o.GetName(), err)
			}
			s.Policy = &p
		case "ConfigMap":
			configMaps[o.GetName()] = o
		}
	}
	if s.Policy == nil {
		return s, nil
	}
	if name := s.Policy.DevicePluginConfig; name != "" {
		cm, ok := configMaps[name]
		if !ok {
			return nil, fmt.Errorf("ClusterPolicy spec.devicePlugin.config.name: ConfigMap %q is not in the candidate", name)
		}
		data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		cfgs, err := ParseDevicePluginConfigs(data)
		if err != nil {
			return nil, fmt.Errorf("ConfigMap %s: %w", name, err)
		}
		if d := s.Policy.DevicePluginDefault; d != "" && cfgs[d] == nil {
			return nil, fmt.Errorf("ClusterPolicy spec.devicePlugin.config.default: key %q is not in ConfigMap %s (has: %s)", d, name, strings.Join(sortedKeys(cfgs), ", "))
		}
		s.DevicePlugin = cfgs
	}
	if name := s.Policy.MIGManagerConfig; name != "" {
		if cm, ok := configMaps[name]; ok {
			doc, found, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
			if !found {
				return nil, fmt.Errorf("ConfigMap %s: data[config.yaml]: required by the MIG manager", name)
			}
			cfg, err := ParseMIGPartedConfig([]byte(doc))
			if err != nil {
				return nil, fmt.Errorf("ConfigMap %s: data[config.yaml]: %w", name, err)
			}
			s.MIGParted = cfg
		} else if name != DefaultMIGPartedConfigMap {
			return nil, fmt.Errorf("ClusterPolicy spec.migManager.config.name: ConfigMap %q is not in the candidate", name)
		}
	}
	return s, nil
}

// DefaultMIGPartedConfigMap is the ConfigMap the GPU Operator ships its
// default mig-parted config in (GO: assets/state-mig-manager/0400_configmap.yaml).
const DefaultMIGPartedConfigMap = "default-mig-parted-config"

// AsStackInput converts a typed object, as an informer holds it (with an
// empty TypeMeta), into the form StackFromObjects reads, which matches on
// kind.
func AsStackInput(obj runtime.Object, kind string) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetKind(kind)
	return u, nil
}
