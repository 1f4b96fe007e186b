package fakegpu

import (
	"maps"
	"slices"
	"testing"
)

func TestParseMIGPartedConfig(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		wantErr []string
		check   func(r reporter, c *MIGPartedConfig)
	}{
		{
			// MP: api/spec/v1 — devices: all
			name: "devices all",
			doc:  "version: v1\nmig-configs:\n  all-1g.5gb:\n  - devices: all\n    mig-enabled: true\n    mig-devices:\n      \"1g.5gb\": 7\n",
			check: func(r reporter, c *MIGPartedConfig) {
				l := c.MigConfigs["all-1g.5gb"]
				if len(l) != 1 || !l[0].Devices.All || l[0].Devices.Indices != nil || !l[0].MigEnabled || l[0].MigDevices["1g.5gb"] != 7 {
					r.Errorf("all-1g.5gb = %+v", l)
				}
			},
		},
		{
			// MP: api/spec/v1 — devices: a list of GPU indices
			name: "devices index list",
			doc:  "version: v1\nmig-configs:\n  custom:\n  - devices: [0, 1, 3]\n    mig-enabled: true\n    mig-devices: {\"3g.20gb\": 2}\n  - devices: [2]\n    mig-enabled: false\n",
			check: func(r reporter, c *MIGPartedConfig) {
				l := c.MigConfigs["custom"]
				if len(l) != 2 || l[0].Devices.All || !slices.Equal(l[0].Devices.Indices, []int{0, 1, 3}) || !slices.Equal(l[1].Devices.Indices, []int{2}) {
					r.Errorf("custom = %+v", l)
				}
				for i, want := range []bool{true, true, false, true} {
					if got := l[0].Devices.Selects(i); got != want {
						r.Errorf("devices [0,1,3] Selects(%d) = %v", i, got)
					}
				}
			},
		},
		{
			// MP: api/spec/v1 — device-filter as a single string
			name: "device-filter string",
			doc:  "version: v1\nmig-configs:\n  a30:\n  - device-filter: \"0x20B710DE\"\n    devices: all\n    mig-enabled: true\n    mig-devices: {\"1g.6gb\": 4}\n",
			check: func(r reporter, c *MIGPartedConfig) {
				if f := c.MigConfigs["a30"][0].DeviceFilter; !slices.Equal(f, []string{"0x20B710DE"}) {
					r.Errorf("device-filter = %v", f)
				}
			},
		},
		{
			// MP: api/spec/v1 — device-filter as a list
			name: "device-filter list",
			doc:  "version: v1\nmig-configs:\n  a100:\n  - device-filter: [\"0x20B010DE\", \"0x20B110DE\"]\n    devices: all\n    mig-enabled: true\n    mig-devices: {\"1g.5gb\": 7}\n",
			check: func(r reporter, c *MIGPartedConfig) {
				if f := c.MigConfigs["a100"][0].DeviceFilter; !slices.Equal(f, []string{"0x20B010DE", "0x20B110DE"}) {
					r.Errorf("device-filter = %v", f)
				}
			},
		},
		{
			// MP: api/spec/v1 — mig-enabled true with an empty mig-devices map is valid (all-enabled)
			name: "mig enabled, no devices",
			doc:  "version: v1\nmig-configs:\n  all-enabled:\n  - devices: all\n    mig-enabled: true\n    mig-devices: {}\n",
		},
		{
			// MP: api/spec/v1 — mig-enabled false without mig-devices is valid (all-disabled)
			name: "mig disabled",
			doc:  "version: v1\nmig-configs:\n  all-disabled:\n  - devices: all\n    mig-enabled: false\n",
			check: func(r reporter, c *MIGPartedConfig) {
				if names := c.Names(); !slices.Equal(names, []string{"all-disabled"}) {
					r.Errorf("Names() = %v", names)
				}
			},
		},
		{
			// MP: api/spec/v1 — "MIG devices included when 'mig-enabled' is false"
			name:    "mig devices with mig disabled",
			doc:     "version: v1\nmig-configs:\n  bad:\n  - devices: all\n    mig-enabled: false\n    mig-devices: {\"1g.5gb\": 7}\n",
			wantErr: []string{"mig-configs.bad[0]", "MIG devices included when 'mig-enabled' is false"},
		},
		{
			// MP: api/spec/v1 — "missing required field 'mig-devices' when 'mig-enabled' is true"
			name:    "mig enabled without mig-devices",
			doc:     "version: v1\nmig-configs:\n  ok:\n  - devices: all\n    mig-enabled: false\n  bad:\n  - devices: [0]\n    mig-enabled: false\n  - devices: [1]\n    mig-enabled: true\n",
			wantErr: []string{"mig-configs.bad[1]", "missing required field 'mig-devices' when 'mig-enabled' is true"},
		},
		{
			// MP: api/spec/v1 — version other than v1 is refused
			name:    "unknown version",
			doc:     "version: v2\nmig-configs:\n  all-disabled:\n  - devices: all\n    mig-enabled: false\n",
			wantErr: []string{"version", "unknown version"},
		},
		{
			// MP: api/spec/v1 — devices as a string other than "all" is refused
			name:    "devices bad string",
			doc:     "version: v1\nmig-configs:\n  bad:\n  - devices: some\n    mig-enabled: false\n",
			wantErr: []string{"devices"},
		},
		{
			// MP: api/spec/v1 — unexpected fields are refused
			name:    "unknown field",
			doc:     "version: v1\nmig-configs:\n  bad:\n  - devices: all\n    mig-enabled: false\n    mig-device: {}\n",
			wantErr: []string{"mig-device"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseMIGPartedConfig([]byte(tc.doc))
			checkErr(t, err, tc.wantErr...)
			if err == nil && tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

// migTestConfig has layouts to exercise MIGPartedConfig.Apply.
const migTestConfig = `version: v1
mig-configs:
  all-disabled:
  - devices: all
    mig-enabled: false
  all-1g.5gb:
  - devices: all
    mig-enabled: true
    mig-devices: {"1g.5gb": 7}
  first-two-1g.5gb:
  - devices: [0, 1]
    mig-enabled: true
    mig-devices: {"1g.5gb": 7}
  a100-80-only:
  - device-filter: ["0x20B210DE", "0x20B510DE"]
    devices: all
    mig-enabled: true
    mig-devices: {"1g.10gb": 7}
  a100-40-lowercase-filter:
  - device-filter: "0x20b010de"
    devices: all
    mig-enabled: true
    mig-devices: {"2g.10gb": 3}
  4g-plus-3g:
  - devices: all
    mig-enabled: true
    mig-devices: {"4g.20gb": 1, "3g.20gb": 1}
  too-much-compute:
  - devices: all
    mig-enabled: true
    mig-devices: {"3g.20gb": 2, "1g.5gb": 2}
  too-much-memory:
  - devices: all
    mig-enabled: true
    mig-devices: {"1g.10gb": 4, "1g.5gb": 1}
  over-max-per-gpu:
  - devices: all
    mig-enabled: true
    mig-devices: {"1g.5gb": 8}
  all-1g.10gb-a30:
  - devices: all
    mig-enabled: true
    mig-devices: {"1g.10gb": 2}
`

func TestMIGPartedConfigApply(t *testing.T) {
	cfg := mustMIGPartedConfig(t, migTestConfig)
	mig := func(d map[string]int) GPUState { return GPUState{MIGEnabled: true, Devices: d} }
	off := GPUState{}
	tests := []struct {
		name    string
		layout  string
		sku     string
		count   int
		want    []GPUState
		wantErr []string
	}{
		{
			// MP: pkg/mig/reconfigure — all-disabled leaves every GPU MIG-disabled
			name: "all-disabled", layout: "all-disabled", sku: "a100-40gb", count: 2,
			want: []GPUState{off, off},
		},
		{
			// MP: pkg/mig/reconfigure — all-1g.5gb on every A100-40GB
			name: "all-1g.5gb", layout: "all-1g.5gb", sku: "a100-40gb", count: 3,
			want: []GPUState{mig(map[string]int{"1g.5gb": 7}), mig(map[string]int{"1g.5gb": 7}), mig(map[string]int{"1g.5gb": 7})},
		},
		{
			// MP: api/spec/v1 — devices [0, 1] only touches GPUs 0 and 1
			name: "devices [0,1]", layout: "first-two-1g.5gb", sku: "a100-40gb", count: 4,
			want: []GPUState{mig(map[string]int{"1g.5gb": 7}), mig(map[string]int{"1g.5gb": 7}), off, off},
		},
		{
			// MP: api/spec/v1 — a device-filter that does not match leaves the GPUs MIG-disabled
			name: "device-filter does not match", layout: "a100-80-only", sku: "a100-40gb", count: 2,
			want: []GPUState{off, off},
		},
		{
			// MP: api/spec/v1 — a device-filter that matches applies the entry
			name: "device-filter matches", layout: "a100-80-only", sku: "a100-80gb", count: 2,
			want: []GPUState{mig(map[string]int{"1g.10gb": 7}), mig(map[string]int{"1g.10gb": 7})},
		},
		{
			// MP: api/spec/v1 — PCI ids compare case-insensitively
			name: "device-filter lower case", layout: "a100-40-lowercase-filter", sku: "a100-40gb", count: 1,
			want: []GPUState{mig(map[string]int{"2g.10gb": 3})},
		},
		{
			// MP: pkg/mig/reconfigure — 4g + 3g uses exactly 7 compute and 8 memory slices: fits
			name: "exactly full", layout: "4g-plus-3g", sku: "a100-40gb", count: 1,
			want: []GPUState{mig(map[string]int{"4g.20gb": 1, "3g.20gb": 1})},
		},
		{
			// MP: pkg/mig/reconfigure — a profile the GPU does not have fails
			name: "profile the GPU lacks", layout: "all-1g.5gb", sku: "h100-80gb", count: 1,
			wantErr: []string{"1g.5gb"},
		},
		{
			// MP: pkg/mig/reconfigure — a profile the A30 does not have fails
			name: "profile the A30 lacks", layout: "all-1g.10gb-a30", sku: "a30-24gb", count: 1,
			wantErr: []string{"1g.10gb"},
		},
		{
			// MP: pkg/mig/reconfigure — more than 7 compute slices fails
			name: "exceeds compute slices", layout: "too-much-compute", sku: "a100-40gb", count: 1,
			wantErr: []string{"compute"},
		},
		{
			// MP: pkg/mig/reconfigure — more than 8 memory slices fails
			name: "exceeds memory slices", layout: "too-much-memory", sku: "a100-40gb", count: 1,
			wantErr: []string{"memory"},
		},
		{
			// MP: pkg/mig/reconfigure — more devices of a profile than fit one GPU fails
			name: "over max per GPU", layout: "over-max-per-gpu", sku: "a100-40gb", count: 1,
			wantErr: []string{"1g.5gb"},
		},
		{
			// MP: pkg/mig/reconfigure — enabling MIG on a GPU that is not MIG-capable fails
			name: "not MIG-capable", layout: "all-1g.5gb", sku: "l4", count: 1,
			wantErr: []string{"not MIG-capable"},
		},
		{
			// MP: pkg/mig/reconfigure — all-disabled on a non-MIG GPU is a no-op
			name: "all-disabled on L4", layout: "all-disabled", sku: "l4", count: 1,
			want: []GPUState{off},
		},
		{
			// MP: cmd/nvidia-mig-manager — a layout name not in mig-configs fails
			name: "unknown layout", layout: "all-9g.99gb", sku: "a100-40gb", count: 1,
			wantErr: []string{"does not exist", "all-1g.5gb"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cfg.Apply(tc.layout, mustSKU(t, tc.sku), tc.count)
			checkErr(t, err, tc.wantErr...)
			if len(tc.wantErr) > 0 {
				return
			}
			if len(got) != tc.count {
				t.Fatalf("Apply returned %d GPUs, want %d", len(got), tc.count)
			}
			for i := range got {
				if got[i].MIGEnabled != tc.want[i].MIGEnabled || !maps.Equal(got[i].Devices, tc.want[i].Devices) {
					t.Errorf("GPU %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}
