// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// stack-facts §4 and §5: MP@bd7160f4 deployments/systemd/config-default.yaml —
// device-filter ids are the PCI device id followed by the NVIDIA vendor id,
// 0x<device>10DE.
var pciDeviceID = regexp.MustCompile(`^0x[0-9A-F]{4}10DE$`)

func TestCatalogPCIDeviceIDs(t *testing.T) {
	for _, key := range SKUKeys() {
		t.Run(key, func(t *testing.T) {
			s := Catalog[key]
			if s.Key != key {
				t.Errorf("Catalog[%q].Key = %q", key, s.Key)
			}
			if len(s.PCIDeviceIDs) == 0 {
				t.Errorf("%s has no PCI device ids", key)
			}
			for _, id := range s.PCIDeviceIDs {
				if !pciDeviceID.MatchString(id) {
					t.Errorf("%s: PCI device id %q does not look like 0x....10DE", key, id)
				}
			}
		})
	}
}

func TestCatalogPCIDeviceIDsPerGPU(t *testing.T) {
	tests := []struct {
		sku string
		ids []string
	}{
		// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — A100-40GB device filter
		{"a100-40gb", []string{"0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"}},
		// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — A100-80GB / H100-80GB row: the A100-80GB ids
		{"a100-80gb", []string{"0x20B210DE", "0x20B510DE"}},
		// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — A100-80GB / H100-80GB row: the H100-80GB ids
		{"h100-80gb", []string{"0x233010DE", "0x233110DE", "0x232210DE"}},
		// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — H200-141GB device filter
		{"h200-141gb", []string{"0x233510DE", "0x233B10DE"}},
		// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — A30-24GB device filter
		{"a30-24gb", []string{"0x20B710DE"}},
	}
	for _, tc := range tests {
		t.Run(tc.sku, func(t *testing.T) {
			s := mustSKU(t, tc.sku)
			for _, id := range tc.ids {
				if !slices.Contains(s.PCIDeviceIDs, id) {
					t.Errorf("%s: PCI ids %v lack %s", tc.sku, s.PCIDeviceIDs, id)
				}
			}
		})
	}
}

func TestCatalogMIGProfilesFitTheirGPU(t *testing.T) {
	for _, key := range SKUKeys() {
		s := Catalog[key]
		for _, p := range s.MIGProfiles {
			t.Run(key+"/"+p.Name, func(t *testing.T) {
				// stack-facts §4 step 8 and §5: MP@bd7160f4 deployments/systemd/config-default.yaml —
				// a profile alone, at its maximum count, fits the GPU (7 compute, 8 memory slices).
				if p.MaxPerGPU < 1 {
					t.Errorf("MaxPerGPU = %d", p.MaxPerGPU)
				}
				if got := p.MaxPerGPU * p.ComputeSlices; got > s.ComputeSlices {
					t.Errorf("%d × %d compute slices = %d > %d", p.MaxPerGPU, p.ComputeSlices, got, s.ComputeSlices)
				}
				if got := p.MaxPerGPU * p.MemorySlices; got > s.MemorySlices {
					t.Errorf("%d × %d memory slices = %d > %d", p.MaxPerGPU, p.MemorySlices, got, s.MemorySlices)
				}
				if p.MemoryMiB <= 0 || p.MemoryMiB > s.MemoryMiB {
					t.Errorf("profile memory %d MiB not within GPU memory %d MiB", p.MemoryMiB, s.MemoryMiB)
				}
				if err := checkFits(s, map[string]int{p.Name: p.MaxPerGPU}); err != nil {
					t.Errorf("checkFits(%d × %s): %v", p.MaxPerGPU, p.Name, err)
				}
			})
		}
	}
}

func TestCatalogMIGProfilesPerGPU(t *testing.T) {
	tests := []struct {
		sku      string
		profiles map[string]int // profile -> at most per GPU
		balanced map[string]int // the all-balanced layout, must fit
	}{
		// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — A100-40GB row
		{"a100-40gb",
			map[string]int{"1g.5gb": 7, "1g.5gb+me": 1, "1g.10gb": 4, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1, "7g.40gb": 1},
			map[string]int{"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}},
		// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — A100-80GB / H100-80GB row
		{"a100-80gb",
			map[string]int{"1g.10gb": 7, "1g.10gb+me": 1, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
			map[string]int{"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}},
		// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — A100-80GB / H100-80GB row
		{"h100-80gb",
			map[string]int{"1g.10gb": 7, "1g.10gb+me": 1, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
			map[string]int{"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}},
		// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — H200-141GB row
		{"h200-141gb",
			map[string]int{"1g.18gb": 7, "1g.18gb+me": 1, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1, "7g.141gb": 1},
			map[string]int{"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}},
		// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — A30-24GB row, with
		// 1g.6gb+me ×1 and 2g.12gb+me ×1 (layout all-2g.12gb.me); no 1g with double memory
		{"a30-24gb",
			map[string]int{"1g.6gb": 4, "1g.6gb+me": 1, "2g.12gb": 2, "2g.12gb+me": 1, "4g.24gb": 1},
			map[string]int{"1g.6gb": 2, "2g.12gb": 1}},
		// stack-facts §5 — L4 is not MIG-capable
		{"l4", nil, nil},
		// stack-facts §5 — L40S is not MIG-capable
		{"l40s", nil, nil},
		// stack-facts §5 — T4 is not MIG-capable
		{"t4", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.sku, func(t *testing.T) {
			s := mustSKU(t, tc.sku)
			if got, want := s.MIGCapable(), tc.profiles != nil; got != want {
				t.Fatalf("MIGCapable() = %v, want %v", got, want)
			}
			if tc.profiles != nil && len(s.MIGProfiles) != len(tc.profiles) {
				t.Errorf("profiles %v, want exactly %v", s.ProfileNames(), sortedKeys(tc.profiles))
			}
			for name, max := range tc.profiles {
				p, ok := s.Profile(name)
				if !ok {
					t.Errorf("no profile %s (has %v)", name, s.ProfileNames())
					continue
				}
				if p.MaxPerGPU != max {
					t.Errorf("%s: MaxPerGPU = %d, want %d", name, p.MaxPerGPU, max)
				}
			}
			if tc.balanced != nil {
				if err := checkFits(s, tc.balanced); err != nil {
					t.Errorf("all-balanced %v does not fit: %v", tc.balanced, err)
				}
			}
		})
	}
}

func TestLookupSKU(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		wantErr bool
	}{
		{"known key", "a100-40gb", false},
		{"another known key", "l4", false},
		{"unknown key lists the known keys", "a100-41gb", true},
		{"empty key", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := LookupSKU(tc.key)
			if !tc.wantErr {
				if err != nil || s.Key != tc.key {
					t.Fatalf("LookupSKU(%q) = %q, %v", tc.key, s.Key, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("LookupSKU(%q): want an error", tc.key)
			}
			for _, k := range SKUKeys() {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("error %q does not list known key %q", err, k)
				}
			}
		})
	}
}

func TestSKUKeysSorted(t *testing.T) {
	keys := SKUKeys()
	if !slices.IsSorted(keys) || len(keys) != len(Catalog) {
		t.Errorf("SKUKeys() = %v: want all %d catalog keys, sorted", keys, len(Catalog))
	}
}

// TestCatalogFigureProvenance holds every MIG figure to stack-facts §5: MIG
// memory and SMs come from NVML at run time and no upstream source holds
// authoritative per-SKU figures, and the doc has no engine counts. So a
// figure either cites the doc as verified, or says UNVERIFIED.
func TestCatalogFigureProvenance(t *testing.T) {
	for _, key := range SKUKeys() {
		for _, p := range Catalog[key].MIGProfiles {
			t.Run(key+"/"+p.Name, func(t *testing.T) {
				for what, src := range map[string]Provenance{"memory/SMs": p.Figures, "engines": p.EngineFigures} {
					switch {
					case src.Source == "":
						t.Errorf("%s: no source", what)
					case src.Verified && (!strings.HasPrefix(src.Source, "stack-facts §") || strings.Contains(src.Source, "UNVERIFIED")):
						t.Errorf("%s: verified, but the source %q does not cite the facts doc as verified", what, src.Source)
					case !src.Verified && !strings.Contains(src.Source, "UNVERIFIED"):
						t.Errorf("%s: unverified, but the source %q does not say UNVERIFIED", what, src.Source)
					}
				}
				if p.MemoryMiB <= 0 || p.Multiprocessors <= 0 || p.Engines.Copy <= 0 {
					t.Errorf("figures missing: %d MiB, %d SMs, %+v", p.MemoryMiB, p.Multiprocessors, p.Engines)
				}
			})
		}
	}
}

// TestCatalogFactsDumpFigures checks the only MIG memory and SM figures the
// facts doc quotes are the catalog's, and stay marked UNVERIFIED.
func TestCatalogFactsDumpFigures(t *testing.T) {
	tests := []struct {
		sku, profile string
		mib, sms     int
	}{
		// stack-facts §5: UNVERIFIED third-party label dump — H100-80GB-HBM3 1g.10gb = 9984 MiB, 16 SMs
		{"h100-80gb", "1g.10gb", 9984, 16},
		// stack-facts §5: UNVERIFIED third-party label dump — H100-80GB-HBM3 3g.40gb = 40448 MiB, 60 SMs
		{"h100-80gb", "3g.40gb", 40448, 60},
		// stack-facts §5: UNVERIFIED third-party label dump — A100-80GB-PCIe 1g.10gb = 9728 MiB, 14 SMs
		// (the catalog's a100-80gb is the SXM4 card, same GA100 and memory)
		{"a100-80gb", "1g.10gb", 9728, 14},
		// stack-facts §5: UNVERIFIED third-party label dump — A100-80GB-PCIe 3g.40gb = 40192 MiB, 42 SMs
		{"a100-80gb", "3g.40gb", 40192, 42},
	}
	for _, tc := range tests {
		t.Run(tc.sku+"/"+tc.profile, func(t *testing.T) {
			p, ok := mustSKU(t, tc.sku).Profile(tc.profile)
			if !ok {
				t.Fatalf("no profile %s", tc.profile)
			}
			if p.MemoryMiB != tc.mib || p.Multiprocessors != tc.sms {
				t.Errorf("%d MiB, %d SMs; want %d MiB, %d SMs", p.MemoryMiB, p.Multiprocessors, tc.mib, tc.sms)
			}
			if p.Figures.Verified || !strings.HasPrefix(p.Figures.Source, "stack-facts §5 UNVERIFIED") {
				t.Errorf("source %+v: want the stack-facts §5 dump, unverified", p.Figures)
			}
		})
	}
}

// TestCatalogNoMockFigures keeps go-nvml's synthetic mock figures out of
// the catalog where the doc's dumps disagree with them.
func TestCatalogNoMockFigures(t *testing.T) {
	tests := []struct {
		sku, profile string
		mib          int
	}{
		// stack-facts §5: NVIDIA/go-nvml@2f9e261f pkg/nvml/mock/gpus/h100.go is synthetic — H100-80GB
		// 1g.10gb 10240 MiB is not hardware truth
		{"h100-80gb", "1g.10gb", 10240},
		// stack-facts §5: NVIDIA/go-nvml@2f9e261f pkg/nvml/mock — A100-80GB 1g.10gb 9856 MiB disagrees
		// with public dumps
		{"a100-80gb", "1g.10gb", 9856},
	}
	for _, tc := range tests {
		t.Run(tc.sku+"/"+tc.profile, func(t *testing.T) {
			p, _ := mustSKU(t, tc.sku).Profile(tc.profile)
			if p.MemoryMiB == tc.mib {
				t.Errorf("%s %s = %d MiB, go-nvml's synthetic mock figure", tc.sku, tc.profile, tc.mib)
			}
		})
	}
}

// TestCatalogMediaExtensions checks each +me profile against its plain
// profile: the same slices, one instance per GPU, and the media engines
// (JPEG, OFA) added. The engine figures themselves are UNVERIFIED.
func TestCatalogMediaExtensions(t *testing.T) {
	tests := []struct{ sku, me string }{
		// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — A100-40GB 1g.5gb+me ×1
		{"a100-40gb", "1g.5gb+me"},
		// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — A100-80GB 1g.10gb+me ×1
		{"a100-80gb", "1g.10gb+me"},
		// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — H100-80GB 1g.10gb+me ×1
		{"h100-80gb", "1g.10gb+me"},
		// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — H200-141GB 1g.18gb+me ×1
		{"h200-141gb", "1g.18gb+me"},
		// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — A30 1g.6gb+me ×1
		{"a30-24gb", "1g.6gb+me"},
		// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — A30 2g.12gb+me ×1
		{"a30-24gb", "2g.12gb+me"},
	}
	for _, tc := range tests {
		t.Run(tc.sku+"/"+tc.me, func(t *testing.T) {
			s := mustSKU(t, tc.sku)
			me, ok := s.Profile(tc.me)
			if !ok {
				t.Fatalf("no profile %s (has %v)", tc.me, s.ProfileNames())
			}
			base, ok := s.Profile(strings.TrimSuffix(tc.me, "+me"))
			if !ok {
				t.Fatalf("no plain profile for %s", tc.me)
			}
			if me.MaxPerGPU != 1 || me.ComputeSlices != base.ComputeSlices || me.MemorySlices != base.MemorySlices {
				t.Errorf("%s: %d per GPU, %d/%d slices; want 1 per GPU and %s's %d/%d slices",
					tc.me, me.MaxPerGPU, me.ComputeSlices, me.MemorySlices, base.Name, base.ComputeSlices, base.MemorySlices)
			}
			if me.MemoryMiB != base.MemoryMiB || me.Multiprocessors != base.Multiprocessors {
				t.Errorf("%s: %d MiB, %d SMs; want %s's %d MiB, %d SMs", tc.me, me.MemoryMiB, me.Multiprocessors, base.Name, base.MemoryMiB, base.Multiprocessors)
			}
			if me.Engines.OFA < 1 || me.Engines.JPEG < 1 || me.Engines.Decoder < base.Engines.Decoder || me.Engines.Copy != base.Engines.Copy {
				t.Errorf("%s engines %+v: want %s's %+v with JPEG and OFA", tc.me, me.Engines, base.Name, base.Engines)
			}
		})
	}
}

func TestMIGProfileLayoutName(t *testing.T) {
	tests := []struct{ sku, profile, want string }{
		// stack-facts §4 step 2: MP@bd7160f4 pkg/mig/builder/builder.go buildMigConfigSpec — all-<profile>
		{"a100-40gb", "1g.5gb", "all-1g.5gb"},
		// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — +me layouts are named .me: all-1g.5gb.me
		{"a100-40gb", "1g.5gb+me", "all-1g.5gb.me"},
		// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — all-1g.6gb.me
		{"a30-24gb", "1g.6gb+me", "all-1g.6gb.me"},
		// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — A30 2g.12gb+me: layout all-2g.12gb.me
		{"a30-24gb", "2g.12gb+me", "all-2g.12gb.me"},
	}
	for _, tc := range tests {
		t.Run(tc.profile, func(t *testing.T) {
			p, ok := mustSKU(t, tc.sku).Profile(tc.profile)
			if !ok {
				t.Fatalf("no profile %s", tc.profile)
			}
			if got := p.LayoutName(); got != tc.want {
				t.Errorf("LayoutName() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCatalogMatchesGPUOperatorLayouts applies, for every catalog profile,
// the GPU Operator's own all-<profile> layout (GOmod@d73a0086
// assets/state-mig-manager/0400_configmap.yaml, its copy of mig-parted's
// config-default.yaml) and checks it puts MaxPerGPU of the profile on each
// GPU: the catalog's geometry is upstream's.
func TestCatalogMatchesGPUOperatorLayouts(t *testing.T) {
	_, cfg := goDefaultMIGParted(t)
	for _, key := range SKUKeys() {
		s := Catalog[key]
		for _, p := range s.MIGProfiles {
			t.Run(key+"/"+p.LayoutName(), func(t *testing.T) {
				// stack-facts §5: MP@bd7160f4 deployments/systemd/config-default.yaml — all-<profile> (+me: .me) holds MaxPerGPU
				gpus, err := cfg.Apply(p.LayoutName(), s, 2)
				if err != nil {
					t.Fatalf("Apply: %v", err)
				}
				for i, g := range gpus {
					if !g.MIGEnabled || len(g.Devices) != 1 || g.Devices[p.Name] != p.MaxPerGPU {
						t.Errorf("GPU %d: %+v, want MIG on with %d × %s", i, g, p.MaxPerGPU, p.Name)
					}
				}
			})
		}
	}
}
