package fakegpu

import (
	"slices"
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
		bug     string
	}{
		{
			// DP: api/config/v1 — a config with only the version is valid
			name: "minimal v1",
			doc:  "version: v1\n",
			check: func(r reporter, c *DevicePluginConfig) {
				if s, rr := c.SharingMode(); s != SharingNone || rr != nil {
					r.Errorf("SharingMode() = %q, %v; want none, nil", s, rr)
				}
			},
		},
		{
			// DP: api/config/v1 — flags.migStrategy none
			name: "migStrategy none",
			doc:  "version: v1\nflags:\n  migStrategy: none\n",
		},
		{
			// DP: api/config/v1 — flags.migStrategy single
			name: "migStrategy single",
			doc:  "version: v1\nflags:\n  migStrategy: single\n",
			check: func(r reporter, c *DevicePluginConfig) {
				if c.Flags.MigStrategy == nil || *c.Flags.MigStrategy != MIGStrategySingle {
					r.Errorf("flags.migStrategy = %v, want single", c.Flags.MigStrategy)
				}
			},
		},
		{
			// DP: api/config/v1 — flags.migStrategy mixed, with other plugin/gfd flags
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
			// DP: api/config/v1 — sharing.timeSlicing with the documented fields
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
			// DP: api/config/v1 — sharing.mps
			name: "mps",
			doc:  dpMPS3,
			check: func(r reporter, c *DevicePluginConfig) {
				if s, _ := c.SharingMode(); s != SharingMPS {
					r.Errorf("SharingMode() = %q, want mps", s)
				}
			},
		},
		{
			// DP: api/config/v1 — a MIG resource can be time-sliced
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
			// DP: api/config/v1 — replicas exactly 2 is the minimum
			name: "replicas 2",
			doc:  "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n",
		},
		{
			// DP: api/config/v1 — version other than v1: "unknown version"
			name:    "unknown version v2",
			doc:     "version: v2\n",
			wantErr: []string{"version", "unknown version"},
		},
		{
			// DP: api/config/v1 — version other than v1: "unknown version"
			name:    "unknown version v1beta1",
			doc:     "version: v1beta1\nflags:\n  migStrategy: none\n",
			wantErr: []string{"version", "unknown version"},
		},
		{
			// DP: api/config/v1 — time-slicing replicas must be >= 2
			name:    "time-slicing replicas 1",
			doc:     "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 1\n",
			wantErr: []string{"sharing.timeSlicing.resources[0].replicas", "number of replicas must be >= 2"},
		},
		{
			// DP: api/config/v1 — the check applies to every resource entry
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
			// DP: api/config/v1 — MPS replicas must be >= 2 too
			name:    "mps replicas 1",
			doc:     "version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 1\n",
			wantErr: []string{"sharing.mps.resources[0].replicas", "number of replicas must be >= 2"},
		},
		{
			// DP: api/config/v1 — an empty resources list: "no resources specified"
			name:    "time-slicing empty resources",
			doc:     "version: v1\nsharing:\n  timeSlicing:\n    resources: []\n",
			wantErr: []string{"sharing.timeSlicing.resources", "no resources specified"},
		},
		{
			// DP: api/config/v1 — resources missing altogether: "no resources specified"
			name:    "time-slicing without resources",
			doc:     "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n",
			wantErr: []string{"sharing.timeSlicing.resources", "no resources specified"},
		},
		{
			// DP: api/config/v1 — "no resources specified" for MPS as well
			name:    "mps empty resources",
			doc:     "version: v1\nsharing:\n  mps:\n    resources: []\n",
			wantErr: []string{"sharing.mps.resources", "no resources specified"},
		},
		{
			// DP: api/config/v1 — flags.migStrategy is one of none|single|mixed
			name:    "bad migStrategy",
			doc:     "version: v1\nflags:\n  migStrategy: both\n",
			wantErr: []string{"flags.migStrategy", `"both"`},
		},
		{
			// DP: api/config/v1 — strict: an unknown top-level field is an error
			name:    "unknown top-level field",
			doc:     "version: v1\nsharingg:\n  timeSlicing: {}\n",
			wantErr: []string{`unknown field "sharingg"`},
		},
		{
			// DP: api/config/v1 — strict: a typo inside flags is an error
			name:    "unknown field in flags",
			doc:     "version: v1\nflags:\n  migStrategy: none\n  migStrategyy: mixed\n",
			wantErr: []string{`unknown field "migStrategyy"`},
		},
		{
			// DP: api/config/v1 — strict: a typo inside a resource entry is an error
			name:    "unknown field in a resource",
			doc:     "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replica: 4\n",
			wantErr: []string{`unknown field "replica"`},
		},
		{
			// Contract of ParseDevicePluginConfig ("Errors carry the field path", deviceplugin.go:71),
			// asked of this suite; DP: api/config/v1 itself is not strict. Path here: flags.migStrategyy
			name:    "unknown field error names its path in flags",
			doc:     "version: v1\nflags:\n  migStrategyy: mixed\n",
			wantErr: []string{"flags.migStrategyy"},
		},
		{
			// Contract of ParseDevicePluginConfig ("Errors carry the field path", deviceplugin.go:71),
			// asked of this suite; DP: api/config/v1 itself is not strict. Path here: sharing.timeSlicing.resources[0].replica
			name:    "unknown field error names its path in a resource",
			doc:     "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replica: 4\n",
			wantErr: []string{"sharing.timeSlicing.resources[0].replica"},
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
		})
	}
}

func TestParseDevicePluginConfigs(t *testing.T) {
	tests := []struct {
		name     string
		data     map[string]string
		wantKeys []string
		wantErr  []string
	}{
		{
			// DP: api/config/v1 — each key of the config ConfigMap is one config file
			name:     "two keys",
			data:     map[string]string{"default": "version: v1\n", "ts": dpTimeSlicing4},
			wantKeys: []string{"default", "ts"},
		},
		{
			// DP: api/config/v1 — a bad config names its ConfigMap key and field
			name:     "one bad key",
			data:     map[string]string{"default": "version: v1\n", "bad": "version: v1\nsharing:\n  mps:\n    resources: []\n"},
			wantKeys: []string{"default"},
			wantErr:  []string{"data[bad]", "sharing.mps.resources", "no resources specified"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDevicePluginConfigs(tc.data)
			checkErr(t, err, tc.wantErr...)
			if keys := sortedKeys(got); !slices.Equal(keys, tc.wantKeys) {
				t.Errorf("keys = %v, want %v", keys, tc.wantKeys)
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
		// DP: api/config/v1 — no config, no sharing: nothing to refuse
		{"nil config", "", false},
		// DP: api/config/v1 — no sharing section
		{"no sharing", "version: v1\n", false},
		// DP: api/config/v1 — time-slicing, failRequestsGreaterThanOne unset = false
		{"time-slicing unset", dpTimeSlicing4, false},
		// DP: api/config/v1 — time-slicing, explicitly true
		{"time-slicing true", "version: v1\nsharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: true\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n", true},
		// DP: api/config/v1 — time-slicing, explicitly false
		{"time-slicing false", "version: v1\nsharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: false\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n", false},
		// DP: api/config/v1 — MPS, failRequestsGreaterThanOne unset = true
		{"mps unset", dpMPS3, true},
		// DP: api/config/v1 — MPS, explicitly relaxed to false
		{"mps false", "version: v1\nsharing:\n  mps:\n    failRequestsGreaterThanOne: false\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 3\n", false},
		// DP: api/config/v1 — both set, MPS wins: time-slicing's false is ignored, MPS unset = true
		{"both set, mps unset wins", "version: v1\nsharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: false\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 3\n", true},
		// DP: api/config/v1 — both set, MPS wins: time-slicing's true is ignored, MPS false
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
	// DP: api/config/v1 — if both timeSlicing and mps are set, MPS wins
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
		// DP: api/config/v1 — no config: one replica, plain name
		{"nil config", "", ResourceGPU, 1, ResourceGPU},
		// DP: api/config/v1 — no sharing: one replica, plain name
		{"no sharing", "version: v1\n", ResourceGPU, 1, ResourceGPU},
		// DP: api/config/v1 — time-slicing without rename keeps the name
		{"time-slicing", dpTimeSlicing4, ResourceGPU, 4, ResourceGPU},
		// DP: api/config/v1 — renameByDefault: <name>.shared
		{"renameByDefault", dpTimeSlicing4Renamed, ResourceGPU, 4, "nvidia.com/gpu.shared"},
		// DP: api/config/v1 — an explicit rename, short form, gets the nvidia.com/ prefix
		{"explicit rename short", "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      rename: gpu-ts\n      replicas: 4\n", ResourceGPU, 4, "nvidia.com/gpu-ts"},
		// DP: api/config/v1 — an explicit rename, fully qualified
		{"explicit rename qualified", "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      rename: nvidia.com/gpu-ts\n      replicas: 4\n", ResourceGPU, 4, "nvidia.com/gpu-ts"},
		// DP: api/config/v1 — an explicit rename beats renameByDefault
		{"explicit rename beats renameByDefault", "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n    - name: nvidia.com/gpu\n      rename: gpu-ts\n      replicas: 4\n", ResourceGPU, 4, "nvidia.com/gpu-ts"},
		// DP: api/config/v1 — a resource not listed is not shared
		{"resource not listed", dpTimeSlicing4Renamed, "nvidia.com/mig-1g.5gb", 1, "nvidia.com/mig-1g.5gb"},
		// DP: api/config/v1 — MIG resource with renameByDefault
		{"MIG resource renameByDefault", "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n    - name: nvidia.com/mig-1g.5gb\n      replicas: 2\n", "nvidia.com/mig-1g.5gb", 2, "nvidia.com/mig-1g.5gb.shared"},
		// DP: api/config/v1 — MPS with renameByDefault
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
