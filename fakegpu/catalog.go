package fakegpu

import (
	"fmt"
	"sort"
	"strings"
)

// MIGProfile is one MIG device type a GPU can be split into.
type MIGProfile struct {
	// Name as mig-parted and the device plugin spell it, e.g. "1g.5gb" or "1g.5gb+me".
	Name string
	// ComputeSlices and MemorySlices are what one device of this profile uses
	// of the GPU's SKU.ComputeSlices and SKU.MemorySlices.
	ComputeSlices int
	MemorySlices  int
	// MaxPerGPU is how many of this profile alone fit one GPU.
	MaxPerGPU int
	MemoryMiB int
	// Multiprocessors is the SM count GFD publishes for the profile.
	Multiprocessors int
}

// SKU is one GPU model. Keys of Catalog are what fleet files name.
type SKU struct {
	Key string
	// Product is the name as NVML (and so GFD) reports it.
	Product      string
	MemoryMiB    int
	PCIDeviceIDs []string // mig-parted device-filter form, e.g. "0x20B010DE"
	Family       string
	ComputeMajor int
	ComputeMinor int
	// ComputeSlices and MemorySlices are the GPU's MIG geometry (A100/H100: 7 and 8).
	ComputeSlices int
	MemorySlices  int
	MIGProfiles   []MIGProfile // empty: not MIG-capable
}

// MIGCapable reports whether the GPU can be partitioned.
func (s SKU) MIGCapable() bool { return len(s.MIGProfiles) > 0 }

// Profile returns the named MIG profile of this GPU.
func (s SKU) Profile(name string) (MIGProfile, bool) {
	for _, p := range s.MIGProfiles {
		if p.Name == name {
			return p, true
		}
	}
	return MIGProfile{}, false
}

// ProfileNames lists the MIG profiles this GPU supports.
func (s SKU) ProfileNames() []string {
	names := make([]string, len(s.MIGProfiles))
	for i, p := range s.MIGProfiles {
		names[i] = p.Name
	}
	return names
}

// 7/8-slice geometry shared by A100 and H100/H200 class GPUs; the profile
// names differ only by their memory size in GB, as mig-parted spells them
// (deployments/systemd/config-default.yaml). gb and mib are, in order: 1g,
// 1g with double memory, 2g, 3g, 4g, 7g.
func sevenSliceProfiles(gb, mib [6]int, sms int) []MIGProfile {
	name := func(g, i int) string { return fmt.Sprintf("%dg.%dgb", g, gb[i]) }
	return []MIGProfile{
		{Name: name(1, 0), ComputeSlices: 1, MemorySlices: 1, MaxPerGPU: 7, MemoryMiB: mib[0], Multiprocessors: sms},
		{Name: name(1, 0) + "+me", ComputeSlices: 1, MemorySlices: 1, MaxPerGPU: 1, MemoryMiB: mib[0], Multiprocessors: sms},
		{Name: name(1, 1), ComputeSlices: 1, MemorySlices: 2, MaxPerGPU: 4, MemoryMiB: mib[1], Multiprocessors: sms},
		{Name: name(2, 2), ComputeSlices: 2, MemorySlices: 2, MaxPerGPU: 3, MemoryMiB: mib[2], Multiprocessors: 2 * sms},
		{Name: name(3, 3), ComputeSlices: 3, MemorySlices: 4, MaxPerGPU: 2, MemoryMiB: mib[3], Multiprocessors: 3 * sms},
		{Name: name(4, 4), ComputeSlices: 4, MemorySlices: 4, MaxPerGPU: 1, MemoryMiB: mib[4], Multiprocessors: 4 * sms},
		{Name: name(7, 5), ComputeSlices: 7, MemorySlices: 8, MaxPerGPU: 1, MemoryMiB: mib[5], Multiprocessors: 7 * sms},
	}
}

// Catalog holds the GPUs fakegpu can simulate, keyed by the SKU key fleets use.
// Product names, memory and PCI ids are those NVML reports; MIG geometry is
// mig-parted's (deployments/systemd/config-default.yaml).
var Catalog = map[string]SKU{
	"a100-40gb": {
		Key: "a100-40gb", Product: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960,
		PCIDeviceIDs: []string{"0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"},
		Family:       "ampere", ComputeMajor: 8, ComputeMinor: 0, ComputeSlices: 7, MemorySlices: 8,
		MIGProfiles: sevenSliceProfiles([6]int{5, 10, 10, 20, 20, 40}, [6]int{4864, 9856, 9856, 19968, 19968, 40192}, 14),
	},
	"a100-80gb": {
		Key: "a100-80gb", Product: "NVIDIA A100-SXM4-80GB", MemoryMiB: 81920,
		PCIDeviceIDs: []string{"0x20B210DE", "0x20B510DE"},
		Family:       "ampere", ComputeMajor: 8, ComputeMinor: 0, ComputeSlices: 7, MemorySlices: 8,
		MIGProfiles: sevenSliceProfiles([6]int{10, 20, 20, 40, 40, 80}, [6]int{9728, 19968, 19968, 40192, 40192, 80384}, 14),
	},
	"h100-80gb": {
		Key: "h100-80gb", Product: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559,
		PCIDeviceIDs: []string{"0x233010DE", "0x233110DE", "0x232210DE"},
		Family:       "hopper", ComputeMajor: 9, ComputeMinor: 0, ComputeSlices: 7, MemorySlices: 8,
		MIGProfiles: sevenSliceProfiles([6]int{10, 20, 20, 40, 40, 80}, [6]int{9856, 19968, 19968, 40192, 40192, 80384}, 16),
	},
	"h200-141gb": {
		Key: "h200-141gb", Product: "NVIDIA H200", MemoryMiB: 143771,
		PCIDeviceIDs: []string{"0x233510DE", "0x233B10DE"},
		Family:       "hopper", ComputeMajor: 9, ComputeMinor: 0, ComputeSlices: 7, MemorySlices: 8,
		MIGProfiles: sevenSliceProfiles([6]int{18, 35, 35, 71, 71, 141}, [6]int{17408, 35584, 35584, 71680, 71680, 143360}, 16),
	},
	"a30-24gb": {
		Key: "a30-24gb", Product: "NVIDIA A30", MemoryMiB: 24576,
		PCIDeviceIDs: []string{"0x20B710DE"},
		Family:       "ampere", ComputeMajor: 8, ComputeMinor: 0, ComputeSlices: 4, MemorySlices: 4,
		MIGProfiles: []MIGProfile{
			{Name: "1g.6gb", ComputeSlices: 1, MemorySlices: 1, MaxPerGPU: 4, MemoryMiB: 5836, Multiprocessors: 14},
			{Name: "1g.6gb+me", ComputeSlices: 1, MemorySlices: 1, MaxPerGPU: 1, MemoryMiB: 5836, Multiprocessors: 14},
			{Name: "2g.12gb", ComputeSlices: 2, MemorySlices: 2, MaxPerGPU: 2, MemoryMiB: 11904, Multiprocessors: 28},
			{Name: "4g.24gb", ComputeSlices: 4, MemorySlices: 4, MaxPerGPU: 1, MemoryMiB: 24064, Multiprocessors: 56},
		},
	},
	"l4": {
		Key: "l4", Product: "NVIDIA L4", MemoryMiB: 23034,
		PCIDeviceIDs: []string{"0x27B810DE"}, Family: "ada-lovelace", ComputeMajor: 8, ComputeMinor: 9,
	},
	"l40s": {
		Key: "l40s", Product: "NVIDIA L40S", MemoryMiB: 46068,
		PCIDeviceIDs: []string{"0x26B910DE"}, Family: "ada-lovelace", ComputeMajor: 8, ComputeMinor: 9,
	},
	"t4": {
		Key: "t4", Product: "Tesla T4", MemoryMiB: 15360,
		PCIDeviceIDs: []string{"0x1EB810DE"}, Family: "turing", ComputeMajor: 7, ComputeMinor: 5,
	},
}

// LookupSKU returns the catalog entry for key, or an error listing the valid keys.
func LookupSKU(key string) (SKU, error) {
	if s, ok := Catalog[key]; ok {
		return s, nil
	}
	return SKU{}, fmt.Errorf("unknown GPU SKU %q (known: %s)", key, strings.Join(SKUKeys(), ", "))
}

// SKUKeys lists the catalog keys in order.
func SKUKeys() []string {
	keys := make([]string, 0, len(Catalog))
	for k := range Catalog {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
