// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"slices"
	"strings"
	"testing"
)

const dpTimeSlicing4 = `version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
`

const dpTimeSlicing4Renamed = `version: v1
sharing:
  timeSlicing:
    renameByDefault: true
    resources:
    - name: nvidia.com/gpu
      replicas: 4
`

const dpMPS3 = `version: v1
sharing:
  mps:
    resources:
    - name: nvidia.com/gpu
      replicas: 3
`

func TestParseDevicePluginConfig(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		wantErr []string // substrings; empty: the config must load
		check   func(r reporter, c *DevicePluginConfig)
		// warnings: substrings, one per expected warning; nil: not checked,
		// empty: none allowed
		warnings []string
		bug      string
	}{
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — a config with only the version is valid
			name: "minimal v1",
			doc:  "version: v1\n",
			check: func(r reporter, c *DevicePluginConfig) {
				if s, rr := c.SharingMode(); s != SharingNone || rr != nil {
					r.Errorf("SharingMode() = %q, %v; want none, nil", s, rr)
				}
			},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — flags.migStrategy none
			name: "migStrategy none",
			doc:  "version: v1\nflags:\n  migStrategy: none\n",
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — flags.migStrategy single
			name: "migStrategy single",
			doc:  "version: v1\nflags:\n  migStrategy: single\n",
			check: func(r reporter, c *DevicePluginConfig) {
				if c.Flags.MigStrategy == nil || *c.Flags.MigStrategy != MIGStrategySingle {
					r.Errorf("flags.migStrategy = %v, want single", c.Flags.MigStrategy)
				}
			},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — flags.migStrategy mixed, with other plugin/gfd flags
			name: "migStrategy mixed with plugin and gfd flags",
			doc: `version: v1
flags:
  migStrategy: mixed
  failOnInitError: true
  nvidiaDriverRoot: /run/nvidia/driver
  plugin:
    passDeviceSpecs: true
    deviceListStrategy: [envvar]
    deviceIDStrategy: uuid
  gfd:
    oneshot: false
    noTimestamp: true
`,
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — sharing.timeSlicing with the documented fields
			name: "time-slicing",
			doc: `version: v1
sharing:
  timeSlicing:
    renameByDefault: false
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 4
`,
			check: func(r reporter, c *DevicePluginConfig) {
				if s, rr := c.SharingMode(); s != SharingTimeSlicing || rr == nil || len(rr.Resources) != 1 || rr.Resources[0].Replicas != 4 {
					r.Errorf("SharingMode() = %q, %+v; want time-slicing with 4 replicas", s, rr)
				}
			},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — sharing.mps
			name: "mps",
			doc:  dpMPS3,
			check: func(r reporter, c *DevicePluginConfig) {
				if s, _ := c.SharingMode(); s != SharingMPS {
					r.Errorf("SharingMode() = %q, want mps", s)
				}
			},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — a MIG resource can be time-sliced
			name: "time-slicing a MIG resource",
			doc: `version: v1
flags:
  migStrategy: mixed
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/mig-1g.5gb
      replicas: 2
    - name: nvidia.com/gpu
      replicas: 3
`,
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — replicas exactly 2 is the minimum
			name: "replicas 2",
			doc:  "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n",
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — version other than v1: "unknown version"
			name:    "unknown version v2",
			doc:     "version: v2\n",
			wantErr: []string{"version", "unknown version"},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — version other than v1: "unknown version"
			name:    "unknown version v1beta1",
			doc:     "version: v1beta1\nflags:\n  migStrategy: none\n",
			wantErr: []string{"version", "unknown version"},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — time-slicing replicas must be >= 2
			name:    "time-slicing replicas 1",
			doc:     "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 1\n",
			wantErr: []string{"sharing.timeSlicing.resources[0].replicas", "number of replicas must be >= 2"},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — the check applies to every resource entry
			name: "time-slicing second resource replicas 0",
			doc: `version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
    - name: nvidia.com/mig-1g.5gb
      replicas: 0
`,
			wantErr: []string{"sharing.timeSlicing.resources[1].replicas", "number of replicas must be >= 2"},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — MPS replicas must be >= 2 too
			name:    "mps replicas 1",
			doc:     "version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 1\n",
			wantErr: []string{"sharing.mps.resources[0].replicas", "number of replicas must be >= 2"},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — an empty resources list: "no resources specified"
			name:    "time-slicing empty resources",
			doc:     "version: v1\nsharing:\n  timeSlicing:\n    resources: []\n",
			wantErr: []string{"sharing.timeSlicing.resources", "no resources specified"},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — resources missing altogether: "no resources specified"
			name:    "time-slicing without resources",
			doc:     "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n",
			wantErr: []string{"sharing.timeSlicing.resources", "no resources specified"},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — "no resources specified" for MPS as well
			name:    "mps empty resources",
			doc:     "version: v1\nsharing:\n  mps:\n    resources: []\n",
			wantErr: []string{"sharing.mps.resources", "no resources specified"},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — flags.migStrategy is one of none|single|mixed;
			// the error and its wording are the simulator's (the doc states none)
			name:    "bad migStrategy",
			doc:     "version: v1\nflags:\n  migStrategy: both\n",
			wantErr: []string{"flags.migStrategy", `"both"`},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1/config.go parseConfigFrom — not strict:
			// an unknown top-level key is dropped; the simulator reports it as a warning
			name:     "unknown top-level field dropped",
			doc:      "version: v1\nsharingg:\n  timeSlicing: {}\n",
			warnings: []string{"sharingg: unknown field"},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1/config.go parseConfigFrom — a typo
			// inside flags is dropped, the real key keeps its value
			name:     "unknown field in flags dropped",
			doc:      "version: v1\nflags:\n  migStrategy: none\n  migStrategyy: mixed\n",
			warnings: []string{"flags.migStrategyy: unknown field"},
			check: func(r reporter, c *DevicePluginConfig) {
				if c.Flags.MigStrategy == nil || *c.Flags.MigStrategy != MIGStrategyNone {
					r.Errorf("flags.migStrategy = %v, want none", c.Flags.MigStrategy)
				}
			},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1/config.go parseConfigFrom — the typo
			// renameByDefualt is dropped silently: the resource is not renamed
			name:     "renameByDefualt typo gives a different pool",
			doc:      "version: v1\nsharing:\n  timeSlicing:\n    renameByDefualt: true\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n",
			warnings: []string{"sharing.timeSlicing.renameByDefualt: unknown field"},
			check: func(r reporter, c *DevicePluginConfig) {
				if n, name := c.Replicas(ResourceGPU); n != 4 || name != ResourceGPU {
					r.Errorf("Replicas(gpu) = %d, %q; want 4, nvidia.com/gpu (not renamed)", n, name)
				}
			},
		},
		{
			// stack-facts §1: DP@1b826acc replicas.go UnmarshalJSON — "replica" is not
			// "replicas": the entry has none ("no replicas specified")
			name:    "replica typo leaves no replicas",
			doc:     "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replica: 4\n",
			wantErr: []string{"sharing.timeSlicing.resources[0].replicas", "no replicas specified"},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1/config.go parseConfigFrom — a
			// missing or empty version is v1
			name: "empty version is v1",
			doc:  "flags:\n  migStrategy: none\n",
			check: func(r reporter, c *DevicePluginConfig) {
				if c.Version != "v1" {
					r.Errorf("version = %q, want v1", c.Version)
				}
			},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1/resources.go NewResourceName — "gpu"
			// gets the nvidia.com/ prefix
			name: "name gpu is nvidia.com/gpu",
			doc:  "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 4\n",
			check: func(r reporter, c *DevicePluginConfig) {
				if n, name := c.Replicas(ResourceGPU); n != 4 || name != ResourceGPU {
					r.Errorf("Replicas(nvidia.com/gpu) = %d, %q; want 4, nvidia.com/gpu", n, name)
				}
			},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1/resources.go NewResourceName — an
			// invalid name: "incorrect format for resource name"
			name:    "invalid resource name",
			doc:     "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: Not_A_Name\n      replicas: 4\n",
			wantErr: []string{"sharing.timeSlicing.resources[0].name", "incorrect format for resource name"},
		},
		{
			// stack-facts §1: DP@1b826acc replicas.go UnmarshalJSON — "no resource name specified"
			name:    "resource without a name",
			doc:     "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - replicas: 4\n",
			wantErr: []string{"sharing.timeSlicing.resources[0].name", "no resource name specified"},
		},
		{
			// stack-facts §1: DP@1b826acc replicas.go UnmarshalJSON — timeSlicing: {} has
			// no resources
			name:    "empty timeSlicing",
			doc:     "version: v1\nsharing:\n  timeSlicing: {}\n",
			wantErr: []string{"sharing.timeSlicing.resources", "no resources specified"},
		},
		{
			// stack-facts §1: DP@1b826acc api/config/v1/flags.go CommandLineFlags, imex.go —
			// every key that exists is accepted without a warning
			name: "every valid key",
			doc: `version: v1
flags:
  migStrategy: mixed
  failOnInitError: true
  mpsRoot: /run/nvidia/mps
  nvidiaDriverRoot: /run/nvidia/driver
  nvidiaDevRoot: /
  gdrcopyEnabled: false
  gdsEnabled: false
  mofedEnabled: false
  useNodeFeatureAPI: false
  deviceDiscoveryStrategy: auto
  plugin:
    passDeviceSpecs: true
    deviceListStrategy: [envvar, cdi-annotations]
    deviceIDStrategy: uuid
    cdiAnnotationPrefix: cdi.k8s.io/
    nvidiaCTKPath: /usr/bin/nvidia-ctk
    containerDriverRoot: /driver-root
    sharedDevicesAllocationPolicy: simple
  gfd:
    oneshot: false
    noTimestamp: true
    sleepInterval: 60s
    outputFile: /etc/kubernetes/node-feature-discovery/features.d/gfd
    machineTypeFile: /sys/class/dmi/id/product_name
imex:
  channelIDs: [0]
  required: false
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 2
`,
			warnings: []string{},
		},
		{
			// stack-facts §1: DP@1b826acc config.go DisableResourceNamingInConfig — a custom
			// rename is ignored with upstream's warning; renameByDefault false clears it
			name:     "custom rename ignored",
			doc:      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      rename: gpu-ts\n      replicas: 4\n",
			warnings: []string{"sharing.timeSlicing.resources[0].rename: Setting the 'rename' field in sharing.timeSlicing.resources is not yet supported in the config. Ignoring..."},
			check: func(r reporter, c *DevicePluginConfig) {
				if n, name := c.Replicas(ResourceGPU); n != 4 || name != ResourceGPU {
					r.Errorf("Replicas(gpu) = %d, %q; want 4, nvidia.com/gpu", n, name)
				}
			},
		},
		{
			// stack-facts §1: DP@1b826acc replicas.go disableResoureRenaming — with
			// renameByDefault true a custom rename is forced to <name>.shared
			name:     "custom rename under renameByDefault",
			doc:      "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n    - name: nvidia.com/gpu\n      rename: gpu-ts\n      replicas: 4\n",
			warnings: []string{"rename: Setting the 'rename' field"},
			check: func(r reporter, c *DevicePluginConfig) {
				if n, name := c.Replicas(ResourceGPU); n != 4 || name != "nvidia.com/gpu.shared" {
					r.Errorf("Replicas(gpu) = %d, %q; want 4, nvidia.com/gpu.shared", n, name)
				}
			},
		},
		{
			// stack-facts §1: DP@1b826acc replicas.go disableResoureRenaming — a custom
			// devices list is reset to every GPU, with a warning
			name:     "custom devices ignored",
			doc:      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      devices: [0]\n      replicas: 4\n",
			warnings: []string{"devices: Customizing the 'devices' field in sharing.timeSlicing.resources is not yet supported in the config. Ignoring..."},
		},
		{
			// stack-facts §1: DP@1b826acc config.go DisableResourceNamingInConfig — a
			// top-level resources section is ignored with upstream's warning
			name:     "top-level resources ignored",
			doc:      "version: v1\nresources:\n  gpus:\n  - pattern: '*'\n    name: gpu-any\n",
			warnings: []string{"resources: Customizing the 'resources' field is not yet supported in the config. Ignoring..."},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRowCheck(t)
			defer r.finish(tc.bug)
			c, err := ParseDevicePluginConfig([]byte(tc.doc))
			checkErr(r, err, tc.wantErr...)
			if len(tc.wantErr) > 0 && c != nil {
				r.Errorf("want a nil config with the error, got %+v", c)
			}
			if err == nil && tc.check != nil {
				tc.check(r, c)
			}
			if err == nil && tc.warnings != nil {
				checkWarnings(r, c.Warnings, tc.warnings)
			}
		})
	}
}

func TestParseDevicePluginConfigs(t *testing.T) {
	tests := []struct {
		name     string
		data     map[string]string
		wantKeys []string
		// wantBroken maps each key that does not load to substrings of its error
		wantBroken map[string][]string
	}{
		{
			// stack-facts §1: DP@1b826acc api/config/v1 — each key of the config ConfigMap is one config file
			name:     "two keys",
			data:     map[string]string{"default": "version: v1\n", "ts": dpTimeSlicing4},
			wantKeys: []string{"default", "ts"},
		},
		{
			// stack-facts §1 "Per-node choice and blast radius": the config-manager never
			// parses the ConfigMap; a bad key is broken, the others load
			name:       "one bad key",
			data:       map[string]string{"default": "version: v1\n", "bad": "version: v1\nsharing:\n  mps:\n    resources: []\n"},
			wantKeys:   []string{"default"},
			wantBroken: map[string][]string{"bad": {"sharing.mps.resources", "no resources specified"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, broken := ParseDevicePluginConfigs(tc.data)
			if keys := sortedKeys(got); !slices.Equal(keys, tc.wantKeys) {
				t.Errorf("keys = %v, want %v", keys, tc.wantKeys)
			}
			if keys, want := sortedKeys(broken), sortedKeys(tc.wantBroken); !slices.Equal(keys, want) {
				t.Errorf("broken keys = %v, want %v", keys, want)
			}
			for k, subs := range tc.wantBroken {
				checkErr(t, broken[k], subs...)
			}
		})
	}
}

func TestFailsRequestsGreaterThanOne(t *testing.T) {
	tests := []struct {
		name string
		doc  string // "" = nil config (plugin defaults)
		want bool
	}{
		// stack-facts §1: DP@1b826acc api/config/v1 — no config, no sharing: nothing to refuse
		{"nil config", "", false},
		// stack-facts §1: DP@1b826acc api/config/v1 — no sharing section
		{"no sharing", "version: v1\n", false},
		// stack-facts §1: DP@1b826acc api/config/v1 — time-slicing, failRequestsGreaterThanOne unset = false
		{"time-slicing unset", dpTimeSlicing4, false},
		// stack-facts §1: DP@1b826acc api/config/v1 — time-slicing, explicitly true
		{"time-slicing true", "version: v1\nsharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: true\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n", true},
		// stack-facts §1: DP@1b826acc api/config/v1 — time-slicing, explicitly false
		{"time-slicing false", "version: v1\nsharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: false\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n", false},
		// stack-facts §1: DP@1b826acc api/config/v1 — MPS, failRequestsGreaterThanOne unset = true
		{"mps unset", dpMPS3, true},
		// stack-facts §1: DP@1b826acc api/config/v1 — MPS, explicitly relaxed to false
		{"mps false", "version: v1\nsharing:\n  mps:\n    failRequestsGreaterThanOne: false\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 3\n", false},
		// stack-facts §1: DP@1b826acc api/config/v1 — both set, MPS wins: time-slicing's false is ignored, MPS unset = true
		{"both set, mps unset wins", "version: v1\nsharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: false\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 3\n", true},
		// stack-facts §1: DP@1b826acc api/config/v1 — both set, MPS wins: time-slicing's true is ignored, MPS false
		{"both set, mps false wins", "version: v1\nsharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: true\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n  mps:\n    failRequestsGreaterThanOne: false\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 3\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c *DevicePluginConfig
			if tc.doc != "" {
				c = mustDevicePluginConfig(t, tc.doc)
			}
			if got := c.FailsRequestsGreaterThanOne(); got != tc.want {
				t.Errorf("FailsRequestsGreaterThanOne() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSharingModeMPSWins(t *testing.T) {
	// stack-facts §1: DP@1b826acc api/config/v1 — if both timeSlicing and mps are set, MPS wins
	c := mustDevicePluginConfig(t, "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 3\n")
	s, rr := c.SharingMode()
	if s != SharingMPS || rr != c.Sharing.MPS {
		t.Errorf("SharingMode() = %q, %p; want mps, %p", s, rr, c.Sharing.MPS)
	}
	if n, name := c.Replicas(ResourceGPU); n != 3 || name != ResourceGPU {
		t.Errorf("Replicas(nvidia.com/gpu) = %d, %q; want MPS's 3, nvidia.com/gpu", n, name)
	}
}

func TestReplicas(t *testing.T) {
	tests := []struct {
		name         string
		doc          string // "" = nil config
		resource     string
		wantReplicas int
		wantName     string
	}{
		// stack-facts §1: DP@1b826acc api/config/v1 — no config: one replica, plain name
		{"nil config", "", ResourceGPU, 1, ResourceGPU},
		// stack-facts §1: DP@1b826acc api/config/v1 — no sharing: one replica, plain name
		{"no sharing", "version: v1\n", ResourceGPU, 1, ResourceGPU},
		// stack-facts §1: DP@1b826acc api/config/v1 — time-slicing without rename keeps the name
		{"time-slicing", dpTimeSlicing4, ResourceGPU, 4, ResourceGPU},
		// stack-facts §1: DP@1b826acc api/config/v1 — renameByDefault: <name>.shared
		{"renameByDefault", dpTimeSlicing4Renamed, ResourceGPU, 4, "nvidia.com/gpu.shared"},
		// stack-facts §1: DP@1b826acc config.go DisableResourceNamingInConfig — an explicit
		// rename is ignored: the plain name is advertised
		{"explicit rename ignored", "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      rename: gpu-ts\n      replicas: 4\n", ResourceGPU, 4, ResourceGPU},
		// stack-facts §1: DP@1b826acc replicas.go disableResoureRenaming — under
		// renameByDefault an explicit rename becomes <name>.shared
		{"explicit rename under renameByDefault", "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n    - name: nvidia.com/gpu\n      rename: gpu-ts\n      replicas: 4\n", ResourceGPU, 4, "nvidia.com/gpu.shared"},
		// stack-facts §1: DP@1b826acc api/config/v1 — a resource not listed is not shared
		{"resource not listed", dpTimeSlicing4Renamed, "nvidia.com/mig-1g.5gb", 1, "nvidia.com/mig-1g.5gb"},
		// stack-facts §1: DP@1b826acc api/config/v1 — MIG resource with renameByDefault
		{"MIG resource renameByDefault", "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n    - name: nvidia.com/mig-1g.5gb\n      replicas: 2\n", "nvidia.com/mig-1g.5gb", 2, "nvidia.com/mig-1g.5gb.shared"},
		// stack-facts §1: DP@1b826acc api/config/v1 — MPS with renameByDefault
		{"mps renameByDefault", "version: v1\nsharing:\n  mps:\n    renameByDefault: true\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 3\n", ResourceGPU, 3, "nvidia.com/gpu.shared"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c *DevicePluginConfig
			if tc.doc != "" {
				c = mustDevicePluginConfig(t, tc.doc)
			}
			n, name := c.Replicas(tc.resource)
			if n != tc.wantReplicas || name != tc.wantName {
				t.Errorf("Replicas(%q) = %d, %q; want %d, %q", tc.resource, n, name, tc.wantReplicas, tc.wantName)
			}
		})
	}
}

// checkWarnings wants one warning containing each of want, and no others.
func checkWarnings(r reporter, got []string, want []string) {
	if len(got) != len(want) {
		r.Errorf("warnings = %q, want %d containing %q", got, len(want), want)
		return
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			r.Errorf("warning %q does not contain %q", got[i], w)
		}
	}
}
