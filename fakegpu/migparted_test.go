// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"slices"
	"strings"
	"testing"
)

func TestParseMIGPartedConfig(t *testing.T) {
	// ok wraps one layout's entries in a valid document.
	ok := func(entries string) string { return "version: v1\nmig-configs:\n  bad:\n" + entries }
	tests := []struct {
		name    string
		doc     string
		wantErr []string
		check   func(r reporter, c *MIGPartedConfig)
	}{
		{
			// stack-facts §4 "mig-parted config": MP@bd7160f4 api/spec/v1/spec.go — devices: all
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
			// stack-facts §4 "mig-parted config": MP@bd7160f4 api/spec/v1/spec.go — devices: a list of GPU indices
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
			// stack-facts §5 names MP@bd7160f4 deployments/systemd/config-default.yaml, whose A30
			// entry spells device-filter as one string: device-filter: "0x20B710DE"
			name: "device-filter string",
			doc:  "version: v1\nmig-configs:\n  a30:\n  - device-filter: \"0x20B710DE\"\n    devices: all\n    mig-enabled: true\n    mig-devices: {\"1g.6gb\": 4}\n",
			check: func(r reporter, c *MIGPartedConfig) {
				if f := c.MigConfigs["a30"][0].DeviceFilter; !slices.Equal(f, []string{"0x20B710DE"}) {
					r.Errorf("device-filter = %v", f)
				}
			},
		},
		{
			// stack-facts §4 "mig-parted config": MP@bd7160f4 api/spec/v1/spec.go — device-filter: a list of PCI device ids
			name: "device-filter list",
			doc:  "version: v1\nmig-configs:\n  a100:\n  - device-filter: [\"0x20B010DE\", \"0x20B110DE\"]\n    devices: all\n    mig-enabled: true\n    mig-devices: {\"1g.5gb\": 7}\n",
			check: func(r reporter, c *MIGPartedConfig) {
				if f := c.MigConfigs["a100"][0].DeviceFilter; !slices.Equal(f, []string{"0x20B010DE", "0x20B110DE"}) {
					r.Errorf("device-filter = %v", f)
				}
			},
		},
		{
			// stack-facts §4 step 2 names all-enabled; GOmod@d73a0086 assets/state-mig-manager/0400_configmap.yaml
			// writes it as mig-enabled: true with mig-devices: {} (TestGPUOperatorDefaultMIGPartedConfigLoads)
			name: "mig enabled, no devices",
			doc:  "version: v1\nmig-configs:\n  all-enabled:\n  - devices: all\n    mig-enabled: true\n    mig-devices: {}\n",
		},
		{
			// stack-facts §4 "mig-parted config": mig-devices is required only when mig-enabled is true (all-disabled)
			name: "mig disabled",
			doc:  "version: v1\nmig-configs:\n  all-disabled:\n  - devices: all\n    mig-enabled: false\n",
			check: func(r reporter, c *MIGPartedConfig) {
				if names := c.Names(); !slices.Equal(names, []string{"all-disabled"}) {
					r.Errorf("Names() = %v", names)
				}
			},
		},
		{
			// stack-facts §4 "mig-parted config": "MIG devices included when 'mig-enabled' is false"
			name:    "mig devices with mig disabled",
			doc:     ok("  - devices: all\n    mig-enabled: false\n    mig-devices: {\"1g.5gb\": 7}\n"),
			wantErr: []string{"mig-configs.bad[0]", "MIG devices included when 'mig-enabled' is false"},
		},
		{
			// stack-facts §4 "mig-parted config": "missing required field 'mig-devices' when 'mig-enabled' is true"
			name:    "mig enabled without mig-devices",
			doc:     "version: v1\nmig-configs:\n  ok:\n  - devices: all\n    mig-enabled: false\n  bad:\n  - devices: [0]\n    mig-enabled: false\n  - devices: [1]\n    mig-enabled: true\n",
			wantErr: []string{"mig-configs.bad[1]", "missing required field 'mig-devices' when 'mig-enabled' is true"},
		},
		{
			// stack-facts §4 "mig-parted config": MP@bd7160f4 api/spec/v1/spec.go Spec.UnmarshalJSON — "unknown version: X"
			name:    "unknown version",
			doc:     "version: v2\nmig-configs:\n  all-disabled:\n  - devices: all\n    mig-enabled: false\n",
			wantErr: []string{"version", "unknown version: v2"},
		},
		{
			// stack-facts §4 "mig-parted config": Spec.UnmarshalJSON — "unable to parse with missing 'version' field"
			name:    "missing version",
			doc:     "mig-configs:\n  all-disabled:\n  - devices: all\n    mig-enabled: false\n",
			wantErr: []string{"unable to parse with missing 'version' field"},
		},
		{
			// stack-facts §4 "mig-parted config": Spec.UnmarshalJSON — "unexpected field: X" at the top level
			name:    "unexpected top-level field",
			doc:     "version: v1\nmig-config:\n  all-disabled:\n  - devices: all\n    mig-enabled: false\n",
			wantErr: []string{"unexpected field: mig-config"},
		},
		{
			// stack-facts §4 "mig-parted config": Spec.UnmarshalJSON — "at least one entry in 'mig-configs' is required"
			name:    "empty mig-configs",
			doc:     "version: v1\nmig-configs: {}\n",
			wantErr: []string{"at least one entry in 'mig-configs' is required"},
		},
		{
			// NOT in the facts doc: the same Spec.UnmarshalJSON (MP@bd7160f4) check one level down,
			// an empty layout, "at least one entry in 'X' is required"
			name:    "empty layout",
			doc:     "version: v1\nmig-configs:\n  bad: []\n",
			wantErr: []string{"mig-configs.bad", "at least one entry in 'bad' is required"},
		},
		{
			// stack-facts §4 "mig-parted config": MigConfigSpec.UnmarshalJSON — "invalid string input for 'devices': X"
			name:    "devices bad string",
			doc:     ok("  - devices: some\n    mig-enabled: false\n"),
			wantErr: []string{"mig-configs.bad[0].devices", "invalid string input for 'devices': some"},
		},
		{
			// stack-facts §4 "mig-parted config": MigConfigSpec.UnmarshalJSON — "missing required field: devices"
			name:    "missing devices",
			doc:     ok("  - mig-enabled: false\n"),
			wantErr: []string{"mig-configs.bad[0]", "missing required field: devices"},
		},
		{
			// stack-facts §4 "mig-parted config": MigConfigSpec.UnmarshalJSON — "missing required field: mig-enabled"
			name:    "missing mig-enabled",
			doc:     ok("  - devices: all\n    mig-devices: {\"1g.5gb\": 7}\n"),
			wantErr: []string{"mig-configs.bad[0]", "missing required field: mig-enabled"},
		},
		{
			// stack-facts §4 "mig-parted config": MigConfigSpec.UnmarshalJSON — "unexpected field: X" in an entry
			name:    "unknown field",
			doc:     ok("  - devices: all\n    mig-enabled: false\n    mig-device: {}\n"),
			wantErr: []string{"mig-configs.bad[0]", "unexpected field: mig-device"},
		},
		{
			// stack-facts §4 "mig-parted config": pkg/types/mig_config.go AssertValidFormat — "invalid format for 'X'"
			name:    "profile name malformed",
			doc:     ok("  - devices: all\n    mig-enabled: true\n    mig-devices: {\"1x.5gb\": 7}\n"),
			wantErr: []string{"mig-configs.bad[0].mig-devices", "invalid format for '1x.5gb'"},
		},
		{
			// stack-facts §4 "mig-parted config": AssertValidFormat — "invalid format for 'X'" (memory without gb)
			name:    "profile name without gb",
			doc:     ok("  - devices: all\n    mig-enabled: true\n    mig-devices: {\"1g.5\": 7}\n"),
			wantErr: []string{"invalid format for '1g.5'"},
		},
		{
			// stack-facts §4 "mig-parted config": AssertValidFormat — "all counts for all MigProfiles are 0"
			name:    "all counts zero",
			doc:     ok("  - devices: all\n    mig-enabled: true\n    mig-devices: {\"1g.5gb\": 0, \"2g.10gb\": 0}\n"),
			wantErr: []string{"mig-configs.bad[0].mig-devices", "all counts for all MigProfiles are 0"},
		},
		{
			// stack-facts §4/§5 profile names with attributes, and the compute-instance form: 1g.5gb+me (§5 table),
			// 1g.24gb-me, 1g.24gb+me.all, 1g.24gb+gfx (GOmod@d73a0086 assets/state-mig-manager/0400_configmap.yaml),
			// 1c.2g.10gb; a zero count beside a non-zero one is valid
			name: "profile formats accepted",
			doc:  ok("  - devices: all\n    mig-enabled: true\n    mig-devices: {\"1g.5gb+me\": 1, \"1g.24gb-me\": 1, \"1g.24gb+me.all\": 1, \"1g.24gb+gfx\": 1, \"1c.2g.10gb\": 1, \"3g.20gb\": 0}\n"),
		},
		{
			// stack-facts §4 "mig-parted config": AssertValidFormat — "invalid format for 'X'": both + and - attributes
			name:    "profile with + and - attributes",
			doc:     ok("  - devices: all\n    mig-enabled: true\n    mig-devices: {\"1g.24gb+me-gfx\": 1}\n"),
			wantErr: []string{"invalid format for '1g.24gb+me-gfx'"},
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
  first-two-disabled:
  - devices: [0, 1]
    mig-enabled: false
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
  unfit-gpu-not-selected:
  - devices: [0]
    mig-enabled: true
    mig-devices: {"1g.5gb": 7}
  - devices: [5]
    mig-enabled: true
    mig-devices: {"9g.99gb": 1}
`

func TestMIGPartedConfigApply(t *testing.T) {
	cfg := mustMIGPartedConfig(t, migTestConfig)
	mig := func(d map[string]int) GPUState { return GPUState{MIGEnabled: true, Devices: d} }
	off := GPUState{}
	g1 := mig(map[string]int{"1g.5gb": 7})
	tests := []struct {
		name    string
		layout  string
		sku     string
		current []GPUState // nil: count fresh GPUs (MIG disabled)
		count   int
		want    []GPUState
		wantErr []string
	}{
		{
			// stack-facts §4 "mig-parted config": mig-enabled: false leaves every GPU MIG-disabled
			name: "all-disabled", layout: "all-disabled", sku: "a100-40gb", count: 2,
			want: []GPUState{off, off},
		},
		{
			// stack-facts §4 "mig-parted config" + §5: all-1g.5gb is 7 × 1g.5gb on every A100-40GB
			name: "all-1g.5gb", layout: "all-1g.5gb", sku: "a100-40gb", count: 3,
			want: []GPUState{g1, g1, g1},
		},
		{
			// stack-facts §4 "GPUs a layout does not match": MP@bd7160f4 cmd/nvidia-mig-parted/apply/config.go
			// ApplyMigConfig — devices [0, 1] only touches GPUs 0 and 1
			name: "devices [0,1]", layout: "first-two-1g.5gb", sku: "a100-40gb", count: 4,
			want: []GPUState{g1, g1, off, off},
		},
		{
			// stack-facts §4 "GPUs a layout does not match ... keep their current MIG mode and devices":
			// ApplyMigConfig walks only matched GPUs; GPUs 2 and 3 keep 1g.5gb, they are not reset
			name: "devices [0,1] keeps the others' layout", layout: "first-two-disabled", sku: "a100-40gb",
			current: []GPUState{g1, g1, g1, g1}, count: 4,
			want: []GPUState{off, off, g1, g1},
		},
		{
			// stack-facts §4 "GPUs a layout does not match (by device-filter)": a filter that does not match
			// leaves fresh GPUs MIG-disabled
			name: "device-filter does not match", layout: "a100-80-only", sku: "a100-40gb", count: 2,
			want: []GPUState{off, off},
		},
		{
			// stack-facts §4 "GPUs a layout does not match (by device-filter) keep their current MIG mode and devices"
			name: "device-filter does not match, GPUs keep their layout", layout: "a100-80-only", sku: "a100-40gb",
			current: []GPUState{g1, off}, count: 2,
			want: []GPUState{g1, off},
		},
		{
			// stack-facts §4 "mig-parted config": a device-filter that matches applies the entry (§5: A100-80GB ids)
			name: "device-filter matches", layout: "a100-80-only", sku: "a100-80gb", count: 2,
			want: []GPUState{mig(map[string]int{"1g.10gb": 7}), mig(map[string]int{"1g.10gb": 7})},
		},
		{
			// stack-facts §4 "mig-parted config" device-filter: PCI ids compare case-insensitively (simulator's choice:
			// the doc does not say; the stack-facts §5 ids are upper case, so lower case would otherwise never match)
			name: "device-filter lower case", layout: "a100-40-lowercase-filter", sku: "a100-40gb", count: 1,
			want: []GPUState{mig(map[string]int{"2g.10gb": 3})},
		},
		{
			// stack-facts §4 step 8 + §5: 4g + 3g uses exactly 7 compute and 8 memory slices: fits
			name: "exactly full", layout: "4g-plus-3g", sku: "a100-40gb", count: 1,
			want: []GPUState{mig(map[string]int{"4g.20gb": 1, "3g.20gb": 1})},
		},
		{
			// stack-facts §4 step 8: a profile the GPU does not have fails (§5: H100-80GB has no 1g.5gb)
			name: "profile the GPU lacks", layout: "all-1g.5gb", sku: "h100-80gb", count: 1,
			wantErr: []string{"1g.5gb"},
		},
		{
			// stack-facts §4 step 8: a profile the A30 does not have fails (§5: A30 has 1g.6gb, no 1g.10gb)
			name: "profile the A30 lacks", layout: "all-1g.10gb-a30", sku: "a30-24gb", count: 1,
			wantErr: []string{"1g.10gb"},
		},
		{
			// stack-facts §4 step 8: more than the GPU's 7 compute slices fails
			name: "exceeds compute slices", layout: "too-much-compute", sku: "a100-40gb", count: 1,
			wantErr: []string{"compute"},
		},
		{
			// stack-facts §4 step 8: more than the GPU's 8 memory slices fails
			name: "exceeds memory slices", layout: "too-much-memory", sku: "a100-40gb", count: 1,
			wantErr: []string{"memory"},
		},
		{
			// stack-facts §4 step 8 + §5: more devices of a profile than fit one GPU (1g.5gb ×7) fails
			name: "over max per GPU", layout: "over-max-per-gpu", sku: "a100-40gb", count: 1,
			wantErr: []string{"1g.5gb"},
		},
		{
			// stack-facts §4 step 8 + §5 ("L4, L40S and T4 are not MIG-capable"): enabling MIG on an L4 fails
			name: "not MIG-capable", layout: "all-1g.5gb", sku: "l4", count: 1,
			wantErr: []string{"not MIG-capable"},
		},
		{
			// stack-facts §4 "mig-parted config" + §5: all-disabled on a GPU that is not MIG-capable changes nothing
			name: "all-disabled on L4", layout: "all-disabled", sku: "l4", count: 1,
			want: []GPUState{off},
		},
		{
			// stack-facts §4 "GPUs a layout does not match": apply walks only matched GPUs, so an entry that
			// selects no GPU of this node (devices [5] on 2 GPUs) is never checked
			name: "unfit entry selecting no GPU", layout: "unfit-gpu-not-selected", sku: "a100-40gb", count: 2,
			want: []GPUState{g1, off},
		},
		{
			// stack-facts §4 step 3: a layout name not in mig-configs fails
			name: "unknown layout", layout: "all-9g.99gb", sku: "a100-40gb", count: 1,
			wantErr: []string{"does not exist", "all-1g.5gb"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			current := tc.current
			if current == nil {
				current = make([]GPUState, tc.count)
			}
			before := slices.Clone(current)
			got, err := cfg.ApplyTo(tc.layout, mustSKU(t, tc.sku), current)
			checkErr(t, err, tc.wantErr...)
			if !sameGPUs(current, before) {
				t.Errorf("ApplyTo changed its input: %+v, was %+v", current, before)
			}
			if len(tc.wantErr) > 0 {
				return
			}
			if len(got) != tc.count {
				t.Fatalf("ApplyTo returned %d GPUs, want %d", len(got), tc.count)
			}
			for i := range got {
				if !got[i].equal(tc.want[i]) {
					t.Errorf("GPU %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
			if tc.current == nil {
				fresh, err := cfg.Apply(tc.layout, mustSKU(t, tc.sku), tc.count)
				if err != nil || !sameGPUs(fresh, got) {
					t.Errorf("Apply (fresh GPUs) = %+v, %v; want ApplyTo's %+v", fresh, err, got)
				}
			}
		})
	}
}

func TestMIGPartedConfigAssert(t *testing.T) {
	cfg := mustMIGPartedConfig(t, migTestConfig)
	g1 := GPUState{MIGEnabled: true, Devices: map[string]int{"1g.5gb": 7}}
	off := GPUState{}
	tests := []struct {
		name    string
		layout  string
		sku     string
		current []GPUState
		wantErr []string
	}{
		{
			// stack-facts §4 step 3: "if already applied: success at once" — every GPU in the layout
			name: "applied", layout: "all-1g.5gb", sku: "a100-40gb", current: []GPUState{g1, g1},
		},
		{
			// stack-facts §4 step 3: fresh GPUs already are all-disabled
			name: "all-disabled on fresh GPUs", layout: "all-disabled", sku: "a100-40gb", current: []GPUState{off, off},
		},
		{
			// stack-facts §4 step 3: a GPU in another layout: not applied
			name: "one GPU differs", layout: "all-1g.5gb", sku: "a100-40gb", current: []GPUState{g1, off},
			wantErr: []string{"GPU 1"},
		},
		{
			// stack-facts §4 "GPUs a layout does not match": MP@bd7160f4 cmd/nvidia-mig-parted/assert/config.go
			// AssertMigConfig requires every GPU to match, even when the matched ones are in the layout
			name: "devices leave a GPU out", layout: "first-two-1g.5gb", sku: "a100-40gb", current: []GPUState{g1, g1, g1},
			wantErr: []string{"not all GPUs match the specified config"},
		},
		{
			// stack-facts §4 "GPUs a layout does not match (by device-filter)": never already applied
			name: "device-filter matches no GPU", layout: "a100-80-only", sku: "a100-40gb", current: []GPUState{off},
			wantErr: []string{"not all GPUs match the specified config"},
		},
		{
			// stack-facts §4 step 3: assert --valid-config fails on an unknown name
			name: "unknown layout", layout: "nope", sku: "a100-40gb", current: []GPUState{off},
			wantErr: []string{"does not exist"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, cfg.Assert(tc.layout, mustSKU(t, tc.sku), tc.current), tc.wantErr...)
		})
	}
}

// The GPUs' MIG state survives the round trip through its annotation.
func TestGPUStatesRoundTrip(t *testing.T) {
	gpus := []GPUState{{}, {MIGEnabled: true}, {MIGEnabled: true, Devices: map[string]int{"1g.5gb+me": 1, "3g.20gb": 2}}}
	got, err := DecodeGPUStates(EncodeGPUStates(gpus))
	if err != nil || !sameGPUs(got, gpus) {
		t.Errorf("round trip = %+v, %v; want %+v", got, err, gpus)
	}
	if _, err := DecodeGPUStates("not json"); err == nil || !strings.Contains(err.Error(), AnnotationMIGGPUs) {
		t.Errorf("DecodeGPUStates(garbage) error = %v, want it to name %s", err, AnnotationMIGGPUs)
	}
}
