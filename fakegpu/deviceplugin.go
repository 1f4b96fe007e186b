package fakegpu

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"

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
// (NVIDIA/k8s-device-plugin: api/config/v1). Only the fields that change what
// a node advertises are modelled; unknown fields are rejected so a typo is an
// error, not a silently different pool.
type DevicePluginConfig struct {
	Version string             `json:"version"`
	Flags   DevicePluginFlags  `json:"flags,omitempty"`
	Sharing DevicePluginShares `json:"sharing,omitempty"`
}

// DevicePluginFlags holds the flags that matter to the advertisement.
type DevicePluginFlags struct {
	MigStrategy *string `json:"migStrategy,omitempty"`
	// The real plugin has many more flags (fail-on-init-error, plugin,
	// gfd, ...); they are accepted and ignored.
	FailOnInitError  *bool          `json:"failOnInitError,omitempty"`
	NvidiaDriverRoot *string        `json:"nvidiaDriverRoot,omitempty"`
	Plugin           map[string]any `json:"plugin,omitempty"`
	GFD              map[string]any `json:"gfd,omitempty"`
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
}

// ParseDevicePluginConfig decodes and validates one device-plugin config
// document. Errors carry the field path and upstream's wording.
func ParseDevicePluginConfig(data []byte) (*DevicePluginConfig, error) {
	var c DevicePluginConfig
	if err := unmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("device-plugin config: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate applies the checks the real plugin makes when it loads a config.
func (c *DevicePluginConfig) Validate() error {
	if c.Version != "v1" {
		return fmt.Errorf("version: unknown version: %q (want v1)", c.Version)
	}
	if s := c.Flags.MigStrategy; s != nil && !oneOf(*s, MIGStrategies) {
		return fmt.Errorf("flags.migStrategy: unknown MIG strategy %q (valid: %s)", *s, strings.Join(MIGStrategies, ", "))
	}
	for field, rr := range map[string]*ReplicatedResources{"sharing.timeSlicing": c.Sharing.TimeSlicing, "sharing.mps": c.Sharing.MPS} {
		if rr == nil {
			continue
		}
		if len(rr.Resources) == 0 {
			return fmt.Errorf("%s.resources: no resources specified", field)
		}
		for i, r := range rr.Resources {
			path := fmt.Sprintf("%s.resources[%d]", field, i)
			if r.Name != "nvidia.com/gpu" && !strings.HasPrefix(r.Name, "nvidia.com/mig-") {
				return fmt.Errorf("%s.name: incorrect resource name %q (want nvidia.com/gpu or nvidia.com/mig-<profile>)", path, r.Name)
			}
			if r.Replicas < 2 {
				return fmt.Errorf("%s.replicas: number of replicas must be >= 2, got %d", path, r.Replicas)
			}
		}
	}
	return nil
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
		switch {
		case r.Rename != "":
			return r.Replicas, "nvidia.com/" + strings.TrimPrefix(r.Rename, "nvidia.com/")
		case rr.RenameByDefault:
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

// ParseDevicePluginConfigs parses every key of a device-plugin ConfigMap's data.
func ParseDevicePluginConfigs(data map[string]string) (DevicePluginConfigs, error) {
	out := DevicePluginConfigs{}
	var errs []error
	for key, doc := range data {
		c, err := ParseDevicePluginConfig([]byte(doc))
		if err != nil {
			errs = append(errs, fmt.Errorf("data[%s]: %w", key, err))
			continue
		}
		out[key] = c
	}
	return out, errors.Join(errs...)
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
