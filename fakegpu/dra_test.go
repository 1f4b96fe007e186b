// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"pgregory.net/rapid"
)

// Rows cite docs/facts/dra-facts.md as "dra-facts §N".

func devicesOf(specs []resourcev1.ResourceSliceSpec) []resourcev1.Device {
	var out []resourcev1.Device
	for _, s := range specs {
		out = append(out, s.Devices...)
	}
	return out
}

func deviceNames(devs []resourcev1.Device) []string {
	var out []string
	for _, d := range devs {
		out = append(out, d.Name)
	}
	return out
}

func attr(d resourcev1.Device, name string) string {
	a, ok := d.Attributes[resourcev1.QualifiedName(name)]
	switch {
	case !ok:
		return "<absent>"
	case a.StringValue != nil:
		return *a.StringValue
	case a.VersionValue != nil:
		return *a.VersionValue
	case a.IntValue != nil:
		return fmt.Sprint(*a.IntValue)
	case a.BoolValue != nil:
		return fmt.Sprint(*a.BoolValue)
	}
	return "<empty>"
}

func capacity(d resourcev1.Device, name string) string {
	c, ok := d.Capacity[resourcev1.QualifiedName(name)]
	if !ok {
		return "<absent>"
	}
	return c.Value.String()
}

func mustSlices(t *testing.T, node, sku string, gpus int, state []GPUState, cfg DRAConfig) []resourcev1.ResourceSliceSpec {
	t.Helper()
	specs, err := DRASlices(node, NodeInventory{SKU: mustSKU(t, sku), Count: gpus}, state, cfg, 3, nil)
	require.NoError(t, err)
	return specs
}

func TestDRAWholeGPUs(t *testing.T) {
	// dra-facts §2 "Driver, pools and slices": one pool per node named
	// after it, nodeName set, static devices in one slice.
	specs := mustSlices(t, "node-a", "h100-80gb", 2, nil, DRAConfig{Mode: DRAWholeGPU})
	require.Len(t, specs, 1)
	s := specs[0]
	assert.Equal(t, DRADriver, s.Driver)
	assert.Equal(t, "node-a", *s.NodeName)
	assert.Equal(t, resourcev1.ResourcePool{Name: "node-a", Generation: 3, ResourceSliceCount: 1}, s.Pool)
	assert.Equal(t, []string{"gpu-0", "gpu-1"}, deviceNames(s.Devices))

	// dra-facts §2 "Attributes" and "Example values" (H100-80GB gpu-0).
	d := s.Devices[1]
	for name, want := range map[string]string{
		"type": "gpu", "productName": "NVIDIA H100 80GB HBM3", "brand": "Nvidia", "architecture": "Hopper",
		"cudaComputeCapability": "9.0.0", "driverVersion": "550.90.7", "cudaDriverVersion": "12.4.0",
		"uuid": DeviceIDs("node-a", ResourceGPU, 2, 1)[1], "parentUUID": "<absent>",
	} {
		assert.Equal(t, want, attr(d, name), name)
	}
	assert.Contains(t, d.Attributes, resourcev1.QualifiedName("resource.kubernetes.io/pciBusID"), "dra-facts §2: the standard name, not v25.8's pcieBusID (§6.8)")
	assert.Equal(t, "81559Mi", capacity(d, "memory"))
	assert.Nil(t, d.AllowMultipleAllocations, "consumable shares are off by default")
}

func TestDRAVersionsAreSemver(t *testing.T) {
	// dra-facts §2 table: 9.0→9.0.0, 580.95.05→580.95.5.
	for in, want := range map[string]string{"9.0": "9.0.0", "580.95.05": "580.95.5", "12.4": "12.4.0"} {
		assert.Equal(t, want, *version(in).VersionValue, in)
	}
}

func TestDRAStaticMIG(t *testing.T) {
	// dra-facts §2 "Example values", A100-40GB MIG 1g.5gb:
	// gpu-0-mig-1g5gb-19-<0..6>, memory 4864Mi, multiprocessors 14,
	// copyEngines 1, other engines 0, memorySlice<start>=1; and "Static":
	// MIG on → no full GPU.
	specs := mustSlices(t, "n", "a100-40gb", 1, migAll(1, map[string]int{"1g.5gb": 7}), DRAConfig{Mode: DRAStaticMIG})
	devs := devicesOf(specs)
	var want []string
	for i := range 7 {
		want = append(want, fmt.Sprintf("gpu-0-mig-1g5gb-19-%d", i))
	}
	assert.Equal(t, want, deviceNames(devs))
	d := devs[3]
	assert.Equal(t, "mig", attr(d, "type"))
	assert.Equal(t, "1g.5gb", attr(d, "profile"))
	assert.True(t, strings.HasPrefix(attr(d, "uuid"), "MIG-"), "static MIG devices have a uuid")
	assert.Equal(t, DeviceIDs("n", ResourceGPU, 1, 1)[0], attr(d, "parentUUID"))
	assert.Equal(t, "NVIDIA A100-SXM4-40GB", attr(d, "productName"), "the parent's")
	for name, want := range map[string]string{
		"memory": "4864Mi", "multiprocessors": "14", "copyEngines": "1", "decoders": "0", "encoders": "0",
		"jpegEngines": "0", "ofaEngines": "0", "memorySlice3": "1", "memorySlice2": "<absent>",
	} {
		assert.Equal(t, want, capacity(d, name), name)
	}
}

func TestDRAStaticMIGEdges(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state []GPUState
		want  []string
	}{
		// dra-facts §2 "Static": MIG off → the full GPU; MIG on with no MIG
		// devices → nothing.
		{"MIG off on one GPU", migFirst(2, 1, map[string]int{"7g.40gb": 1}), []string{"gpu-0-mig-7g40gb-0-0", "gpu-1"}},
		{"MIG on, no devices", migFirst(2, 1, nil), []string{"gpu-1"}},
		// Mixed layouts get disjoint memory slices: the 3g.20gb goes to 4
		// so that two 1g.5gb (starts 0-6 only) still fit.
		{"mixed layout", migAll(1, map[string]int{"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 2}),
			[]string{"gpu-0-mig-3g20gb-9-4", "gpu-0-mig-2g10gb-14-0", "gpu-0-mig-1g5gb-19-2", "gpu-0-mig-1g5gb-19-3"}},
		// dra-facts §2 "Device names": +me → -me.
		{"+me profile", migAll(1, map[string]int{"1g.5gb+me": 1}), []string{"gpu-0-mig-1g5gb-me-20-0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			specs := mustSlices(t, "n", "a100-40gb", len(tc.state), tc.state, DRAConfig{Mode: DRAStaticMIG})
			assert.Equal(t, tc.want, deviceNames(devicesOf(specs)))
		})
	}
	// A layout the GPU cannot hold is an error, not an overlap.
	_, err := DRASlices("n", NodeInventory{SKU: mustSKU(t, "a100-40gb"), Count: 1},
		migAll(1, map[string]int{"4g.20gb": 1, "3g.20gb": 2}), DRAConfig{Mode: DRAStaticMIG}, 1, nil)
	assert.EqualError(t, err, "GPU 0: MIG devices map[3g.20gb:2 4g.20gb:1] do not fit the a100-40gb's 8 memory slices")
}

func TestDRADynamicMIG(t *testing.T) {
	// dra-facts §2 "Dynamic": G+1 slices, counters first; one counter set per
	// GPU with the hyphenated capacity names and memory-slice-<i>; the
	// full GPU consumes every counter; placements have no uuid and no
	// memorySlice capacities.
	specs := mustSlices(t, "n", "h100-80gb", 2, nil, DRAConfig{Mode: DRADynamicMIG})
	require.Len(t, specs, 3)
	for _, s := range specs {
		assert.EqualValues(t, 3, s.Pool.ResourceSliceCount, "dra-facts §1: the count includes every slice of the pool")
	}
	require.Empty(t, specs[0].Devices, "dra-facts §6.7: only one of sharedCounters or devices")
	require.Len(t, specs[0].SharedCounters, 2)
	set := specs[0].SharedCounters[0]
	assert.Equal(t, "gpu-0-counter-set", set.Name)
	for _, c := range []string{"multiprocessors", "copy-engines", "decoders", "encoders", "jpeg-engines", "ofa-engines", "memory", "memory-slice-0", "memory-slice-7"} {
		assert.Contains(t, set.Counters, c)
	}
	devs := specs[1].Devices
	require.Equal(t, "gpu-0", devs[0].Name)
	assert.Equal(t, set.Counters, devs[0].ConsumesCounters[0].Counters, "the full GPU consumes every counter")
	mig := devs[1]
	assert.Equal(t, "mig", attr(mig, "type"))
	assert.Equal(t, "<absent>", attr(mig, "uuid"), "dra-facts §2: absent on dynamic-MIG devices")
	assert.Equal(t, "<absent>", capacity(mig, "memorySlice0"))
	// Every placement of every profile: 7+1+4+3+2+1+1.
	assert.Len(t, devs, 1+19)
	assert.Equal(t, "gpu-1", specs[2].Devices[0].Name)

	// dra-facts §2: on Ampere with MIG already on, the full GPU is left out.
	specs = mustSlices(t, "n", "a100-40gb", 1, migAll(1, map[string]int{"1g.5gb": 1}), DRAConfig{Mode: DRADynamicMIG})
	assert.NotContains(t, deviceNames(specs[1].Devices), "gpu-0")
	// A GPU that cannot do MIG publishes the GPU alone (dra-facts §6.7, ND #1092 fixed).
	specs = mustSlices(t, "n", "l4", 2, nil, DRAConfig{Mode: DRADynamicMIG})
	assert.Equal(t, []string{"gpu-0", "gpu-1"}, deviceNames(devicesOf(specs)))
}

// Any set of dynamic placements whose memory slices do not overlap fits
// the GPU's counters: the memory slices bind, as the hardware's geometry
// does, and the estimated SM and engine figures never refuse a layout
// that fits.
func TestDRADynamicCountersRefuseOnlyOverlaps(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sku := Catalog[rapid.SampledFrom([]string{"a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb", "a30-24gb"}).Draw(t, "sku")]
		d := draNode{node: "n", sku: sku}
		set := d.counterSet(0)
		devs := d.partitions(0, GPUState{})[1:]
		picked := rapid.SliceOfDistinct(rapid.IntRange(0, len(devs)-1), rapid.ID[int]).Draw(t, "placements")
		used := map[string]bool{}
		sum := map[string]int64{}
		for _, i := range picked {
			for k, v := range devs[i].ConsumesCounters[0].Counters {
				if strings.HasPrefix(k, "memory-slice-") {
					if used[k] {
						return // overlapping: the counters refuse it, as they should
					}
					used[k] = true
				}
				sum[k] += v.Value.Value()
			}
		}
		for k, v := range sum {
			if c := set.Counters[k]; v > c.Value.Value() {
				t.Fatalf("%s: %v fit the memory slices but consume %s %d > %d", sku.Key, deviceNames(pick(devs, picked)), k, v, c.Value.Value())
			}
		}
	})
}

func pick(devs []resourcev1.Device, idx []int) []resourcev1.Device {
	var out []resourcev1.Device
	for _, i := range idx {
		out = append(out, devs[i])
	}
	return out
}

// dra-facts §1 limits and §6.7 invalid slices, for every SKU and mode:
// names are DNS labels (no dots), at most 32 attributes and capacities per
// device, at most 128 devices per slice (64 with taints or counters). And
// dra-facts §6.1: no whole GPU beside MIG devices of the same GPU unless
// they share a counter set.
func TestDRASlicesAreValidForEverySKU(t *testing.T) {
	for _, key := range SKUKeys() {
		sku := Catalog[key]
		for _, mode := range DRAModes {
			t.Run(key+"/"+mode, func(t *testing.T) {
				state := migFirst(8, 4, nil)
				if sku.MIGCapable() {
					state = migFirst(8, 4, map[string]int{sku.MIGProfiles[0].Name: sku.MIGProfiles[0].MaxPerGPU})
				}
				specs, err := DRASlices("gpu-node-1", NodeInventory{SKU: sku, Count: 8}, state, DRAConfig{Mode: mode}, 1, map[int]int{0: 79})
				require.NoError(t, err)
				for _, s := range specs {
					limit := 128
					if len(s.SharedCounters) > 0 || slices.ContainsFunc(s.Devices, func(d resourcev1.Device) bool { return len(d.Taints)+len(d.ConsumesCounters) > 0 }) {
						limit = 64
					}
					assert.LessOrEqual(t, len(s.Devices), limit)
					assert.False(t, len(s.Devices) > 0 && len(s.SharedCounters) > 0)
					for _, cs := range s.SharedCounters {
						assert.Empty(t, validation.IsDNS1123Label(cs.Name), cs.Name)
						assert.LessOrEqual(t, len(cs.Counters), 32, cs.Name)
					}
					for _, d := range s.Devices {
						assert.Empty(t, validation.IsDNS1123Label(d.Name), d.Name)
						assert.LessOrEqual(t, len(d.Attributes)+len(d.Capacity), 32, d.Name)
						assert.LessOrEqual(t, len(d.ConsumesCounters), 2, d.Name)
					}
				}
				parents := map[string]bool{}
				for _, d := range devicesOf(specs) {
					if attr(d, "type") == "mig" && len(d.ConsumesCounters) == 0 {
						parents[attr(d, "parentUUID")] = true
					}
				}
				for _, d := range devicesOf(specs) {
					if attr(d, "type") == "gpu" {
						assert.False(t, parents[attr(d, "uuid")], "dra-facts §6.1: %s published whole beside its MIG devices", d.Name)
					}
				}
			})
		}
	}
}

func TestDRAConsumableShares(t *testing.T) {
	// dra-facts §2 "ConsumableShares".
	mi := func(s string) string { q := resource.MustParse(s); return q.String() }
	for _, tc := range []struct {
		shares              string
		def, min, max, step string
		sharesCap           string
	}{
		{SharesMemory, mi("23034Mi"), mi("1Mi"), mi("23034Mi"), mi("1Mi"), "<absent>"},
		{SharesUnlimited, "0", "0", mi("23034Mi"), mi("1Mi"), "<absent>"},
		{"4", "0", "0", mi("23034Mi"), mi("1Mi"), "4"},
	} {
		t.Run(tc.shares, func(t *testing.T) {
			d := devicesOf(mustSlices(t, "n", "l4", 1, nil, DRAConfig{Mode: DRAWholeGPU, ConsumableShares: tc.shares}))[0]
			require.NotNil(t, d.AllowMultipleAllocations)
			assert.True(t, *d.AllowMultipleAllocations)
			p := d.Capacity["memory"].RequestPolicy
			require.NotNil(t, p)
			assert.Equal(t, []string{tc.def, tc.min, tc.max, tc.step},
				[]string{p.Default.String(), p.ValidRange.Min.String(), p.ValidRange.Max.String(), p.ValidRange.Step.String()})
			assert.Equal(t, tc.sharesCap, capacity(d, "shares"))
			if tc.sharesCap != "<absent>" {
				sp := d.Capacity["shares"].RequestPolicy
				assert.Equal(t, []string{"1", "1", "1"}, []string{sp.Default.String(), sp.ValidRange.Min.String(), sp.ValidRange.Step.String()})
			}
		})
	}
	// On static MIG devices too.
	d := devicesOf(mustSlices(t, "n", "a100-40gb", 1, migAll(1, map[string]int{"3g.20gb": 2}), DRAConfig{Mode: DRAStaticMIG, ConsumableShares: SharesMemory}))[0]
	assert.True(t, *d.AllowMultipleAllocations)
}

func TestDRAConfigErrorsNameTheField(t *testing.T) {
	for cfg, want := range map[DRAConfig]string{
		{Mode: "mps"}: `mode: unknown DRA mode "mps" (known: gpu, static-mig, dynamic-mig)`,
		{Mode: DRAWholeGPU, ConsumableShares: "0"}:        `consumableShares: want memory, unlimited or a count >= 1, got "0"`,
		{Mode: DRADynamicMIG, ConsumableShares: "memory"}: "consumableShares: applies to whole GPUs and static MIG devices, not dynamic-mig",
	} {
		assert.EqualError(t, cfg.Validate(), want)
	}
}

func TestDRAHealthTaints(t *testing.T) {
	// dra-facts §2 "Driver gates": gpu.nvidia.com/xid=<n>, NoSchedule.
	specs, err := DRASlices("n", NodeInventory{SKU: mustSKU(t, "h100-80gb"), Count: 2}, nil, DRAConfig{Mode: DRAWholeGPU}, 1, map[int]int{1: 79})
	require.NoError(t, err)
	devs := devicesOf(specs)
	assert.Empty(t, devs[0].Taints)
	assert.Equal(t, []resourcev1.DeviceTaint{{Key: "gpu.nvidia.com/xid", Value: "79", Effect: resourcev1.DeviceTaintEffectNoSchedule}}, devs[1].Taints)
}

func TestDRADeviceClasses(t *testing.T) {
	classes := DRADeviceClasses(mustSKU(t, "a100-40gb"), mustSKU(t, "h100-80gb"))
	byName := map[string]DRADeviceClass{}
	for _, c := range classes {
		assert.Empty(t, validation.IsDNS1123Subdomain(c.Name), c.Name)
		byName[c.Name] = c
	}
	// dra-facts §2 "DeviceClasses": the chart's classes.
	assert.Equal(t, DRADeviceClass{Name: "gpu.nvidia.com",
		Expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'", ExtendedResourceName: "nvidia.com/gpu"},
		byName["gpu.nvidia.com"])
	assert.Empty(t, byName["mig.nvidia.com"].ExtendedResourceName)
	// The demo's per-profile pattern, mapped to the device plugin's names.
	assert.Equal(t, "nvidia.com/mig-1g.5gb", byName["mig-1g-5gb.gpu.nvidia.com"].ExtendedResourceName)
	assert.Contains(t, byName["mig-1g-5gb.gpu.nvidia.com"].Expression, "profile == '1g.5gb'")
	assert.Equal(t, "nvidia.com/mig-1g.5gb.me", byName["mig-1g-5gb-me.gpu.nvidia.com"].ExtendedResourceName)
	assert.Len(t, classes, 2+7+6, "1g.10gb is both A100-40GB's double-memory 1g and H100's 1g: one class")
}

func TestDRAPrepare(t *testing.T) {
	published := PublishedDevices(mustSlices(t, "node-a", "h100-80gb", 2, nil, DRAConfig{Mode: DRAWholeGPU}))
	// dra-facts §4: CDI ids k8s.gpu.nvidia.com/claim=<claimUID>-<device>;
	// NodePrepareResources answers per device with its request names.
	got, err := DRAPrepare("node-a", published, "uid-1", []DRAAllocated{
		{Request: "gpu", Driver: DRADriver, Pool: "node-a", Device: "gpu-0"},
		{Request: "more/big", Driver: DRADriver, Pool: "node-a", Device: "gpu-1"},
		{Request: "nic", Driver: "example.com", Pool: "node-a", Device: "nic-0"},
	})
	require.NoError(t, err)
	assert.Equal(t, []DRAPrepared{
		{Requests: []string{"gpu"}, Pool: "node-a", Device: "gpu-0", CDIDeviceIDs: []string{"k8s.gpu.nvidia.com/claim=uid-1-gpu-0"}},
		{Requests: []string{"more"}, Pool: "node-a", Device: "gpu-1", CDIDeviceIDs: []string{"k8s.gpu.nvidia.com/claim=uid-1-gpu-1"}},
	}, got)

	// A device the node no longer publishes (a MIG relabel) fails the claim.
	_, err = DRAPrepare("node-a", published, "uid-2", []DRAAllocated{{Request: "mig", Driver: DRADriver, Pool: "node-a", Device: "gpu-0-mig-1g10gb-19-0"}})
	assert.ErrorContains(t, err, `device "gpu-0-mig-1g10gb-19-0" of pool "node-a" is not published by node node-a`)
}

func TestCDIDeviceSplitsTheID(t *testing.T) {
	uid := "0b6c3f2e-8d41-4c1e-9a57-2f1d3e4c5b6a"
	claim, dev, ok := CDIDevice(CDIDeviceID(uid, "gpu-0-mig-1g10gb-19-0"))
	assert.True(t, ok)
	assert.Equal(t, uid, claim)
	assert.Equal(t, "gpu-0-mig-1g10gb-19-0", dev, "dashes in the device name stay")
	for _, bad := range []string{"", "nvidia.com/gpu=0", "k8s.gpu.nvidia.com/claim=short-gpu-0"} {
		_, _, ok := CDIDevice(bad)
		assert.False(t, ok, bad)
	}
}

func TestDRASliceName(t *testing.T) {
	// dra-facts §2: generateName <5-hex index>-gpu.nvidia.com-<node>-.
	assert.Equal(t, "00000-gpu.nvidia.com-node-a-", DRASliceName("node-a", 0))
	assert.Equal(t, "0000a-gpu.nvidia.com-node-a-", DRASliceName("node-a", 10))
}

// A node whose GPUs the DRA driver serves publishes slices from the MIG
// state the MIG manager left, beside whatever the device plugin does:
// the plugin's deploy label decides that (dra-facts §6.2 is a node with both).
func TestDesiredPublishesDRASlices(t *testing.T) {
	s := migStack(t)
	inv := NodeInventory{SKU: mustSKU(t, "h100-80gb"), Count: 2}
	obs := func(labels, ann map[string]string) NodeObservation {
		return NodeObservation{Name: "n", Labels: labels, Annotations: ann}
	}
	dpOff := map[string]string{LabelMIGConfig: "all-1g.10gb", LabelDeployDevicePlugin: "false"}
	d := s.Desired(inv, obs(dpOff, map[string]string{AnnotationMIGApplied: "all-1g.10gb", AnnotationDRA: DRAStaticMIG,
		AnnotationMIGGPUs: EncodeGPUStates(migAll(2, map[string]int{"1g.10gb": 7}))}), 0)
	assert.Empty(t, d.DRAErr)
	assert.Len(t, devicesOf(d.DRA), 14, "seven 1g.10gb devices per GPU")
	assert.Empty(t, d.Capacity, "the device plugin never ran: the kubelet shows none of its resources")
	assert.NotEmpty(t, d.PluginDown)

	// Both on one node: the simulator publishes both, as the real stack
	// would; telling a team so is the contract's job.
	d = s.Desired(inv, obs(map[string]string{LabelMIGConfig: "all-disabled"}, map[string]string{AnnotationMIGApplied: "all-disabled", AnnotationDRA: DRAWholeGPU}), 0)
	assert.EqualValues(t, 2, d.Allocatable[ResourceGPU])
	assert.Len(t, devicesOf(d.DRA), 2)

	d = s.Desired(inv, obs(dpOff, map[string]string{AnnotationDRA: "vgpu"}), 0)
	assert.Nil(t, d.DRA)
	assert.Contains(t, d.DRAErr, `annotations fakegpu.gpupool.dev/dra, fakegpu.gpupool.dev/dra-consumable-shares: mode: unknown DRA mode "vgpu"`)

	d = s.Desired(inv, obs(dpOff, map[string]string{}), 0)
	assert.Nil(t, d.DRA, "no driver, no slices")
}
