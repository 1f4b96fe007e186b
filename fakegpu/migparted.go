package fakegpu

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// MIGPartedConfig is mig-parted's config file, version v1
// (NVIDIA/mig-parted: api/spec/v1): named layouts, each a list of device
// groups.
type MIGPartedConfig struct {
	Version    string                       `json:"version"`
	MigConfigs map[string][]MIGDeviceLayout `json:"mig-configs"`
}

// MIGDeviceLayout is one entry of a named layout.
type MIGDeviceLayout struct {
	// Devices is "all" or a list of GPU indices.
	Devices      MIGDeviceSelector `json:"devices"`
	DeviceFilter StringOrList      `json:"device-filter,omitempty"`
	MigEnabled   bool              `json:"mig-enabled"`
	MigDevices   map[string]int    `json:"mig-devices,omitempty"`
}

// MIGDeviceSelector is `devices: all` or `devices: [0, 1]`.
type MIGDeviceSelector struct {
	All     bool
	Indices []int
}

// UnmarshalJSON accepts "all" or a list of indices.
func (d *MIGDeviceSelector) UnmarshalJSON(b []byte) error {
	var s string
	if err := yaml.Unmarshal(b, &s); err == nil {
		if s != "all" {
			return fmt.Errorf("devices: want \"all\" or a list of GPU indices, got %q", s)
		}
		d.All = true
		return nil
	}
	var idx []int
	if err := yaml.Unmarshal(b, &idx); err != nil {
		return fmt.Errorf("devices: want \"all\" or a list of GPU indices: %w", err)
	}
	d.Indices = idx
	return nil
}

// MarshalJSON writes the selector back in the same form.
func (d MIGDeviceSelector) MarshalJSON() ([]byte, error) {
	if d.All {
		return []byte(`"all"`), nil
	}
	parts := make([]string, len(d.Indices))
	for i, n := range d.Indices {
		parts[i] = strconv.Itoa(n)
	}
	return []byte("[" + strings.Join(parts, ",") + "]"), nil
}

// Selects reports whether GPU index i is in the selector.
func (d MIGDeviceSelector) Selects(i int) bool {
	if d.All {
		return true
	}
	for _, n := range d.Indices {
		if n == i {
			return true
		}
	}
	return false
}

// StringOrList accepts a single string or a list of strings.
type StringOrList []string

// UnmarshalJSON accepts either form.
func (s *StringOrList) UnmarshalJSON(b []byte) error {
	var one string
	if err := yaml.Unmarshal(b, &one); err == nil {
		*s = []string{one}
		return nil
	}
	var many []string
	if err := yaml.Unmarshal(b, &many); err != nil {
		return err
	}
	*s = many
	return nil
}

// ParseMIGPartedConfig decodes and validates a mig-parted config document.
func ParseMIGPartedConfig(data []byte) (*MIGPartedConfig, error) {
	var c MIGPartedConfig
	if err := unmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("mig-parted config: %w", err)
	}
	if c.Version != "v1" {
		return nil, fmt.Errorf("version: unknown version: %q (want v1)", c.Version)
	}
	for _, name := range c.Names() {
		for i, l := range c.MigConfigs[name] {
			path := fmt.Sprintf("mig-configs.%s[%d]", name, i)
			if !l.MigEnabled && len(l.MigDevices) > 0 {
				return nil, fmt.Errorf("%s: MIG devices included when 'mig-enabled' is false", path)
			}
			if l.MigEnabled && l.MigDevices == nil {
				return nil, fmt.Errorf("%s: missing required field 'mig-devices' when 'mig-enabled' is true", path)
			}
		}
	}
	return &c, nil
}

// Names lists the layouts, sorted.
func (c *MIGPartedConfig) Names() []string {
	names := make([]string, 0, len(c.MigConfigs))
	for n := range c.MigConfigs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// GPUState is the MIG state of one physical GPU after a layout is applied.
type GPUState struct {
	MIGEnabled bool
	// Devices counts MIG devices by profile name; empty when MIG is disabled
	// or enabled with no devices.
	Devices map[string]int
}

// Apply resolves the named layout for count GPUs of sku, as mig-parted
// would apply it. GPUs no entry selects keep MIG disabled. An error means the
// real manager would end in state "failed".
func (c *MIGPartedConfig) Apply(name string, sku SKU, count int) ([]GPUState, error) {
	layout, ok := c.MigConfigs[name]
	if !ok {
		return nil, fmt.Errorf("mig config %q does not exist (known: %s)", name, strings.Join(c.Names(), ", "))
	}
	gpus := make([]GPUState, count)
	for _, entry := range layout {
		if !entry.matches(sku) {
			continue
		}
		if entry.MigEnabled && !sku.MIGCapable() {
			return nil, fmt.Errorf("mig config %q: %s is not MIG-capable", name, sku.Product)
		}
		if err := checkFits(sku, entry.MigDevices); err != nil {
			return nil, fmt.Errorf("mig config %q: %w", name, err)
		}
		for i := range gpus {
			if entry.Devices.Selects(i) {
				gpus[i] = GPUState{MIGEnabled: entry.MigEnabled, Devices: entry.MigDevices}
			}
		}
	}
	return gpus, nil
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
// compute or memory slices than the GPU has.
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
