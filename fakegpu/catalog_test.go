package fakegpu

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// MP: deployments/systemd/config-default.yaml — device-filter ids are the
// PCI device id followed by the NVIDIA vendor id, 0x<device>10DE.
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
		// MP: deployments/systemd/config-default.yaml — A100-40GB device filter
		{"a100-40gb", []string{"0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"}},
		// MP: deployments/systemd/config-default.yaml — A100-80GB device filter
		{"a100-80gb", []string{"0x20B210DE", "0x20B510DE"}},
		// MP: deployments/systemd/config-default.yaml — H100-80GB device filter
		{"h100-80gb", []string{"0x233010DE", "0x233110DE", "0x232210DE"}},
		// MP: deployments/systemd/config-default.yaml — H200-141GB device filter
		{"h200-141gb", []string{"0x233510DE", "0x233B10DE"}},
		// MP: deployments/systemd/config-default.yaml — A30-24GB device filter
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
				// MP: deployments/systemd/config-default.yaml — a profile alone, at its
				// maximum count, fits the GPU's compute and memory slices.
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
		// MP: deployments/systemd/config-default.yaml — A100-40GB row of the facts table
		{"a100-40gb",
			map[string]int{"1g.5gb": 7, "1g.5gb+me": 1, "1g.10gb": 4, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1, "7g.40gb": 1},
			map[string]int{"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}},
		// MP: deployments/systemd/config-default.yaml — A100-80GB / H100-80GB row
		{"a100-80gb",
			map[string]int{"1g.10gb": 7, "1g.10gb+me": 1, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
			map[string]int{"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}},
		// MP: deployments/systemd/config-default.yaml — A100-80GB / H100-80GB row
		{"h100-80gb",
			map[string]int{"1g.10gb": 7, "1g.10gb+me": 1, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
			map[string]int{"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}},
		// MP: deployments/systemd/config-default.yaml — H200-141GB row
		{"h200-141gb",
			map[string]int{"1g.18gb": 7, "1g.18gb+me": 1, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1, "7g.141gb": 1},
			map[string]int{"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}},
		// MP: deployments/systemd/config-default.yaml — A30-24GB row
		{"a30-24gb",
			map[string]int{"1g.6gb": 4, "2g.12gb": 2, "4g.24gb": 1},
			map[string]int{"1g.6gb": 2, "2g.12gb": 1}},
		// facts §5 — L4 is not MIG-capable
		{"l4", nil, nil},
		// facts §5 — L40S is not MIG-capable
		{"l40s", nil, nil},
		// facts §5 — T4 is not MIG-capable
		{"t4", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.sku, func(t *testing.T) {
			s := mustSKU(t, tc.sku)
			if got, want := s.MIGCapable(), tc.profiles != nil; got != want {
				t.Fatalf("MIGCapable() = %v, want %v", got, want)
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
