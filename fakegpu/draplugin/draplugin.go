// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package draplugin is NVIDIA's DRA kubelet plugin for the fake GPUs of the
// fakegpu model, for nodes with a real kubelet: what it publishes is what
// the simulated driver publishes for a KWOK node with the same labels and
// annotations (fakegpu.Stack.Desired), and it answers the kubelet's
// NodePrepareResources and NodeUnprepareResources as the driver does
// (dra-facts §4 "Kubelet and the DRA plugin"): one entry per allocated
// device of the driver, CDI ids k8s.gpu.nvidia.com/claim=<claimUID>-<device>,
// a claim whose device the node no longer publishes refused. The gRPC
// side, registration and ResourceSlice publishing are upstream's
// k8s.io/dynamic-resource-allocation/kubeletplugin; this package is the
// DRAPlugin it wraps.
package draplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/gpupool/gpupool/fakegpu"
)

// SlicesFor is what the driver on node publishes under stack (nil: no GPU
// Operator config) given the node's labels and annotations: the same specs
// the fakegpu controller publishes for a KWOK node. down says why it
// publishes nothing ("" when it serves, even with no devices).
func SlicesFor(node string, stack *fakegpu.Stack, labels, annotations map[string]string) (specs []resourcev1.ResourceSliceSpec, down string) {
	if _, ok, _ := fakegpu.DRAConfigFor(annotations); !ok {
		return nil, "the node's GPUs are not served by DRA (annotation " + fakegpu.AnnotationDRA + ")"
	}
	inv, isGPU, err := fakegpu.Inventory(annotations)
	switch {
	case !isGPU:
		return nil, "the node has no fakegpu GPU inventory (annotation " + fakegpu.AnnotationSKU + ")"
	case err != nil:
		return nil, "the node's GPU inventory is invalid: " + err.Error()
	}
	if stack == nil {
		stack = &fakegpu.Stack{}
	}
	// The MIG manager is the fakegpu controller's part, recorded in the
	// node's annotations; the driver serves that state.
	d := stack.Desired(inv, fakegpu.NodeObservation{Name: node, Labels: labels, Annotations: annotations, Now: time.Now()}, 100*365*24*time.Hour)
	if d.DRAErr != "" {
		return nil, d.DRAErr
	}
	return d.DRA, ""
}

// Resources turns specs into what the upstream helper publishes: one pool
// named after the node, the slices in order (the helper numbers them and
// keeps the pool's generation).
func Resources(node string, specs []resourcev1.ResourceSliceSpec) resourceslice.DriverResources {
	pool := resourceslice.Pool{}
	for _, s := range specs {
		pool.Slices = append(pool.Slices, resourceslice.Slice{Devices: s.Devices, SharedCounters: s.SharedCounters})
	}
	if len(pool.Slices) == 0 {
		return resourceslice.DriverResources{}
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{node: pool}}
}

// Options configure a Driver.
type Options struct {
	// Node is the node the driver serves; its pool has its name.
	Node string
	// Client patches the pods a claim is prepared for (AnnotationCDIDevices).
	Client kubernetes.Interface
	// StateFile keeps the prepared claims across restarts (the kubelet may
	// unprepare what an earlier process prepared).
	StateFile string
	// CDIDir receives one CDI spec per prepared claim.
	CDIDir string
	Log    func(format string, args ...any)
	// Fatal is told of an error the plugin cannot go on after (nil: only
	// logged).
	Fatal func(error)
}

// Driver is the DRAPlugin: it holds the devices the node publishes now and
// the claims it prepared.
type Driver struct {
	opt Options

	mu        sync.Mutex
	published map[string]string // device name → its uuid attribute
	prepared  map[types.UID]Prepared
}

// Prepared is one prepared claim, as the state file keeps it.
type Prepared struct {
	Namespace, Name string
	Devices         []fakegpu.DRAPrepared
	// Pods the claim was reserved for when prepared.
	Pods []types.NamespacedName `json:",omitempty"`
}

var _ kubeletplugin.DRAPlugin = (*Driver)(nil)

// New reads the state an earlier process left and returns the driver.
func New(opt Options) (*Driver, error) {
	d := &Driver{opt: opt, published: map[string]string{}, prepared: map[types.UID]Prepared{}}
	data, err := os.ReadFile(opt.StateFile)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		if err := json.Unmarshal(data, &d.prepared); err != nil {
			return nil, fmt.Errorf("%s: %w", opt.StateFile, err)
		}
	}
	return d, nil
}

// SetPublished records the devices the node publishes now: a claim
// allocated a device outside them is refused.
func (d *Driver) SetPublished(specs []resourcev1.ResourceSliceSpec) {
	devs := map[string]string{}
	for _, s := range specs {
		for _, dev := range s.Devices {
			uuid := ""
			if a, ok := dev.Attributes["uuid"]; ok && a.StringValue != nil {
				uuid = *a.StringValue
			}
			devs[dev.Name] = uuid
		}
	}
	d.mu.Lock()
	d.published = devs
	d.mu.Unlock()
}

// PrepareResourceClaims answers NodePrepareResources: each claim's devices
// of this driver, or why not.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourcev1.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	d.mu.Lock()
	out := map[types.UID]kubeletplugin.PrepareResult{}
	pods := map[types.NamespacedName]bool{}
	for _, c := range claims {
		p, err := d.prepare(c)
		if err != nil {
			out[c.UID] = kubeletplugin.PrepareResult{Err: err}
			continue
		}
		for _, pod := range p.Pods {
			pods[pod] = true
		}
		res := kubeletplugin.PrepareResult{Devices: []kubeletplugin.Device{}}
		for _, dev := range p.Devices {
			kd := kubeletplugin.Device{Requests: dev.Requests, PoolName: dev.Pool, DeviceName: dev.Device, CDIDeviceIDs: dev.CDIDeviceIDs}
			if dev.ShareID != "" {
				kd.ShareID = new(types.UID(dev.ShareID))
			}
			res.Devices = append(res.Devices, kd)
		}
		out[c.UID] = res
	}
	saveErr := d.save()
	records := d.podRecords(pods)
	d.mu.Unlock()
	if saveErr != nil {
		return nil, saveErr
	}
	d.annotate(ctx, records)
	return out, nil
}

// prepare prepares one claim (idempotent: a claim prepared before gets the
// same answer). Called with d.mu held.
func (d *Driver) prepare(c *resourcev1.ResourceClaim) (Prepared, error) {
	if p, ok := d.prepared[c.UID]; ok {
		// The spec may be gone (/var/run is a tmpfs, the state file is
		// not); writing it again is harmless.
		return p, d.writeCDISpec(c.UID, p.Devices)
	}
	if c.Status.Allocation == nil {
		// The helper checks this too; the driver does not rely on it.
		return Prepared{}, fmt.Errorf("claim %s/%s is not allocated", c.Namespace, c.Name)
	}
	published := map[string]bool{}
	for name := range d.published {
		published[name] = true
	}
	devices, err := fakegpu.DRAPrepare(d.opt.Node, published, string(c.UID), fakegpu.DRAAllocatedOf(c))
	if err != nil {
		return Prepared{}, err
	}
	// The last line of defence against one device for two workloads: the
	// same device, unshared, prepared for another claim is refused. (Only
	// the same device: counters shared between a GPU and its partitions
	// are the scheduler's to keep.)
	for _, dev := range devices {
		for uid, other := range d.prepared {
			for _, od := range other.Devices {
				if od.Device == dev.Device && (od.ShareID == "" || dev.ShareID == "") {
					return Prepared{}, fmt.Errorf("prepare devices for claim %s: device %q is already prepared for claim %s/%s (%s)", c.UID, dev.Device, other.Namespace, other.Name, uid)
				}
			}
		}
	}
	if err := d.writeCDISpec(c.UID, devices); err != nil {
		return Prepared{}, err
	}
	p := Prepared{Namespace: c.Namespace, Name: c.Name, Devices: devices}
	for _, r := range c.Status.ReservedFor {
		if r.APIGroup == "" && r.Resource == "pods" {
			p.Pods = append(p.Pods, types.NamespacedName{Namespace: c.Namespace, Name: r.Name})
		}
	}
	d.prepared[c.UID] = p
	d.opt.Log("fake-dra-plugin: prepared claim %s/%s (%s): %s", c.Namespace, c.Name, c.UID, describe(devices))
	return p, nil
}

// UnprepareResourceClaims answers NodeUnprepareResources; a claim not
// prepared (any more) is fine.
func (d *Driver) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[types.UID]error{}
	for _, c := range claims {
		out[c.UID] = nil
		// The spec goes even when the state forgot the claim: its name
		// is the claim's own.
		if err := os.Remove(d.cdiSpecPath(c.UID)); err != nil && !errors.Is(err, os.ErrNotExist) {
			out[c.UID] = err
			continue
		}
		if _, ok := d.prepared[c.UID]; !ok {
			continue
		}
		delete(d.prepared, c.UID)
		d.opt.Log("fake-dra-plugin: unprepared claim %s", c)
	}
	return out, d.save()
}

// HandleError logs what the helper met in the background. Publishing
// errors are recoverable (the helper retries); any other (a gRPC server
// of the helper stopped) goes to Options.Fatal: the plugin cannot serve
// the kubelet any more and must not look as if it did.
func (d *Driver) HandleError(_ context.Context, err error, msg string) {
	d.opt.Log("fake-dra-plugin: %s: %v", msg, err)
	if !errors.Is(err, kubeletplugin.ErrRecoverable) && d.opt.Fatal != nil {
		d.opt.Fatal(fmt.Errorf("%s: %w", msg, err))
	}
}

// WatchHealthStatus: health reaches the scheduler as device taints in the
// slices (gpu.nvidia.com/xid), not through the kubelet.
func (d *Driver) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}

// Prepared returns the prepared claims, by UID.
func (d *Driver) Prepared() map[types.UID]Prepared {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.prepared)
}

func (d *Driver) save() error {
	data, err := json.Marshal(d.prepared)
	if err != nil {
		return err
	}
	tmp := d.opt.StateFile + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, d.opt.StateFile)
}

// podRecords are the CDI devices of every prepared claim of each pod, the
// simulator's record of what the runtime injects. Called with d.mu held.
func (d *Driver) podRecords(pods map[types.NamespacedName]bool) map[types.NamespacedName]string {
	out := map[types.NamespacedName]string{}
	for pod := range pods {
		var ids []string
		for _, p := range d.prepared {
			if slices.Contains(p.Pods, pod) {
				for _, dev := range p.Devices {
					ids = append(ids, dev.CDIDeviceIDs...)
				}
			}
		}
		slices.Sort(ids)
		out[pod] = strings.Join(ids, ",")
	}
	return out
}

// annotate records on each pod the CDI devices prepared for it, as the
// simulated kubelet does (fakegpu.AnnotationCDIDevices): with a container
// runtime that ignores CDI, the only trace of what the kubelet was handed.
// Only the pods a claim is reserved for when it is prepared are recorded
// (the kubelet does not prepare a claim again for a second pod sharing
// it). A failure is logged: the preparation itself stands, and a check
// reading the record finds it missing.
func (d *Driver) annotate(ctx context.Context, records map[types.NamespacedName]string) {
	if d.opt.Client == nil {
		return
	}
	for pod, ids := range records {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{fakegpu.AnnotationCDIDevices: ids}}})
		_, err := d.opt.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			d.opt.Log("fake-dra-plugin: recording the CDI devices on pod %s: %v", pod, err)
		}
	}
}

// cdiSpecPath is the claim's CDI spec file; its name carries the claim's
// UID, so a runtime's cache never serves a stale one.
func (d *Driver) cdiSpecPath(uid types.UID) string {
	return filepath.Join(d.opt.CDIDir, "k8s.gpu.nvidia.com-claim_"+string(uid)+".json")
}

var notEnvChar = regexp.MustCompile(`[^A-Z0-9_]`)

// writeCDISpec writes the CDI devices of a claim. The edits are the
// simulator's (the real driver's inject device nodes and hooks): one
// variable per device naming its uuid, for a probe to print.
func (d *Driver) writeCDISpec(uid types.UID, devices []fakegpu.DRAPrepared) error {
	// 0.6.0: env edits need no newer version, and older runtimes refuse
	// versions they do not know.
	spec := cdispec.Spec{Version: "0.6.0", Kind: "k8s.gpu.nvidia.com/claim"}
	for _, dev := range devices {
		env := fakegpu.EnvDRADevicePrefix + notEnvChar.ReplaceAllString(strings.ToUpper(dev.Device), "_") + "=" + d.published[dev.Device]
		spec.Devices = append(spec.Devices, cdispec.Device{Name: string(uid) + "-" + dev.Device, ContainerEdits: cdispec.ContainerEdits{Env: []string{env}}})
	}
	data, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(d.opt.CDIDir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(d.cdiSpecPath(uid), data, 0o644)
}

func describe(devs []fakegpu.DRAPrepared) string {
	var parts []string
	for _, d := range devs {
		parts = append(parts, d.Device+" ("+strings.Join(d.CDIDeviceIDs, ",")+")")
	}
	if len(parts) == 0 {
		return "no device of this driver"
	}
	return strings.Join(parts, ", ")
}
