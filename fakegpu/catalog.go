// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"fmt"
	"sort"
	"strings"
)

// MIGProfile is one MIG device type a GPU can be split into. Its name,
// slices and MaxPerGPU are mig-parted's (stack-facts §5). Its run-time figures
// (MemoryMiB, Multiprocessors, Engines) are what NVML reports for a MIG
// device and GFD copies into labels; the facts doc holds none of them as
// verified, so each carries its Provenance.
type MIGProfile struct {
	// Name as mig-parted and the device plugin spell it, e.g. "1g.5gb" or "1g.5gb+me".
	Name string
	// ComputeSlices and MemorySlices are what one device of this profile uses
	// of the GPU's SKU.ComputeSlices and SKU.MemorySlices.
	ComputeSlices int
	MemorySlices  int
	// MaxPerGPU is how many of this profile alone fit one GPU.
	MaxPerGPU int
	// MemoryMiB and Multiprocessors are GFD's memory and multiprocessors
	// labels for the profile; Figures says where both come from.
	MemoryMiB       int
	Multiprocessors int
	Figures         Provenance
	// Engines are GFD's engines.* labels for the profile; EngineFigures
	// says where they come from.
	Engines       MIGEngines
	EngineFigures Provenance
}

// MIGEngines are the engines of one MIG device, as GFD labels them
// (gpu.engines.* under single, mig-<profile>.engines.* under mixed).
type MIGEngines struct {
	Copy, Decoder, Encoder, JPEG, OFA int
}

// Provenance says where a catalog figure comes from, so a test can hold
// every figure to either the facts doc or an explicit UNVERIFIED mark.
type Provenance struct {
	// Verified is true only when the facts doc vouches for the figure;
	// Source then starts with "stack-facts §".
	Verified bool
	// Source names where the figure comes from; an unverified figure's
	// Source says UNVERIFIED.
	Source string
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

// LayoutName is the name mig-parted gives the layout that puts this
// profile alone on every GPU: all-<profile> with + turned into .
// (all-1g.5gb.me, all-2g.12gb.me; stack-facts §4 step 2, §5).
func (p MIGProfile) LayoutName() string { return "all-" + migDeviceName(p.Name) }

// Sources of the run-time figures. By stack-facts §5, MIG memory and SM
// labels come from NVML at run time and upstream source holds no
// authoritative per-SKU figures; the doc quotes a few third-party dumps,
// marked UNVERIFIED, and has no engine counts at all.
var (
	// figEstimate: the simulator's own estimate (memory by memory slices,
	// SMs by compute slices); nothing vouches for it.
	figEstimate = Provenance{Source: "UNVERIFIED: simulator estimate; stack-facts §5 says no upstream source holds MIG memory or SM figures"}
	// engMIGGuide: NVIDIA's public MIG user guide (Supported MIG Profiles:
	// copy engines, NVDEC, JPEG, OFA; none of these GPUs has NVENC, so
	// encoders are 0). Not in the facts doc and not checked against
	// hardware; the A30 and A100 1g-3g rows were read from the guide, the
	// A100 4g/7g and H100/H200 rows are as remembered from it.
	engMIGGuide = Provenance{Source: "UNVERIFIED: NVIDIA MIG user guide, Supported MIG Profiles (not in the facts doc)"}
)

// figDump is a figure the facts doc quotes from a third-party label dump of
// the named product (stack-facts §5, UNVERIFIED there).
func figDump(product string) Provenance {
	return Provenance{Source: "stack-facts §5 UNVERIFIED: third-party GFD label dump of " + product}
}

// figure is one profile's MIG memory and SM count, with their source.
type figure struct {
	mib, sms int
	src      Provenance
}

// est is a figure the simulator estimates.
func est(mib, sms int) figure { return figure{mib, sms, figEstimate} }

// MIG engines per profile, in the order 1g, 1g+me, 1g with double memory,
// 2g, 3g, 4g, 7g (NVIDIA MIG user guide; see engMIGGuide).
var (
	ampereEngines = [7]MIGEngines{
		{Copy: 1}, {Copy: 1, Decoder: 1, JPEG: 1, OFA: 1}, {Copy: 1, Decoder: 1},
		{Copy: 2, Decoder: 1}, {Copy: 3, Decoder: 2}, {Copy: 4, Decoder: 2}, {Copy: 7, Decoder: 5, JPEG: 1, OFA: 1},
	}
	hopperEngines = [7]MIGEngines{
		{Copy: 1, Decoder: 1, JPEG: 1}, {Copy: 1, Decoder: 1, JPEG: 1, OFA: 1}, {Copy: 1, Decoder: 1, JPEG: 1},
		{Copy: 2, Decoder: 2, JPEG: 2}, {Copy: 3, Decoder: 3, JPEG: 3}, {Copy: 4, Decoder: 4, JPEG: 4}, {Copy: 8, Decoder: 7, JPEG: 7, OFA: 1},
	}
)

// sevenSliceProfiles is the 7/8-slice geometry of A100 and H100/H200 class
// GPUs (stack-facts §5): the profile names differ only by their memory size in
// GB, as mig-parted spells them. gb and fig are, in order: 1g, 1g with
// double memory, 2g, 3g, 4g, 7g; 1g+me has 1g's slices and so its figure.
// Its layout is named all-<1g>.me (stack-facts §5).
func sevenSliceProfiles(gb [6]int, fig [6]figure, engines [7]MIGEngines) []MIGProfile {
	name := func(g, i int) string { return fmt.Sprintf("%dg.%dgb", g, gb[i]) }
	p := func(name string, compute, memory, max int, f figure, e MIGEngines) MIGProfile {
		return MIGProfile{Name: name, ComputeSlices: compute, MemorySlices: memory, MaxPerGPU: max,
			MemoryMiB: f.mib, Multiprocessors: f.sms, Figures: f.src, Engines: e, EngineFigures: engMIGGuide}
	}
	me := fig[0]
	if me.src != figEstimate {
		// Only the plain 1g profile was dumped; +me is assumed equal.
		me.src = Provenance{Source: "UNVERIFIED: assumed equal to " + name(1, 0) + " (same slices); " + me.src.Source}
	}
	return []MIGProfile{
		p(name(1, 0), 1, 1, 7, fig[0], engines[0]),
		p(name(1, 0)+"+me", 1, 1, 1, me, engines[1]),
		p(name(1, 1), 1, 2, 4, fig[1], engines[2]),
		p(name(2, 2), 2, 2, 3, fig[2], engines[3]),
		p(name(3, 3), 3, 4, 2, fig[3], engines[4]),
		p(name(4, 4), 4, 4, 1, fig[4], engines[5]),
		p(name(7, 5), 7, 8, 1, fig[5], engines[6]),
	}
}

// a30Profiles is the A30's 4-slice geometry (stack-facts §5): 1g.6gb ×4,
// 1g.6gb+me ×1, 2g.12gb ×2, 2g.12gb+me ×1, 4g.24gb ×1, no 1g with double
// memory. The +me layouts are all-1g.6gb.me and all-2g.12gb.me
// (stack-facts §5). Every figure is the simulator's estimate; the engines
// are the MIG user guide's A30 table.
func a30Profiles() []MIGProfile {
	p := func(name string, slices, max, mib, sms int, e MIGEngines) MIGProfile {
		return MIGProfile{Name: name, ComputeSlices: slices, MemorySlices: slices, MaxPerGPU: max,
			MemoryMiB: mib, Multiprocessors: sms, Figures: figEstimate, Engines: e, EngineFigures: engMIGGuide}
	}
	return []MIGProfile{
		p("1g.6gb", 1, 4, 5836, 14, MIGEngines{Copy: 1}),
		p("1g.6gb+me", 1, 1, 5836, 14, MIGEngines{Copy: 1, Decoder: 1, JPEG: 1, OFA: 1}),
		p("2g.12gb", 2, 2, 11904, 28, MIGEngines{Copy: 2, Decoder: 2}),
		p("2g.12gb+me", 2, 1, 11904, 28, MIGEngines{Copy: 2, Decoder: 2, JPEG: 1, OFA: 1}),
		p("4g.24gb", 4, 1, 24064, 56, MIGEngines{Copy: 4, Decoder: 4, JPEG: 1, OFA: 1}),
	}
}

// Catalog holds the GPUs fakegpu can simulate, keyed by the SKU key fleets use.
// PCI ids and MIG geometry are mig-parted's (stack-facts §5, MP@bd7160f4
// deployments/systemd/config-default.yaml). Product names, whole-GPU
// memory, family and compute capability are what NVML reports on these
// products; the facts doc does not list them. MIG figures: see MIGProfile.
var Catalog = map[string]SKU{
	"a100-40gb": {
		Key: "a100-40gb", Product: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960,
		PCIDeviceIDs: []string{"0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"},
		Family:       "ampere", ComputeMajor: 8, ComputeMinor: 0, ComputeSlices: 7, MemorySlices: 8,
		MIGProfiles: sevenSliceProfiles([6]int{5, 10, 10, 20, 20, 40},
			[6]figure{est(4864, 14), est(9856, 14), est(9856, 28), est(19968, 42), est(19968, 56), est(40192, 98)},
			ampereEngines),
	},
	"a100-80gb": {
		Key: "a100-80gb", Product: "NVIDIA A100-SXM4-80GB", MemoryMiB: 81920,
		PCIDeviceIDs: []string{"0x20B210DE", "0x20B510DE"},
		Family:       "ampere", ComputeMajor: 8, ComputeMinor: 0, ComputeSlices: 7, MemorySlices: 8,
		// The doc's dumps are of the PCIe card; this SKU is SXM4, with the
		// same GA100 and 80 GB, so the figures are taken as the same.
		MIGProfiles: sevenSliceProfiles([6]int{10, 20, 20, 40, 40, 80},
			[6]figure{{9728, 14, figDump("A100-80GB-PCIe")}, est(19968, 14), est(19968, 28),
				{40192, 42, figDump("A100-80GB-PCIe")}, est(40192, 56), est(80384, 98)},
			ampereEngines),
	},
	"h100-80gb": {
		Key: "h100-80gb", Product: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559,
		PCIDeviceIDs: []string{"0x233010DE", "0x233110DE", "0x232210DE"},
		Family:       "hopper", ComputeMajor: 9, ComputeMinor: 0, ComputeSlices: 7, MemorySlices: 8,
		// Not go-nvml's mock figures (stack-facts §5: synthetic). The doc found
		// no source for 2g.20gb (20096 MiB is unconfirmed), so it and the
		// other undumped profiles are estimates.
		MIGProfiles: sevenSliceProfiles([6]int{10, 20, 20, 40, 40, 80},
			[6]figure{{9984, 16, figDump("H100-80GB-HBM3")}, est(19968, 16), est(19968, 32),
				{40448, 60, figDump("H100-80GB-HBM3")}, est(40448, 64), est(80384, 112)},
			hopperEngines),
	},
	"h200-141gb": {
		Key: "h200-141gb", Product: "NVIDIA H200", MemoryMiB: 143771,
		PCIDeviceIDs: []string{"0x233510DE", "0x233B10DE"},
		Family:       "hopper", ComputeMajor: 9, ComputeMinor: 0, ComputeSlices: 7, MemorySlices: 8,
		MIGProfiles: sevenSliceProfiles([6]int{18, 35, 35, 71, 71, 141},
			[6]figure{est(17408, 16), est(35584, 16), est(35584, 32), est(71680, 48), est(71680, 64), est(143360, 112)},
			hopperEngines),
	},
	"a30-24gb": {
		Key: "a30-24gb", Product: "NVIDIA A30", MemoryMiB: 24576,
		PCIDeviceIDs: []string{"0x20B710DE"},
		Family:       "ampere", ComputeMajor: 8, ComputeMinor: 0, ComputeSlices: 4, MemorySlices: 4,
		MIGProfiles: a30Profiles(),
	},
	// L4, L40S and T4 are not MIG-capable (stack-facts §5).
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
