// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"errors"
	"fmt"
	"sort"
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
	// (nil when no name is set: the plugin runs with its defaults), and
	// DevicePluginBroken its keys that do not load, with the parser's error.
	DevicePlugin       DevicePluginConfigs
	DevicePluginBroken map[string]error
	// MIGParted is the mig-parted config the MIG manager uses, or
	// MIGPartedErr why the file it mounts does not parse (MIGParted is then
	// nil): the candidate is accepted, and every run of the manager fails
	// (stack-facts §4 "mig-parted config", blast radius).
	MIGParted    *MIGPartedConfig
	MIGPartedErr error
}

// NodeResult is what the simulated stack publishes for one node.
type NodeResult struct {
	Advertisement
	// MIGConfigState is the nvidia.com/mig.config.state value ("" when the
	// MIG manager does not run on this node, or has no layout to apply).
	MIGConfigState string
}

// Node computes what a fresh node (GPUs with MIG disabled, no history)
// with these labels and GPUs publishes once the stack has settled: Desired
// with no reconfiguration delay. A failure of the device plugin (missing
// config key, invalid layout) is reported in Err with nothing advertised,
// as on a real node. Labels are the stack's own (GFD's and
// mig.config.state), not the Operator's.
func (s *Stack) Node(labels map[string]string, inv NodeInventory) NodeResult {
	d := s.Desired(inv, NodeObservation{Labels: labels, Annotations: map[string]string{}}, 0)
	res := NodeResult{MIGConfigState: d.Labels[LabelMIGConfigState]}
	res.Resources = d.Capacity
	res.Labels = map[string]string{}
	for k, v := range d.Labels {
		if stackOwnedLabel(k) {
			res.Labels[k] = v
		}
	}
	if d.PluginDown != "" {
		res.Err = errors.New(d.PluginDown)
	}
	return res
}

// advertise is what the device plugin and GFD publish on a node whose GPUs
// are in MIG state gpus, under the config its labels select.
func (s *Stack) advertise(labels map[string]string, inv NodeInventory, gpus []GPUState) Advertisement {
	if s.Policy == nil || !s.Policy.DevicePluginEnabled {
		return Advertisement{
			Resources: map[string]int64{}, Labels: map[string]string{},
			Err: fmt.Errorf("no device plugin: the ClusterPolicy is missing or has devicePlugin.enabled=false"),
		}
	}
	cfg, err := s.DevicePluginConfigFor(labels)
	if err != nil {
		// The config-manager (or the plugin) exits on this node, and GFD,
		// which reads the same key, with it: nothing advertised, no labels.
		return Advertisement{Resources: map[string]int64{}, Labels: map[string]string{}, Err: err}
	}
	res := Advertise(inv, StackState{MIGStrategy: s.Policy.MIGStrategy, DevicePlugin: cfg, MIG: gpus})
	if !s.Policy.GFDEnabled {
		res.Labels = map[string]string{}
	}
	return res
}

// unhealthy lists the device IDs the plugin on a node reports unhealthy
// after the Xids injected on it (AnnotationXid), per advertised resource.
func (s *Stack) unhealthy(node string, labels map[string]string, inv NodeInventory, gpus []GPUState, xidAnnotation string) (map[string][]string, error) {
	xids, err := ParseXids(xidAnnotation, inv.Count)
	if err != nil || len(xids) == 0 || s.Policy == nil {
		return nil, err
	}
	cfg, _ := s.DevicePluginConfigFor(labels)
	return UnhealthyDevices(node, inv, StackState{MIGStrategy: s.Policy.MIGStrategy, DevicePlugin: cfg, MIG: gpus}, xids, s.Policy.DevicePluginEnv), nil
}

// DevicePluginConfigFor returns the device-plugin config a node with these
// labels runs with (nil: the plugin's defaults), or the error that keeps
// the plugin from serving on it. Only the selected key matters (stack-facts §1,
// DP@1b826acc cmd/config-manager/main.go updateConfigName): a key that
// does not exist stops the config-manager with upstream's message (for a
// missing default it prints the empty label, hence two spaces), and a key
// that does not parse stops the plugin itself.
func (s *Stack) DevicePluginConfigFor(labels map[string]string) (*DevicePluginConfig, error) {
	if s.Policy == nil || s.DevicePlugin == nil {
		return nil, nil
	}
	label := labels[LabelDevicePluginConfig]
	key := label
	if key == "" {
		key = s.Policy.DevicePluginDefault
	}
	if key == "" {
		return nil, nil // FALLBACK_STRATEGIES=empty: plain GPUs
	}
	if err, ok := s.DevicePluginBroken[key]; ok {
		return nil, fmt.Errorf("unable to load config: unable to finalize config: unable to parse config file: error parsing config file: %w (ConfigMap %s, key %s)", err, s.Policy.DevicePluginConfig, key)
	}
	cfg, ok := s.DevicePlugin[key]
	if !ok {
		return nil, fmt.Errorf("specified config %s does not exist (ConfigMap %s has: %s)",
			label, s.Policy.DevicePluginConfig, strings.Join(s.devicePluginKeys(), ", "))
	}
	return cfg, nil
}

// devicePluginKeys lists every key of the device-plugin ConfigMap, loaded or not.
func (s *Stack) devicePluginKeys() []string {
	keys := sortedKeys(s.DevicePlugin)
	for k := range s.DevicePluginBroken {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Warnings lists what a platform team should hear of the candidate's GPU
// Operator config although the real stack accepts it: keys that will fail
// on the nodes selecting them, a default key that is missing, and what the
// device plugin ignores (unknown fields, custom renames).
func (s *Stack) Warnings() []string {
	if s.Policy == nil || s.DevicePlugin == nil {
		return s.migPartedWarnings(nil)
	}
	cm := s.Policy.DevicePluginConfig
	var out []string
	for _, k := range sortedKeys(s.DevicePluginBroken) {
		out = append(out, fmt.Sprintf("ConfigMap %s data[%s]: %v: the device plugin will not start on nodes that select it", cm, k, s.DevicePluginBroken[k]))
	}
	if d := s.Policy.DevicePluginDefault; d != "" && s.DevicePlugin[d] == nil && s.DevicePluginBroken[d] == nil {
		out = append(out, fmt.Sprintf("ClusterPolicy spec.devicePlugin.config.default: key %q is not in ConfigMap %s (has: %s): no device plugin will run on GPU nodes without %s",
			d, cm, strings.Join(s.devicePluginKeys(), ", "), LabelDevicePluginConfig))
	}
	for _, k := range sortedKeys(s.DevicePlugin) {
		for _, w := range s.DevicePlugin[k].Warnings {
			out = append(out, fmt.Sprintf("ConfigMap %s data[%s]: %s", cm, k, w))
		}
		out = append(out, overriddenFlags(cm, k, s.DevicePlugin[k])...)
	}
	return s.migPartedWarnings(out)
}

// overriddenFlags are the config file's plugin flags the GPU Operator's
// DaemonSet sets in the plugin's environment, which beats the file
// (stack-facts §1 precedence; access §4.3): the file's value never applies;
// spec.devicePlugin.env is where to set it.
func overriddenFlags(cm, key string, c *DevicePluginConfig) []string {
	if c == nil || c.Flags.Plugin == nil {
		return nil
	}
	var out []string
	for _, f := range []struct {
		set        bool
		field, env string
	}{
		{c.Flags.Plugin.DeviceListStrategy != nil, "deviceListStrategy", "DEVICE_LIST_STRATEGY"},
		{c.Flags.Plugin.DeviceIDStrategy != nil, "deviceIDStrategy", "DEVICE_ID_STRATEGY"},
		{c.Flags.Plugin.PassDeviceSpecs != nil, "passDeviceSpecs", "PASS_DEVICE_SPECS"},
	} {
		if f.set {
			out = append(out, fmt.Sprintf("ConfigMap %s data[%s]: flags.plugin.%s is ignored: the GPU Operator sets %s in the device plugin's environment, which wins over the config file; set it in ClusterPolicy spec.devicePlugin.env", cm, key, f.field, f.env))
		}
	}
	return out
}

// migPartedWarnings adds a mig-parted file that does not parse: the MIG
// manager then fails on every MIG node it runs on (stack-facts §4, blast
// radius).
func (s *Stack) migPartedWarnings(out []string) []string {
	if s.Policy == nil || s.MIGPartedErr == nil {
		return out
	}
	return append(out, fmt.Sprintf("%v: the MIG manager will end failed on every MIG-capable node it runs on", s.MIGPartedErr))
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
		s.DevicePlugin, s.DevicePluginBroken = ParseDevicePluginConfigs(data)
	}
	if name := s.Policy.MIGManagerConfig; name != "" {
		if cm, ok := configMaps[name]; ok {
			// A file that does not parse (or is missing, which the doc does
			// not cover and is taken alike) fails the MIG manager's runs,
			// not the candidate (stack-facts §4, blast radius).
			var err error
			if doc, found, _ := unstructured.NestedString(cm.Object, "data", "config.yaml"); found {
				s.MIGParted, err = ParseMIGPartedConfig([]byte(doc))
			} else {
				err = fmt.Errorf("required by the MIG manager, not in the ConfigMap")
			}
			if err != nil {
				s.MIGParted, s.MIGPartedErr = nil, fmt.Errorf("ConfigMap %s: data[config.yaml]: %w", name, err)
			}
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
