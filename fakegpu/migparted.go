// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// MIGPartedConfig is mig-parted's config file, version v1
// (stack-facts §4 "mig-parted config", MP@bd7160f4 api/spec/v1): named layouts,
// each a list of device groups.
type MIGPartedConfig struct {
	Version    string
	MigConfigs map[string][]MIGDeviceLayout
}

// MIGDeviceLayout is one entry of a named layout.
type MIGDeviceLayout struct {
	// Devices is "all" or a list of GPU indices.
	Devices      MIGDeviceSelector
	DeviceFilter []string // PCI device ids; empty: every GPU
	MigEnabled   bool
	MigDevices   map[string]int
}

// MIGDeviceSelector is `devices: all` or `devices: [0, 1]`.
type MIGDeviceSelector struct {
	All     bool
	Indices []int
}

// Selects reports whether GPU index i is in the selector.
func (d MIGDeviceSelector) Selects(i int) bool {
	return d.All || slices.Contains(d.Indices, i)
}

// ParseMIGPartedConfig decodes and validates a mig-parted config document
// as mig-parted's strict parser does (stack-facts §4, MP@bd7160f4 api/spec/v1
// spec.go Spec.UnmarshalJSON, MigConfigSpec.UnmarshalJSON): unknown keys
// and missing required fields are errors, with upstream's messages behind
// the path of the field.
func ParseMIGPartedConfig(data []byte) (*MIGPartedConfig, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("mig-parted config: %w", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(js, &top); err != nil {
		return nil, fmt.Errorf("mig-parted config: %w", err)
	}
	rawVersion, ok := top["version"]
	if !ok && len(top) > 0 {
		return nil, fmt.Errorf("unable to parse with missing 'version' field")
	}
	c := &MIGPartedConfig{}
	if ok {
		if err := json.Unmarshal(rawVersion, &c.Version); err != nil {
			return nil, fmt.Errorf("version: %w", err)
		}
	}
	if c.Version != "v1" {
		return nil, fmt.Errorf("version: unknown version: %s (want v1)", c.Version)
	}
	for _, k := range sortedKeys(top) {
		if k != "version" && k != "mig-configs" {
			return nil, fmt.Errorf("unexpected field: %s", k)
		}
	}
	rawConfigs, ok := top["mig-configs"]
	if !ok {
		return c, nil // upstream accepts it; every name is then unknown
	}
	var layouts map[string][]json.RawMessage
	if err := json.Unmarshal(rawConfigs, &layouts); err != nil {
		return nil, fmt.Errorf("mig-configs: %w", err)
	}
	if len(layouts) == 0 {
		return nil, fmt.Errorf("mig-configs: at least one entry in 'mig-configs' is required")
	}
	c.MigConfigs = map[string][]MIGDeviceLayout{}
	for _, name := range sortedKeys(layouts) {
		if len(layouts[name]) == 0 {
			// The same upstream check, one level down (not in the facts doc).
			return nil, fmt.Errorf("mig-configs.%s: at least one entry in '%s' is required", name, name)
		}
		for i, raw := range layouts[name] {
			l, err := parseMIGDeviceLayout(raw)
			if err != nil {
				return nil, fmt.Errorf("mig-configs.%s[%d]%w", name, i, err)
			}
			c.MigConfigs[name] = append(c.MigConfigs[name], l)
		}
	}
	return c, nil
}

// pathErr is an error about field (".devices"), or about the entry itself
// (field ""); ParseMIGPartedConfig puts the entry's path in front.
func pathErr(field, format string, args ...any) error {
	return fmt.Errorf("%s: %w", field, fmt.Errorf(format, args...))
}

// parseMIGDeviceLayout reads one entry of a layout, checking in a fixed
// order what upstream checks in map order.
func parseMIGDeviceLayout(raw json.RawMessage) (MIGDeviceLayout, error) {
	var l MIGDeviceLayout
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return l, pathErr("", "%v", err)
	}
	for _, r := range []string{"devices", "mig-enabled"} {
		if _, ok := fields[r]; !ok {
			return l, pathErr("", "missing required field: %s", r)
		}
	}
	for _, k := range sortedKeys(fields) {
		if !oneOf(k, []string{"devices", "device-filter", "mig-enabled", "mig-devices"}) {
			return l, pathErr("", "unexpected field: %s", k)
		}
	}
	var err error
	if l.Devices, err = parseDevices(fields["devices"]); err != nil {
		return l, pathErr(".devices", "%v", err)
	}
	if raw, ok := fields["device-filter"]; ok {
		if l.DeviceFilter, err = parseStringOrList(raw); err != nil {
			return l, pathErr(".device-filter", "%v", err)
		}
	}
	if err := json.Unmarshal(fields["mig-enabled"], &l.MigEnabled); err != nil {
		return l, pathErr(".mig-enabled", "%v", err)
	}
	if raw, ok := fields["mig-devices"]; ok {
		l.MigDevices = map[string]int{} // present, even as null: not "missing"
		if err := json.Unmarshal(raw, &l.MigDevices); err != nil {
			return l, pathErr(".mig-devices", "%v", err)
		}
		if err := assertValidFormat(l.MigDevices); err != nil {
			return l, pathErr(".mig-devices", "%v", err)
		}
	}
	if l.MigEnabled && l.MigDevices == nil {
		return l, pathErr("", "missing required field 'mig-devices' when 'mig-enabled' is true")
	}
	if !l.MigEnabled && len(l.MigDevices) > 0 {
		return l, pathErr("", "MIG devices included when 'mig-enabled' is false")
	}
	return l, nil
}

// parseDevices accepts "all" or a list of GPU indices.
func parseDevices(raw json.RawMessage) (MIGDeviceSelector, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s != "all" {
			return MIGDeviceSelector{}, fmt.Errorf("invalid string input for 'devices': %s", s)
		}
		return MIGDeviceSelector{All: true}, nil
	}
	var idx []int
	if err := json.Unmarshal(raw, &idx); err != nil {
		return MIGDeviceSelector{}, fmt.Errorf("want \"all\" or a list of GPU indices, got %s", raw)
	}
	return MIGDeviceSelector{Indices: idx}, nil
}

// parseStringOrList accepts a single string or a list of strings.
func parseStringOrList(raw json.RawMessage) ([]string, error) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, fmt.Errorf("want a string or a list of strings, got %s", raw)
	}
	return many, nil
}

// assertValidFormat is mig-parted's check of mig-devices (stack-facts §4,
// MP@bd7160f4 pkg/types/mig_config.go AssertValidFormat). An empty map is
// valid (all-enabled: MIG on, no devices).
func assertValidFormat(devices map[string]int) error {
	if len(devices) == 0 {
		return nil
	}
	for _, name := range sortedKeys(devices) {
		if !migProfileFormat.MatchString(name) || !uniqueAttributes(name) {
			return fmt.Errorf("invalid format for '%s'", name)
		}
	}
	for _, n := range devices {
		if n > 0 {
			return nil
		}
	}
	return fmt.Errorf("all counts for all MigProfiles are 0")
}

// migProfileFormat is the profile string mig-parted accepts: [<c>c.]<g>g.<gb>gb,
// optionally followed by "+" or "-" and comma-separated attributes
// ("1g.5gb+me", "1g.24gb-me", "1g.24gb+me.all"). The rule is go-nvlib's
// (v0.12.0, vendored by MP@bd7160f4: pkg/nvlib/device/mig_profile.go);
// the facts doc names only the error.
var migProfileFormat = regexp.MustCompile(`^([0-9]+c\.)?[0-9]+g\.[0-9]+gb([+-]` + migAttr + `(,` + migAttr + `)*)?$`)

// migAttr is one attribute: letters, digits and inner dots, not starting
// with a digit.
const migAttr = `[A-Za-z]([A-Za-z0-9.]*[A-Za-z0-9])?`

// uniqueAttributes: an attribute may not repeat ("1g.5gb+me,me").
func uniqueAttributes(profile string) bool {
	i := strings.IndexAny(profile, "+-")
	if i < 0 {
		return true
	}
	attrs := strings.Split(profile[i+1:], ",")
	slices.Sort(attrs)
	return len(slices.Compact(attrs)) == len(strings.Split(profile[i+1:], ","))
}

// Names lists the layouts, sorted.
func (c *MIGPartedConfig) Names() []string {
	return sortedKeys(c.MigConfigs)
}

// GPUState is the MIG state of one physical GPU.
type GPUState struct {
	MIGEnabled bool `json:"mig,omitempty"`
	// Devices counts MIG devices by profile name; empty when MIG is disabled
	// or enabled with no devices.
	Devices map[string]int `json:"devices,omitempty"`
}

// equal compares two GPUs' MIG state.
func (g GPUState) equal(o GPUState) bool {
	return g.MIGEnabled == o.MIGEnabled && maps.Equal(g.Devices, o.Devices)
}

// sameGPUs reports whether two nodes' GPUs are in the same MIG state.
func sameGPUs(a, b []GPUState) bool {
	return slices.EqualFunc(a, b, GPUState.equal)
}

// Apply resolves the named layout for count GPUs of sku with MIG disabled
// (a fresh node), as mig-parted would apply it. See ApplyTo.
func (c *MIGPartedConfig) Apply(name string, sku SKU, count int) ([]GPUState, error) {
	return c.ApplyTo(name, sku, make([]GPUState, count))
}

// ApplyTo applies the named layout to GPUs of sku currently in state
// current, as mig-parted apply does: only the GPUs an entry matches (by
// devices and device-filter) change; the others keep their MIG mode and
// devices (stack-facts §4, MP@bd7160f4 cmd/nvidia-mig-parted/apply/config.go
// ApplyMigConfig). An error means the real manager would end in state
// "failed", the GPUs unchanged.
func (c *MIGPartedConfig) ApplyTo(name string, sku SKU, current []GPUState) ([]GPUState, error) {
	layout, err := c.layout(name)
	if err != nil {
		return nil, err
	}
	gpus := slices.Clone(current)
	for _, entry := range layout {
		selected := entry.selected(sku, len(gpus))
		if len(selected) == 0 {
			continue // apply walks only matched GPUs: nothing to check
		}
		if entry.MigEnabled && !sku.MIGCapable() {
			return nil, fmt.Errorf("mig config %q: %s is not MIG-capable", name, sku.Product)
		}
		if err := checkFits(sku, entry.MigDevices); err != nil {
			return nil, fmt.Errorf("mig config %q: %w", name, err)
		}
		for _, i := range selected {
			gpus[i] = entry.state()
		}
	}
	return gpus, nil
}

// Assert is `nvidia-mig-parted assert`: nil when the GPUs are already in
// the named layout. Every GPU must be matched by an entry (stack-facts §4,
// MP@bd7160f4 cmd/nvidia-mig-parted/assert/config.go AssertMigConfig), so
// a layout that leaves a GPU out is never already applied.
func (c *MIGPartedConfig) Assert(name string, sku SKU, current []GPUState) error {
	layout, err := c.layout(name)
	if err != nil {
		return err
	}
	matched := make([]*MIGDeviceLayout, len(current))
	for e := range layout {
		for _, i := range layout[e].selected(sku, len(current)) {
			matched[i] = &layout[e]
		}
	}
	for i, entry := range matched {
		if entry == nil {
			return fmt.Errorf("not all GPUs match the specified config")
		}
		if !current[i].equal(entry.state()) {
			return fmt.Errorf("GPU %d is not in mig config %q", i, name)
		}
	}
	return nil
}

func (c *MIGPartedConfig) layout(name string) ([]MIGDeviceLayout, error) {
	layout, ok := c.MigConfigs[name]
	if !ok {
		return nil, fmt.Errorf("mig config %q does not exist (known: %s)", name, strings.Join(c.Names(), ", "))
	}
	return layout, nil
}

// selected lists the GPU indices below count this entry applies to.
func (e MIGDeviceLayout) selected(sku SKU, count int) []int {
	if !e.matches(sku) {
		return nil
	}
	var out []int
	for i := 0; i < count; i++ {
		if e.Devices.Selects(i) {
			out = append(out, i)
		}
	}
	return out
}

// state is what the entry leaves a matched GPU in; profiles with count 0
// create nothing.
func (e MIGDeviceLayout) state() GPUState {
	s := GPUState{MIGEnabled: e.MigEnabled}
	for name, n := range e.MigDevices {
		if n > 0 {
			if s.Devices == nil {
				s.Devices = map[string]int{}
			}
			s.Devices[name] = n
		}
	}
	return s
}

func (e MIGDeviceLayout) matches(sku SKU) bool {
	if len(e.DeviceFilter) == 0 {
		return true
	}
	for _, f := range e.DeviceFilter {
		for _, id := range sku.PCIDeviceIDs {
			if strings.EqualFold(f, id) {
				return true
			}
		}
	}
	return false
}

// checkFits rejects profiles the GPU lacks and layouts that need more
// compute or memory slices than the GPU has (stack-facts §4 step 8).
func checkFits(sku SKU, devices map[string]int) error {
	compute, memory := 0, 0
	for _, name := range sortedKeys(devices) {
		n := devices[name]
		p, ok := sku.Profile(name)
		if !ok {
			return fmt.Errorf("%s has no MIG profile %q (has: %s)", sku.Product, name, strings.Join(sku.ProfileNames(), ", "))
		}
		if n > p.MaxPerGPU {
			return fmt.Errorf("%d × %s does not fit %s (at most %d)", n, name, sku.Product, p.MaxPerGPU)
		}
		compute += n * p.ComputeSlices
		memory += n * p.MemorySlices
	}
	if compute > sku.ComputeSlices || memory > sku.MemorySlices {
		return fmt.Errorf("layout needs %d compute and %d memory slices; %s has %d and %d",
			compute, memory, sku.Product, sku.ComputeSlices, sku.MemorySlices)
	}
	return nil
}

// EncodeGPUStates and DecodeGPUStates are the form the controller records
// the GPUs' MIG state in (AnnotationMIGGPUs).
func EncodeGPUStates(gpus []GPUState) string {
	b, _ := json.Marshal(gpus) // maps of strings and ints: cannot fail
	return string(b)
}

func DecodeGPUStates(s string) ([]GPUState, error) {
	var gpus []GPUState
	if err := json.Unmarshal([]byte(s), &gpus); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", AnnotationMIGGPUs, err)
	}
	return gpus, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ParseMIGPartedConfigMap reads a ConfigMap manifest holding a mig-parted
// config under data["config.yaml"], as the GPU Operator ships and mounts it.
func ParseMIGPartedConfigMap(manifest []byte) (*MIGPartedConfig, error) {
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(manifest, &cm); err != nil {
		return nil, fmt.Errorf("malformed ConfigMap: %w", err)
	}
	doc, ok := cm.Data["config.yaml"]
	if !ok {
		return nil, fmt.Errorf("data[config.yaml]: required by the MIG manager")
	}
	cfg, err := ParseMIGPartedConfig([]byte(doc))
	if err != nil {
		return nil, fmt.Errorf("data[config.yaml]: %w", err)
	}
	return cfg, nil
}

// LoadMIGPartedConfigMap reads ParseMIGPartedConfigMap's input from a file;
// errors name the file.
func LoadMIGPartedConfigMap(path string) (*MIGPartedConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg, err := ParseMIGPartedConfigMap(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}
