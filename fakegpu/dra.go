// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// What NVIDIA's DRA driver publishes for a node and what its kubelet
// plugin does with a claim, as pure functions: the controller writes the
// slices, the simulated kubelet and the real-kubelet plugin prepare claims.
// Facts are dra-facts.md's (cited "dra-facts §N"); where it is silent the
// simulator's choice is marked as such.

// DRADriver is the GPU driver's name (dra-facts §2 "Driver, pools and slices").
const DRADriver = "gpu.nvidia.com"

// How a node's GPUs are served by DRA.
const (
	// DRAWholeGPU: MIG off, one device per GPU.
	DRAWholeGPU = "gpu"
	// DRAStaticMIG: the MIG devices that exist, and no full GPU where MIG
	// is on (dra-facts §2 "Static"; pitfall 1 for the versions that did).
	DRAStaticMIG = "static-mig"
	// DRADynamicMIG: the driver's DynamicMIG gate: a counter set per GPU,
	// every possible placement as a partitionable device (dra-facts §2
	// "Dynamic").
	DRADynamicMIG = "dynamic-mig"
)

// DRAModes lists the modes a pool can name.
var DRAModes = []string{DRAWholeGPU, DRAStaticMIG, DRADynamicMIG}

// Consumable shares, the driver's --consumable-shares flag (dra-facts §2
// "ConsumableShares"): "" (disabled), "memory", "unlimited" or a count N.
const (
	SharesMemory    = "memory"
	SharesUnlimited = "unlimited"
)

// DRAConfig is how the driver on a node is set up.
type DRAConfig struct {
	Mode string
	// ConsumableShares is the --consumable-shares value ("": disabled).
	ConsumableShares string
}

// Validate names the field that is wrong.
func (c DRAConfig) Validate() error {
	if !slices.Contains(DRAModes, c.Mode) {
		return fmt.Errorf("mode: unknown DRA mode %q (known: %s)", c.Mode, strings.Join(DRAModes, ", "))
	}
	if _, err := c.shares(); err != nil {
		return err
	}
	if c.ConsumableShares != "" && c.Mode == DRADynamicMIG {
		// The driver sets allowMultipleAllocations on gpu and static-MIG
		// devices (dra-facts §2); the simulator does not model shares of
		// partitionable devices.
		return fmt.Errorf("consumableShares: applies to whole GPUs and static MIG devices, not %s", DRADynamicMIG)
	}
	return nil
}

// shares is N for a count, 0 for every other value.
func (c DRAConfig) shares() (int, error) {
	switch c.ConsumableShares {
	case "", SharesMemory, SharesUnlimited:
		return 0, nil
	}
	n, err := strconv.Atoi(c.ConsumableShares)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("consumableShares: want memory, unlimited or a count >= 1, got %q", c.ConsumableShares)
	}
	return n, nil
}

// DRAConfigFor reads a node's DRA driver from its annotations; ok is
// false when the node has none.
func DRAConfigFor(annotations map[string]string) (cfg DRAConfig, ok bool, err error) {
	mode, ok := annotations[AnnotationDRA]
	if !ok {
		return DRAConfig{}, false, nil
	}
	cfg = DRAConfig{Mode: mode, ConsumableShares: annotations[AnnotationDRAShares]}
	if err := cfg.Validate(); err != nil {
		return cfg, true, fmt.Errorf("annotations %s, %s: %w", AnnotationDRA, AnnotationDRAShares, err)
	}
	return cfg, true, nil
}

// DRASliceName is the generateName prefix of a node's index-th slice
// (dra-facts §2: `<5-hex index>-gpu.nvidia.com-<node>-`).
func DRASliceName(node string, index int) string {
	return fmt.Sprintf("%05x-%s-%s-", index, DRADriver, node)
}

// DRASlices are the ResourceSlice specs the driver publishes for a node
// whose GPUs are in MIG state gpus (nil: MIG off everywhere), in order, as
// one pool named after the node at generation. xids marks unhealthy GPUs
// (index to Xid) with the driver's health taint; the driver's health
// check is exclusive with DynamicMIG, so that mode has none (dra-facts §2).
func DRASlices(node string, inv NodeInventory, gpus []GPUState, cfg DRAConfig, generation int64, xids map[int]int) ([]resourcev1.ResourceSliceSpec, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	state := func(i int) GPUState {
		if i < len(gpus) {
			return gpus[i]
		}
		return GPUState{}
	}
	d := draNode{node: node, sku: inv.SKU, cfg: cfg}
	var specs []resourcev1.ResourceSliceSpec
	slice := func(devices []resourcev1.Device, counters []resourcev1.CounterSet) {
		specs = append(specs, resourcev1.ResourceSliceSpec{
			Driver: DRADriver, NodeName: new(node),
			Pool:    resourcev1.ResourcePool{Name: node, Generation: generation},
			Devices: devices, SharedCounters: counters,
		})
	}
	switch cfg.Mode {
	case DRADynamicMIG:
		if !inv.SKU.MIGCapable() {
			// ND #1092 (dra-facts §6.7): DynamicMIG on non-MIG GPUs published
			// invalid slices until fixed; the fixed driver publishes the
			// GPUs alone, which is what this does.
			var devs []resourcev1.Device
			for i := range inv.Count {
				devs = append(devs, d.gpu(i, nil))
			}
			slice(devs, nil)
			break
		}
		// Counters first, then one device slice per GPU (apiserver ≥ 1.35).
		var sets []resourcev1.CounterSet
		for i := range inv.Count {
			sets = append(sets, d.counterSet(i))
		}
		slice(nil, sets)
		for i := range inv.Count {
			slice(d.partitions(i, state(i)), nil)
		}
	default:
		var devs []resourcev1.Device
		for i := range inv.Count {
			g := state(i)
			if cfg.Mode == DRAWholeGPU || !g.MIGEnabled {
				devs = append(devs, d.gpu(i, xids))
				continue
			}
			// MIG on: only the MIG devices that exist; none, nothing.
			migs, err := d.staticMIG(i, g, xids)
			if err != nil {
				return nil, err
			}
			devs = append(devs, migs...)
		}
		slice(devs, nil)
	}
	for i := range specs {
		specs[i].Pool.ResourceSliceCount = int64(len(specs))
	}
	return specs, nil
}

// DRATemplates are the devices a machine of inv publishes under the
// driver's default configuration (whole GPUs, no shares: dra-facts §2),
// for an autoscaler that plans claims on machines it has yet to make:
// the slices of DRASlices without a node, their pool named pool. A pool
// whose driver is set up otherwise publishes other devices than these.
func DRATemplates(pool string, inv NodeInventory) ([]resourcev1.ResourceSliceSpec, error) {
	specs, err := DRASlices(pool, inv, nil, DRAConfig{Mode: DRAWholeGPU}, 0, nil)
	for i := range specs {
		specs[i].NodeName = nil
	}
	return specs, err
}

// draNode builds one node's devices.
type draNode struct {
	node string
	sku  SKU
	cfg  DRAConfig
}

func (d draNode) gpuUUID(i int) string { return deviceID(d.node, ResourceGPU, int64(i), 1) }

// commonAttributes are what a GPU and its MIG devices share (dra-facts §2
// "Attributes"): keys without a domain are the driver's.
func (d draNode) commonAttributes(i int) map[resourcev1.QualifiedName]resourcev1.DeviceAttribute {
	return map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
		"productName":           str(d.sku.Product),
		"brand":                 str("Nvidia"),
		"architecture":          str(architecture(d.sku.Family)),
		"cudaComputeCapability": version(fmt.Sprintf("%d.%d", d.sku.ComputeMajor, d.sku.ComputeMinor)),
		"driverVersion":         version(FakeDriverVersion),
		"cudaDriverVersion":     version(FakeCUDARuntimeVersion),
		// Simulated bus addresses, one root complex per GPU, all on NUMA
		// node 0.
		"resource.kubernetes.io/pciBusID": str(fmt.Sprintf("0000:%02x:00.0", 0x18+i*0x10)),
		"resource.kubernetes.io/pcieRoot": str(fmt.Sprintf("pci0000:%02x", 0x17+i*0x10)),
		"resource.kubernetes.io/numaNode": {IntValue: new(int64(0))},
	}
}

// gpu is a full GPU, gpu-<minor> with type gpu, its uuid the device
// plugin's for the same GPU (so a pool moved between the two keeps its
// device identities), and memory.
func (d draNode) gpu(i int, xids map[int]int) resourcev1.Device {
	attrs := d.commonAttributes(i)
	attrs["type"] = str("gpu")
	attrs["uuid"] = str(d.gpuUUID(i))
	dev := resourcev1.Device{
		Name:       fmt.Sprintf("gpu-%d", i),
		Attributes: attrs,
		Capacity:   map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: mib(d.sku.MemoryMiB)}},
		Taints:     healthTaints(i, xids),
	}
	d.share(&dev, d.sku.MemoryMiB)
	return dev
}

// share applies --consumable-shares (dra-facts §2): every capacity consumable;
// memory in whole MiB up to the device's; N adds `shares`.
func (d draNode) share(dev *resourcev1.Device, memMiB int) {
	if d.cfg.ConsumableShares == "" {
		return
	}
	dev.AllowMultipleAllocations = new(true)
	def, lo := resource.MustParse("0"), resource.MustParse("0")
	if d.cfg.ConsumableShares == SharesMemory {
		def, lo = mib(memMiB), mib(1)
	}
	dev.Capacity["memory"] = resourcev1.DeviceCapacity{Value: mib(memMiB), RequestPolicy: &resourcev1.CapacityRequestPolicy{
		Default:    &def,
		ValidRange: &resourcev1.CapacityRequestPolicyRange{Min: &lo, Max: new(mib(memMiB)), Step: new(mib(1))},
	}}
	if n, _ := d.cfg.shares(); n > 0 {
		one := resource.MustParse("1")
		dev.Capacity["shares"] = resourcev1.DeviceCapacity{Value: *resource.NewQuantity(int64(n), resource.DecimalSI),
			RequestPolicy: &resourcev1.CapacityRequestPolicy{Default: &one,
				ValidRange: &resourcev1.CapacityRequestPolicyRange{Min: &one, Step: new(one.DeepCopy())}}}
	}
}

// migDevice is one MIG device of GPU i at memory-slice placement start.
// Static devices have a uuid and memorySlice<i> capacities; dynamic ones
// have neither (dra-facts §2).
func (d draNode) migDevice(i int, p MIGProfile, start int, static bool) resourcev1.Device {
	attrs := d.commonAttributes(i)
	attrs["type"] = str("mig")
	attrs["parentUUID"] = str(d.gpuUUID(i))
	attrs["profile"] = str(p.Name)
	caps := map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
		"multiprocessors": count(p.Multiprocessors),
		"copyEngines":     count(p.Engines.Copy),
		"decoders":        count(p.Engines.Decoder),
		"encoders":        count(p.Engines.Encoder),
		"jpegEngines":     count(p.Engines.JPEG),
		"ofaEngines":      count(p.Engines.OFA),
		"memory":          {Value: mib(p.MemoryMiB)},
	}
	name := DRAMIGDeviceName(i, d.sku, p, start)
	if static {
		attrs["uuid"] = str("MIG-" + nodeUUID(d.node, "mig", name))
		for s := start; s < start+p.MemorySlices; s++ {
			caps[resourcev1.QualifiedName(fmt.Sprintf("memorySlice%d", s))] = count(1)
		}
	}
	return resourcev1.Device{Name: name, Attributes: attrs, Capacity: caps}
}

// staticMIG places GPU i's existing MIG devices on disjoint memory
// slices, each at one of its profile's starts: the first such placement
// in a search that tries the largest profiles first and the lowest starts
// first. NVML's placement is the real one; this one is the simulator's,
// the same every time.
func (d draNode) staticMIG(i int, g GPUState, xids map[int]int) ([]resourcev1.Device, error) {
	var profiles []MIGProfile
	for _, name := range sortedKeys(g.Devices) {
		p, ok := d.sku.Profile(name)
		if !ok {
			return nil, fmt.Errorf("GPU %d: %s has no MIG profile %q", i, d.sku.Key, name)
		}
		for range g.Devices[name] {
			profiles = append(profiles, p)
		}
	}
	slices.SortStableFunc(profiles, func(a, b MIGProfile) int { return b.MemorySlices - a.MemorySlices })
	starts := make([]int, len(profiles))
	used := make([]bool, d.sku.MemorySlices)
	var place func(k int) bool
	place = func(k int) bool {
		if k == len(profiles) {
			return true
		}
		p := profiles[k]
		for _, s := range placements(p) {
			if s+p.MemorySlices > len(used) || slices.Contains(used[s:s+p.MemorySlices], true) {
				continue
			}
			for j := s; j < s+p.MemorySlices; j++ {
				used[j] = true
			}
			starts[k] = s
			if place(k + 1) {
				return true
			}
			for j := s; j < s+p.MemorySlices; j++ {
				used[j] = false
			}
		}
		return false
	}
	if !place(0) {
		return nil, fmt.Errorf("GPU %d: MIG devices %v do not fit the %s's %d memory slices", i, g.Devices, d.sku.Key, d.sku.MemorySlices)
	}
	var out []resourcev1.Device
	for k, p := range profiles {
		dev := d.migDevice(i, p, starts[k], true)
		dev.Taints = healthTaints(i, xids)
		d.share(&dev, p.MemoryMiB)
		out = append(out, dev)
	}
	return out, nil
}

// placements are a profile's possible starts: MaxPerGPU of them, aligned
// on its memory slices (A100 1g.5gb 0-6, 3g.20gb 0 and 4, 1g.10gb 0, 2, 4,
// 6; the simulator's reading of the MIG geometry, not NVML's table).
func placements(p MIGProfile) []int {
	out := make([]int, p.MaxPerGPU)
	for k := range out {
		out[k] = k * p.MemorySlices
	}
	return out
}

// counterSetName is GPU i's counter set (dra-facts §2 "Dynamic").
func counterSetName(i int) string { return fmt.Sprintf("gpu-%d-counter-set", i) }

// migCounters are what a device of profile p at start consumes, in the
// counter set's names (capacity names, hyphenated).
func migCounters(p MIGProfile, start int) map[string]resourcev1.Counter {
	c := map[string]resourcev1.Counter{
		"multiprocessors": {Value: count(p.Multiprocessors).Value},
		"copy-engines":    {Value: count(p.Engines.Copy).Value},
		"decoders":        {Value: count(p.Engines.Decoder).Value},
		"encoders":        {Value: count(p.Engines.Encoder).Value},
		"jpeg-engines":    {Value: count(p.Engines.JPEG).Value},
		"ofa-engines":     {Value: count(p.Engines.OFA).Value},
		"memory":          {Value: mib(p.MemoryMiB)},
	}
	for s := start; s < start+p.MemorySlices; s++ {
		c[fmt.Sprintf("memory-slice-%d", s)] = resourcev1.Counter{Value: count(1).Value}
	}
	return c
}

// counterSet is GPU i's counters. The engine, SM and memory totals are
// sized so that no layout the memory slices allow is refused by them
// (each the largest per-slice figure of any profile times the GPU's
// slices): the catalog's MIG figures are estimates (catalog.go), and on
// hardware the slice geometry is what binds.
func (d draNode) counterSet(i int) resourcev1.CounterSet {
	total := map[string]int64{}
	for _, p := range d.sku.MIGProfiles {
		for k, v := range migCounters(p, 0) {
			if strings.HasPrefix(k, "memory-slice-") {
				continue
			}
			slicesOf := int64(p.ComputeSlices)
			gpuSlices := int64(d.sku.ComputeSlices)
			if k == "memory" {
				slicesOf, gpuSlices = int64(p.MemorySlices), int64(d.sku.MemorySlices)
			}
			// Round up: the bound must not undercut any profile.
			perSlice := (v.Value.Value() + slicesOf - 1) / slicesOf
			total[k] = max(total[k], perSlice*gpuSlices)
		}
	}
	total["memory"] = max(total["memory"], int64(d.sku.MemoryMiB)<<20)
	counters := map[string]resourcev1.Counter{}
	for k, v := range total {
		q := *resource.NewQuantity(v, resource.DecimalSI)
		if k == "memory" {
			q = *resource.NewQuantity(v, resource.BinarySI)
		}
		counters[k] = resourcev1.Counter{Value: q}
	}
	for s := range d.sku.MemorySlices {
		counters[fmt.Sprintf("memory-slice-%d", s)] = resourcev1.Counter{Value: count(1).Value}
	}
	return resourcev1.CounterSet{Name: counterSetName(i), Counters: counters}
}

// partitions is GPU i's device slice under DynamicMIG: the full GPU
// consuming every counter (left out on Ampere with MIG already on), then
// every placement of every profile.
func (d draNode) partitions(i int, g GPUState) []resourcev1.Device {
	set := d.counterSet(i)
	var out []resourcev1.Device
	if !(g.MIGEnabled && d.sku.Family == "ampere") {
		full := d.gpu(i, nil)
		full.ConsumesCounters = []resourcev1.DeviceCounterConsumption{{CounterSet: set.Name, Counters: set.Counters}}
		out = append(out, full)
	}
	for _, p := range d.sku.MIGProfiles {
		for _, start := range placements(p) {
			dev := d.migDevice(i, p, start, false)
			dev.ConsumesCounters = []resourcev1.DeviceCounterConsumption{{CounterSet: set.Name, Counters: migCounters(p, start)}}
			out = append(out, dev)
		}
	}
	return out
}

// DRAMIGDeviceName is the driver's name for a MIG device of sku (dra-facts §2
// "Device names", ND mig.go ToCanonicalName):
// gpu-<parent>-mig-<profile without dots, +me as -me>-<GI profile id>-<start>.
func DRAMIGDeviceName(gpu int, sku SKU, p MIGProfile, start int) string {
	prof := strings.ReplaceAll(strings.ReplaceAll(p.Name, ".", ""), "+", "-")
	return fmt.Sprintf("gpu-%d-mig-%s-%d-%d", gpu, prof, giProfileIDs[sku.ComputeSlices][profileShape(p)], start)
}

// giProfileIDs are NVML's GPU-instance profile ids as nvidia-smi mig -lgip
// lists them, by the GPU's compute slices and the profile's shape. dra-facts §2
// vouches only for 19 (1g.5gb); the others are as nvidia-smi shows them on
// A100/H100 and A30, UNVERIFIED (dra-facts §7).
var giProfileIDs = map[int]map[string]int{
	7: {"1g": 19, "1g+me": 20, "1g*2": 15, "2g": 14, "3g": 9, "4g": 5, "7g": 0},
	4: {"1g": 14, "1g+me": 21, "2g": 5, "2g+me": 6, "4g": 0},
}

// profileShape is a profile's compute slices, with +me, and *2 for a 1g
// with double memory (A100-40GB's 1g.10gb beside its 1g.5gb).
func profileShape(p MIGProfile) string {
	s := fmt.Sprintf("%dg", p.ComputeSlices)
	if p.ComputeSlices == 1 && p.MemorySlices == 2 {
		s += "*2"
	}
	if strings.HasSuffix(p.Name, "+me") {
		s += "+me"
	}
	return s
}

// healthTaints is the driver's taint for GPU i with an Xid
// (NVMLDeviceHealthCheck, dra-facts §2 "Driver gates": gpu.nvidia.com/xid=<n>,
// NoSchedule). The simulator takes every injected Xid as fatal.
func healthTaints(i int, xids map[int]int) []resourcev1.DeviceTaint {
	x, ok := xids[i]
	if !ok {
		return nil
	}
	return []resourcev1.DeviceTaint{{Key: DRADriver + "/xid", Value: strconv.Itoa(x), Effect: resourcev1.DeviceTaintEffectNoSchedule}}
}

// DRADeviceClass is one of the classes a cluster offers for the driver.
type DRADeviceClass struct {
	Name, Expression string
	// ExtendedResourceName maps the device plugin's name onto the class
	// ("": none).
	ExtendedResourceName string
}

// DRADeviceClasses are the driver chart's classes (gpu.nvidia.com with the
// nvidia.com/gpu mapping, mig.nvidia.com; dra-facts §2 "DeviceClasses")
// and, for each MIG profile of skus, the per-profile class of the driver's
// extended-resources demo, mapped to the device plugin's resource name.
func DRADeviceClasses(skus ...SKU) []DRADeviceClass {
	typed := func(t string) string {
		return fmt.Sprintf("device.driver == '%s' && device.attributes['%s'].type == '%s'", DRADriver, DRADriver, t)
	}
	out := []DRADeviceClass{
		{Name: "gpu.nvidia.com", Expression: typed("gpu"), ExtendedResourceName: ResourceGPU},
		{Name: "mig.nvidia.com", Expression: typed("mig")},
	}
	seen := map[string]bool{}
	for _, s := range skus {
		for _, p := range s.MIGProfiles {
			if seen[p.Name] {
				continue
			}
			seen[p.Name] = true
			out = append(out, DRADeviceClass{
				Name:                 "mig-" + strings.NewReplacer(".", "-", "+", "-").Replace(p.Name) + ".gpu.nvidia.com",
				Expression:           typed("mig") + fmt.Sprintf(" && device.attributes['%s'].profile == '%s'", DRADriver, p.Name),
				ExtendedResourceName: ResourceMIGPrefix + migDeviceName(p.Name),
			})
		}
	}
	return out
}

// CDIDeviceID is the CDI device the driver hands the runtime for a device
// of a claim (dra-facts §4: k8s.gpu.nvidia.com/claim=<claimUID>-<device>).
func CDIDeviceID(claimUID, device string) string {
	return "k8s.gpu.nvidia.com/claim=" + claimUID + "-" + device
}

// CDIDevice splits a CDIDeviceID into the claim's UID and the device's
// name (ok false: not one of the driver's claim devices).
func CDIDevice(id string) (claimUID, device string, ok bool) {
	rest, ok := strings.CutPrefix(id, "k8s.gpu.nvidia.com/claim=")
	// A claim UID is a 36-character UUID; device names hold dashes too.
	if !ok || len(rest) < 38 || rest[36] != '-' {
		return "", "", false
	}
	return rest[:36], rest[37:], true
}

// AnnotationCDIDevices on a pod lists the CDI devices the simulated DRA
// kubelet plugin prepared for its claims, comma-separated: what the
// runtime would inject. Like AnnotationVisibleDevices, a record for
// checks; a real kubelet writes nothing there.
const AnnotationCDIDevices = "fakegpu.gpupool.dev/cdi-devices"

// DRAPrepareFailed is the reason of the event (and of the simulated
// containers' waiting state) when the kubelet cannot prepare a pod's claims
// (dra-facts §4 "Kubelet and the DRA plugin": FailedPrepareDynamicResources,
// "Failed to prepare dynamic resources: ...").
const DRAPrepareFailed = "FailedPrepareDynamicResources"

// DRAPrepareFailedMessage is that event's message for err.
func DRAPrepareFailedMessage(err error) string {
	return "Failed to prepare dynamic resources: " + err.Error()
}

// DRANotReservedError is the kubelet's refusal of a claim not reserved
// for the pod (dra-facts §4).
func DRANotReservedError(pod, podUID, claim, claimUID string) error {
	return fmt.Errorf("pod %s (%s) is not allowed to use ResourceClaim %s (%s)", pod, podUID, claim, claimUID)
}

// DRADriverNotRegisteredError is the kubelet's refusal of a claim whose
// driver runs no kubelet plugin on the node (kubelet-facts §5.2).
func DRADriverNotRegisteredError(driver string) error {
	return fmt.Errorf("DRA driver %s is not registered", driver)
}

// DRAAllocated is one device of a claim's allocation, as the kubelet
// plugin reads it from status.allocation.devices.results.
type DRAAllocated struct {
	Request, Driver, Pool, Device, ShareID string
}

// DRAAllocatedOf is the allocation of claim as the kubelet plugin reads
// it (none while the claim is not allocated).
func DRAAllocatedOf(claim *resourcev1.ResourceClaim) []DRAAllocated {
	if claim.Status.Allocation == nil {
		return nil
	}
	var out []DRAAllocated
	for _, r := range claim.Status.Allocation.Devices.Results {
		a := DRAAllocated{Request: r.Request, Driver: r.Driver, Pool: r.Pool, Device: r.Device}
		if r.ShareID != nil {
			a.ShareID = string(*r.ShareID)
		}
		out = append(out, a)
	}
	return out
}

// DRAPrepared is NodePrepareResources' answer for one device (dra-facts §4,
// KL pkg/apis/dra/v1/api.proto Device).
type DRAPrepared struct {
	Requests     []string
	Pool, Device string
	CDIDeviceIDs []string
	ShareID      string
}

// DRAPrepare is what the driver's kubelet plugin answers for a claim on
// node, whose published devices are published: one entry per allocated
// device of this driver (other drivers' results are theirs), merged by
// device with their request names. A device the node no longer publishes
// (its MIG layout changed, the GPU left) fails the whole claim; the
// message is the simulator's, the driver's own is not in the facts doc.
func DRAPrepare(node string, published map[string]bool, claimUID string, allocated []DRAAllocated) ([]DRAPrepared, error) {
	var out []DRAPrepared
	at := map[string]int{}
	for _, a := range allocated {
		if a.Driver != DRADriver {
			continue
		}
		if a.Pool != node || !published[a.Device] {
			return nil, fmt.Errorf("prepare devices for claim %s: device %q of pool %q is not published by node %s", claimUID, a.Device, a.Pool, node)
		}
		req, _, _ := strings.Cut(a.Request, "/") // req/sub: the parent request
		key := a.Device + "\x00" + a.ShareID
		if i, ok := at[key]; ok {
			if !slices.Contains(out[i].Requests, req) {
				out[i].Requests = append(out[i].Requests, req)
			}
			continue
		}
		at[key] = len(out)
		out = append(out, DRAPrepared{Requests: []string{req}, Pool: a.Pool, Device: a.Device,
			CDIDeviceIDs: []string{CDIDeviceID(claimUID, a.Device)}, ShareID: a.ShareID})
	}
	return out, nil
}

// DRADevicesFor counts the devices of devs that serve the device
// plugin's resource name: whole GPUs for nvidia.com/gpu, MIG devices of
// the profile for nvidia.com/mig-<profile> (the mapping of the driver's
// gpu.nvidia.com class and its per-profile classes, DRADeviceClasses).
func DRADevicesFor(devs []resourcev1.Device, resourceName string) int {
	n := 0
	for _, d := range devs {
		typ, prof := d.Attributes["type"].StringValue, d.Attributes["profile"].StringValue
		switch {
		case typ == nil:
		case resourceName == ResourceGPU && *typ == "gpu":
			n++
		case *typ == "mig" && prof != nil && resourceName == ResourceMIGPrefix+migDeviceName(*prof):
			n++
		}
	}
	return n
}

// PublishedDevices are the names of the devices of slices.
func PublishedDevices(slices []resourcev1.ResourceSliceSpec) map[string]bool {
	out := map[string]bool{}
	for _, s := range slices {
		for _, d := range s.Devices {
			out[d.Name] = true
		}
	}
	return out
}

// architecture is the driver's architecture attribute for a catalog
// family (NVML's names as ND prints them; UNVERIFIED beyond Hopper and
// Ampere, dra-facts §2 "Example values").
func architecture(family string) string {
	switch family {
	case "ada-lovelace":
		return "Ada Lovelace"
	case "":
		return ""
	}
	return strings.ToUpper(family[:1]) + family[1:]
}

func str(s string) resourcev1.DeviceAttribute { return resourcev1.DeviceAttribute{StringValue: &s} }

// version writes a driver-style version as semver, dropping leading zeros
// and filling to three parts (dra-facts §2: 9.0→9.0.0, 580.95.05→580.95.5).
func version(v string) resourcev1.DeviceAttribute {
	parts := strings.Split(v, ".")
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	for i, p := range parts {
		if n, err := strconv.Atoi(p); err == nil {
			parts[i] = strconv.Itoa(n)
		}
	}
	s := strings.Join(parts[:3], ".")
	return resourcev1.DeviceAttribute{VersionValue: &s}
}

func mib(n int) resource.Quantity { return *resource.NewQuantity(int64(n)<<20, resource.BinarySI) }

func count(n int) resourcev1.DeviceCapacity {
	return resourcev1.DeviceCapacity{Value: *resource.NewQuantity(int64(n), resource.DecimalSI)}
}
