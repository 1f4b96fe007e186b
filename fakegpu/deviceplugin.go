// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Sharing strategies as GFD's nvidia.com/gpu.sharing-strategy label spells them.
const (
	SharingNone        = "none"
	SharingTimeSlicing = "time-slicing"
	SharingMPS         = "mps"
)

// MIG strategies of the device plugin (flags.migStrategy, ClusterPolicy mig.strategy).
const (
	MIGStrategyNone   = "none"
	MIGStrategySingle = "single"
	MIGStrategyMixed  = "mixed"
)

// MIGStrategies lists the valid MIG strategies.
var MIGStrategies = []string{MIGStrategyNone, MIGStrategySingle, MIGStrategyMixed}

// DevicePluginConfig is the device plugin's config file, version v1
// (NVIDIA/k8s-device-plugin: api/config/v1), read as leniently as upstream
// reads it (stack-facts §1): unknown keys are dropped, not refused. They
// are kept in Warnings, because a typo (renameByDefualt) silently gives a
// different pool and a platform team wants to hear of it.
type DevicePluginConfig struct {
	Version string            `json:"version"`
	Flags   DevicePluginFlags `json:"flags,omitempty"`
	// Resources is upstream's top-level resources section, which the plugin
	// ignores with a warning.
	Resources any                `json:"resources,omitempty"`
	Sharing   DevicePluginShares `json:"sharing,omitempty"`
	Imex      *Imex              `json:"imex,omitempty"`

	// Warnings are what upstream would ignore (with or without a log line)
	// and the simulator reports: unknown keys, a custom rename, devices or
	// resources section.
	Warnings []string `json:"-"`
}

// DevicePluginFlags holds the keys of flags (DP@1b826acc api/config/v1/flags.go
// CommandLineFlags). Only migStrategy changes what a node advertises; the
// others are accepted so a valid config reads without warnings.
type DevicePluginFlags struct {
	MigStrategy             *string      `json:"migStrategy,omitempty"`
	FailOnInitError         *bool        `json:"failOnInitError,omitempty"`
	MpsRoot                 *string      `json:"mpsRoot,omitempty"`
	NvidiaDriverRoot        *string      `json:"nvidiaDriverRoot,omitempty"`
	NvidiaDevRoot           *string      `json:"nvidiaDevRoot,omitempty"`
	GDRCopyEnabled          *bool        `json:"gdrcopyEnabled,omitempty"`
	GDSEnabled              *bool        `json:"gdsEnabled,omitempty"`
	MOFEDEnabled            *bool        `json:"mofedEnabled,omitempty"`
	UseNodeFeatureAPI       *bool        `json:"useNodeFeatureAPI,omitempty"`
	DeviceDiscoveryStrategy *string      `json:"deviceDiscoveryStrategy,omitempty"`
	Plugin                  *PluginFlags `json:"plugin,omitempty"`
	GFD                     *GFDFlags    `json:"gfd,omitempty"`
}

// PluginFlags is flags.plugin.
type PluginFlags struct {
	PassDeviceSpecs               *bool   `json:"passDeviceSpecs,omitempty"`
	DeviceListStrategy            any     `json:"deviceListStrategy,omitempty"` // a string or a list
	DeviceIDStrategy              *string `json:"deviceIDStrategy,omitempty"`
	CDIAnnotationPrefix           *string `json:"cdiAnnotationPrefix,omitempty"`
	NvidiaCTKPath                 *string `json:"nvidiaCTKPath,omitempty"`
	ContainerDriverRoot           *string `json:"containerDriverRoot,omitempty"`
	SharedDevicesAllocationPolicy *string `json:"sharedDevicesAllocationPolicy,omitempty"`
}

// GFDFlags is flags.gfd.
type GFDFlags struct {
	Oneshot         *bool   `json:"oneshot,omitempty"`
	NoTimestamp     *bool   `json:"noTimestamp,omitempty"`
	SleepInterval   any     `json:"sleepInterval,omitempty"` // a duration string
	OutputFile      *string `json:"outputFile,omitempty"`
	MachineTypeFile *string `json:"machineTypeFile,omitempty"`
}

// Imex is the imex section (DP@1b826acc api/config/v1/imex.go).
type Imex struct {
	ChannelIDs []int `json:"channelIDs,omitempty"`
	Required   bool  `json:"required,omitempty"`
}

// DevicePluginShares is the sharing section: time-slicing or MPS.
type DevicePluginShares struct {
	TimeSlicing *ReplicatedResources `json:"timeSlicing,omitempty"`
	MPS         *ReplicatedResources `json:"mps,omitempty"`
}

// ReplicatedResources is sharing.timeSlicing / sharing.mps.
type ReplicatedResources struct {
	RenameByDefault            bool                 `json:"renameByDefault,omitempty"`
	FailRequestsGreaterThanOne *bool                `json:"failRequestsGreaterThanOne,omitempty"`
	Resources                  []ReplicatedResource `json:"resources,omitempty"`
}

// ReplicatedResource is one entry of sharing.*.resources.
type ReplicatedResource struct {
	Name     string `json:"name"`
	Rename   string `json:"rename,omitempty"`
	Devices  any    `json:"devices,omitempty"`
	Replicas int    `json:"replicas"`

	// replicasSet: the document has the key (upstream tells a missing
	// replicas from replicas: 0).
	replicasSet bool
}

// Upstream's warnings for the fields it ignores (DP@1b826acc
// api/config/v1/config.go DisableResourceNamingInConfig, replicas.go
// disableResoureRenaming), word for word; %s is timeSlicing or mps.
const (
	warnRename    = "Setting the 'rename' field in sharing.%s.resources is not yet supported in the config. Ignoring..."
	warnDevices   = "Customizing the 'devices' field in sharing.%s.resources is not yet supported in the config. Ignoring..."
	warnResources = "Customizing the 'resources' field is not yet supported in the config. Ignoring..."
)

// ParseDevicePluginConfig decodes and validates one device-plugin config
// document as the plugin loads it (stack-facts §1): unknown keys dropped (and
// reported in Warnings), an empty version read as v1, resource names
// given the nvidia.com/ prefix, a custom rename, devices or resources
// section ignored with upstream's warning. Errors carry the field path and
// upstream's wording.
func ParseDevicePluginConfig(data []byte) (*DevicePluginConfig, error) {
	var c DevicePluginConfig
	if err := yaml.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("error parsing config file: %w", err)
	}
	var doc any
	if yaml.Unmarshal(data, &doc) == nil {
		var unknown []string
		unknownPaths(doc, reflect.TypeOf(c), "", &unknown)
		for _, p := range unknown {
			c.Warnings = append(c.Warnings, p+": unknown field, dropped (the plugin's parser is not strict)")
		}
	}
	markReplicasSet(doc, &c)
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.disableRenaming()
	return &c, nil
}

// Validate applies the checks the real plugin makes when it loads a config
// (DP@1b826acc api/config/v1/config.go parseConfigFrom, replicas.go
// UnmarshalJSON, resources.go NewResourceName). Resource names are
// normalised to their nvidia.com/ form as a side effect.
func (c *DevicePluginConfig) Validate() error {
	switch c.Version {
	case "":
		c.Version = "v1"
	case "v1":
	default:
		return fmt.Errorf("version: unknown version: %s", c.Version)
	}
	if s := c.Flags.MigStrategy; s != nil && !oneOf(*s, MIGStrategies) {
		return fmt.Errorf("flags.migStrategy: unknown MIG strategy %q (valid: %s)", *s, strings.Join(MIGStrategies, ", "))
	}
	for _, sh := range []struct {
		field string
		rr    *ReplicatedResources
	}{{"sharing.timeSlicing", c.Sharing.TimeSlicing}, {"sharing.mps", c.Sharing.MPS}} {
		if sh.rr == nil {
			continue
		}
		if len(sh.rr.Resources) == 0 {
			return fmt.Errorf("%s.resources: no resources specified", sh.field)
		}
		for i := range sh.rr.Resources {
			r := &sh.rr.Resources[i]
			path := fmt.Sprintf("%s.resources[%d]", sh.field, i)
			if r.Name == "" {
				return fmt.Errorf("%s.name: no resource name specified", path)
			}
			name, err := NewResourceName(r.Name)
			if err != nil {
				return fmt.Errorf("%s.name: %w", path, err)
			}
			r.Name = name
			switch {
			case r.Replicas == 0 && !r.replicasSet:
				return fmt.Errorf("%s.replicas: no replicas specified", path)
			case r.Replicas < 2:
				return fmt.Errorf("%s.replicas: number of replicas must be >= 2, got %d", path, r.Replicas)
			}
		}
	}
	return nil
}

// markReplicasSet records which resource entries of the decoded document
// have a replicas key.
func markReplicasSet(doc any, c *DevicePluginConfig) {
	sharing, _ := asMap(doc)["sharing"].(map[string]any)
	for name, rr := range map[string]*ReplicatedResources{"timeSlicing": c.Sharing.TimeSlicing, "mps": c.Sharing.MPS} {
		if rr == nil {
			continue
		}
		entries, _ := asMap(sharing[name])["resources"].([]any)
		for i := range rr.Resources {
			if i < len(entries) {
				_, rr.Resources[i].replicasSet = asMap(entries[i])["replicas"]
			}
		}
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// NewResourceName is a sharing resource name as the plugin reads it: the
// nvidia.com/ prefix is added when missing ("gpu" is nvidia.com/gpu), and
// what follows it must be a DNS subdomain (DP@1b826acc
// api/config/v1/resources.go NewResourceName).
func NewResourceName(n string) (string, error) {
	if !strings.HasPrefix(n, LabelPrefix) {
		n = LabelPrefix + n
	}
	if len(n) > 63 {
		return "", fmt.Errorf("fully-qualified resource name must be 63 characters or less: %s", n)
	}
	if invalid := validation.IsDNS1123Subdomain(strings.TrimPrefix(n, LabelPrefix)); len(invalid) > 0 {
		return "", fmt.Errorf("incorrect format for resource name '%s': %v", n, invalid)
	}
	return n, nil
}

// disableRenaming does what the plugin and GFD do before they use a config
// (stack-facts §1): a custom rename is cleared, or forced to <name>.shared
// under renameByDefault; a custom devices list is reset to every GPU; a
// top-level resources section is dropped. Each is a warning, not an error.
func (c *DevicePluginConfig) disableRenaming() {
	if c.Resources != nil {
		c.Resources = nil
		c.Warnings = append(c.Warnings, "resources: "+warnResources)
	}
	for _, sh := range []struct {
		name string
		rr   *ReplicatedResources
	}{{"timeSlicing", c.Sharing.TimeSlicing}, {"mps", c.Sharing.MPS}} {
		if sh.rr == nil {
			continue
		}
		for i := range sh.rr.Resources {
			r := &sh.rr.Resources[i]
			path := fmt.Sprintf("sharing.%s.resources[%d]", sh.name, i)
			if r.Rename != "" && !(sh.rr.RenameByDefault && r.Rename == r.Name+".shared") {
				c.Warnings = append(c.Warnings, path+".rename: "+fmt.Sprintf(warnRename, sh.name))
			}
			r.Rename = "" // Replicas derives the name from renameByDefault alone
			if r.Devices != nil {
				c.Warnings = append(c.Warnings, path+".devices: "+fmt.Sprintf(warnDevices, sh.name))
				r.Devices = nil
			}
		}
	}
}

// Sharing reports which sharing strategy the config selects and its
// settings. When both are set the real plugin uses MPS.
func (c *DevicePluginConfig) SharingMode() (strategy string, rr *ReplicatedResources) {
	switch {
	case c == nil:
		return SharingNone, nil
	case c.Sharing.MPS != nil:
		return SharingMPS, c.Sharing.MPS
	case c.Sharing.TimeSlicing != nil:
		return SharingTimeSlicing, c.Sharing.TimeSlicing
	}
	return SharingNone, nil
}

// FailsRequestsGreaterThanOne reports whether a pod asking for more than one
// replica of a shared resource is refused at Allocate. Unset means false for
// time-slicing and true for MPS.
func (c *DevicePluginConfig) FailsRequestsGreaterThanOne() bool {
	strategy, rr := c.SharingMode()
	switch {
	case rr == nil:
		return false
	case rr.FailRequestsGreaterThanOne != nil:
		return *rr.FailRequestsGreaterThanOne
	}
	return strategy == SharingMPS
}

// Replicas returns the replica count for resource name (1 when not shared),
// and the name the shared resource is advertised under.
func (c *DevicePluginConfig) Replicas(name string) (replicas int, advertisedAs string) {
	_, rr := c.SharingMode()
	if rr == nil {
		return 1, name
	}
	for _, r := range rr.Resources {
		if r.Name != name {
			continue
		}
		if rr.RenameByDefault {
			return r.Replicas, name + ".shared"
		}
		return r.Replicas, name
	}
	return 1, name
}

// SharedReplicas maps each shared resource, by the name it is advertised
// under, to its replicas per device. A nil config shares nothing.
func (c *DevicePluginConfig) SharedReplicas() map[string]int {
	out := map[string]int{}
	_, rr := c.SharingMode()
	if rr == nil {
		return out
	}
	for _, r := range rr.Resources {
		replicas, name := c.Replicas(r.Name)
		out[name] = replicas
	}
	return out
}

// DevicePluginConfigs is the device-plugin ConfigMap: one config per key, a
// node choosing its key with the nvidia.com/device-plugin.config label.
type DevicePluginConfigs map[string]*DevicePluginConfig

// ParseDevicePluginConfigs parses every key of a device-plugin ConfigMap's
// data. A key that does not load is returned in broken with its error, not
// refused: the config-manager only checks that the key exists, and only
// the nodes selecting it fail to load it (stack-facts §1, blast radius).
func ParseDevicePluginConfigs(data map[string]string) (cfgs DevicePluginConfigs, broken map[string]error) {
	cfgs, broken = DevicePluginConfigs{}, map[string]error{}
	for key, doc := range data {
		c, err := ParseDevicePluginConfig([]byte(doc))
		if err != nil {
			broken[key] = err
			continue
		}
		cfgs[key] = c
	}
	return cfgs, broken
}

func oneOf(s string, valid []string) bool {
	for _, v := range valid {
		if s == v {
			return true
		}
	}
	return false
}

var unknownFieldRE = regexp.MustCompile(`unknown field "([^"]*)"`)

// unmarshalStrict is yaml.UnmarshalStrict with unknown-field errors that
// name the field's path (sharing.timeSlicing.resources[0].replica), which
// encoding/json leaves out: the document is walked against v's json tags.
// The original message is kept.
func unmarshalStrict(data []byte, v any) error {
	err := yaml.UnmarshalStrict(data, v)
	m := unknownFieldRE.FindStringSubmatch(fmt.Sprint(err))
	if m == nil {
		return err
	}
	var doc any
	if yaml.Unmarshal(data, &doc) != nil {
		return err
	}
	var paths []string
	unknownPaths(doc, reflect.TypeOf(v), "", &paths)
	for _, p := range paths {
		if p == m[1] || strings.HasSuffix(p, "."+m[1]) {
			return fmt.Errorf("%s: unknown field (%w)", p, err)
		}
	}
	return err
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// unknownPaths appends the paths of the keys in doc (as decoded into any)
// that type t has no json field for, matching names as encoding/json does.
func unknownPaths(doc any, t reflect.Type, path string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return // decodes itself
	}
	switch d := doc.(type) {
	case map[string]any:
		keys := make([]string, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub := k
			if path != "" {
				sub = path + "." + k
			}
			switch t.Kind() {
			case reflect.Map:
				unknownPaths(d[k], t.Elem(), sub, out)
			case reflect.Struct:
				if ft, ok := jsonField(t, k); ok {
					unknownPaths(d[k], ft, sub, out)
				} else {
					*out = append(*out, sub)
				}
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, e := range d {
				unknownPaths(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), out)
			}
		}
	}
}

// jsonField finds the type of struct t's field that encoding/json would
// decode key into: exact name first, then case-insensitively, looking into
// embedded structs.
func jsonField(t reflect.Type, key string) (reflect.Type, bool) {
	var fold reflect.Type
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && tag == "" && ft.Kind() == reflect.Struct {
			if et, ok := jsonField(ft, key); ok {
				return et, true
			}
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		switch {
		case tag == key:
			return f.Type, true
		case fold == nil && strings.EqualFold(tag, key):
			fold = f.Type
		}
	}
	return fold, fold != nil
}
