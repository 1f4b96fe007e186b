// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package fleet reads Fleet files (gpupool.dev/v1alpha1, kind Fleet): the
// node pools a run simulates, as data. It validates them before anything
// is created and turns them into KWOK Node objects.
package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/gpupool/gpupool/e2e/apis"
	"github.com/gpupool/gpupool/e2e/input"
	"github.com/gpupool/gpupool/e2e/mergepatch"
	"github.com/gpupool/gpupool/fakegpu"
)

const (
	APIVersion = apis.APIVersion
	Kind       = apis.KindFleet
)

// Sharing modes a pool can be designed for.
const (
	ModeExclusive   = "exclusive"
	ModeMIG         = "mig"
	ModeTimeSlicing = "time-slicing"
	ModeMPS         = "mps"
)

var modes = []string{ModeExclusive, ModeMIG, ModeTimeSlicing, ModeMPS}

// Fleet is a set of node pools.
type Fleet struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            Spec              `json:"spec"`

	// File is where the fleet was read from (not part of the format).
	File string `json:"-"`
}

// Spec lists the pools, and the images tenants run whose ENV matters.
type Spec struct {
	Pools []Pool `json:"pools"`
	// AutoscaledPools are node groups an autoscaler makes: none exist when
	// the run starts, and the candidate's NodePools decide when they come
	// and what they carry. Kept apart from Pools, whose nodes the run
	// creates itself.
	AutoscaledPools []AutoscaledPool `json:"autoscaledPools,omitempty"`
	// Images declares the ENV of images the cluster's tenants run, as
	// their registry would tell: an image built FROM a CUDA image under a
	// team's own name sets NVIDIA_VISIBLE_DEVICES=all, and neither
	// admission nor the image's name shows it (access §2). The
	// simulated runtime reads it on every GPU node, and the access checks
	// try each image that sets NVIDIA_VISIBLE_DEVICES. CUDA images
	// (nvidia/cuda, nvcr.io/nvidia/cuda) need no entry.
	Images []Image `json:"images,omitempty"`
}

// Image is one declared image: a reference without a tag or digest stands
// for every tag and digest of its repository.
type Image struct {
	Image string          `json:"image"`
	Env   []corev1.EnvVar `json:"env"`
}

// Bounds of a pool, checked before any cluster: beyond them a fleet is a
// typo, and the simulator would spend memory naming devices that no node
// has (a node of 2,000,000,000 GPUs ran the run out of memory). The
// machine's own bound on nodes is the plan's (plan.checkFitsMachine).
const (
	// MaxGPUsPerNode: an HGX board holds 8 GPUs; the largest single
	// servers 16.
	MaxGPUsPerNode = 16
	// MaxReplicas of a time-sliced or MPS GPU: each is a device ID.
	MaxReplicas = 128
	// MaxPoolNodes keeps counts within what any machine plans for.
	MaxPoolNodes = 100000
	// MaxPodsPerNode: the kubelet's maxPods default is 110.
	MaxPodsPerNode = 1000
)

// Bounds of spec.images: what a node annotation holds comfortably.
const (
	MaxImages      = 64
	MaxImageEnv    = 32
	maxImageEnvLen = 1024
)

var (
	imageRef = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$`)
	envName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// ImageEnvs is spec.images as the simulated runtime reads them (nil when
// none are declared).
func (f *Fleet) ImageEnvs() fakegpu.ImageEnvs {
	if len(f.Spec.Images) == 0 {
		return nil
	}
	out := fakegpu.ImageEnvs{}
	for _, im := range f.Spec.Images {
		env := make([]fakegpu.EnvVar, 0, len(im.Env))
		for _, e := range im.Env {
			env = append(env, fakegpu.EnvVar{Name: e.Name, Value: e.Value})
		}
		out[fakegpu.NormalizeImage(im.Image)] = env
	}
	return out
}

// SetsVisibleDevices reports whether the image's ENV names GPUs for the
// NVIDIA runtime, and with what value.
func (im Image) SetsVisibleDevices() (string, bool) {
	for i := len(im.Env) - 1; i >= 0; i-- {
		if im.Env[i].Name == fakegpu.EnvVisibleDevices {
			return im.Env[i].Value, true
		}
	}
	return "", false
}

func validateImages(images []Image) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(images) > MaxImages {
		add("spec.images: %d images, at most %d", len(images), MaxImages)
		return errs
	}
	seen := map[string]bool{}
	for i, im := range images {
		path := fmt.Sprintf("spec.images[%d]", i)
		if !imageRef.MatchString(im.Image) {
			add("%s.image: %q is not an image reference (registry/repository[:tag][@sha256:digest], lower case)", path, im.Image)
		}
		if n := fakegpu.NormalizeImage(im.Image); seen[n] {
			add("%s.image: %q is declared twice", path, im.Image)
		} else {
			seen[n] = true
		}
		if len(im.Env) > MaxImageEnv {
			add("%s.env: %d entries, at most %d", path, len(im.Env), MaxImageEnv)
			continue
		}
		for j, e := range im.Env {
			switch {
			case !envName.MatchString(e.Name):
				add("%s.env[%d].name: %q is not an environment variable name", path, j, e.Name)
			case e.ValueFrom != nil:
				add("%s.env[%d] (%s): an image's ENV has a value, not valueFrom", path, j, e.Name)
			case len(e.Value) > maxImageEnvLen:
				add("%s.env[%d] (%s).value: %d bytes, at most %d", path, j, e.Name, len(e.Value), maxImageEnvLen)
			}
		}
	}
	return errs
}

// Pool is a group of identical nodes.
type Pool struct {
	Name string `json:"name"`
	// SKU is a key of the fakegpu catalog; empty for CPU-only pools.
	SKU         string            `json:"sku,omitempty"`
	Nodes       int               `json:"nodes"`
	GPUsPerNode int               `json:"gpusPerNode,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Taints      []corev1.Taint    `json:"taints,omitempty"`
	Sharing     *Sharing          `json:"sharing,omitempty"`
	// DRA: the pool's GPUs are served by NVIDIA's DRA driver instead of
	// the device plugin (nil: the device plugin).
	DRA *DRA `json:"dra,omitempty"`
	// TrustDomains splits the pool's nodes between tenants that must not
	// share hardware; their node counts add up to Nodes.
	TrustDomains []TrustDomain `json:"trustDomains,omitempty"`
	// CPU and Memory are each node's allocatable (defaults 64 and 512Gi).
	CPU    string `json:"cpu,omitempty"`
	Memory string `json:"memory,omitempty"`
	// MaxPods is each node's pod capacity (default 110).
	MaxPods int `json:"maxPods,omitempty"`
}

// DRA is how NVIDIA's DRA driver serves a pool's GPUs. Its nodes also get
// nvidia.com/gpu.deploy.device-plugin=false, as a team moving a pool to
// DRA sets it, unless the pool's labels say otherwise (a node served both
// ways is a pitfall the contract catches).
type DRA struct {
	// Mode: gpu (whole GPUs), static-mig (the MIG devices the pool's
	// sharing.mig layout makes) or dynamic-mig (partitionable devices).
	Mode string `json:"mode"`
	// ConsumableShares: the driver's --consumable-shares (memory,
	// unlimited or a count; empty: off).
	ConsumableShares string `json:"consumableShares,omitempty"`
	// DeviceClasses are the classes the platform team wrote for this
	// pool's SKU, which its tenants' claims name: each must select the
	// pool's devices and none of a pool of another SKU.
	DeviceClasses []string `json:"deviceClasses,omitempty"`
}

func (d *DRA) validate(sku fakegpu.SKU) []error {
	if d == nil {
		return nil
	}
	if err := (fakegpu.DRAConfig{Mode: d.Mode, ConsumableShares: d.ConsumableShares}).Validate(); err != nil {
		return []error{fmt.Errorf("dra.%w", err)}
	}
	if d.Mode != fakegpu.DRAWholeGPU && !sku.MIGCapable() {
		return []error{fmt.Errorf("dra.mode: %s needs a MIG-capable GPU; %s is not", d.Mode, sku.Key)}
	}
	var errs []error
	for i, c := range d.DeviceClasses {
		if msgs := validation.IsDNS1123Subdomain(c); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("dra.deviceClasses[%d]: %q is not a DeviceClass name: %s", i, c, strings.Join(msgs, "; ")))
		}
	}
	return errs
}

// Sharing is how the pool's GPUs are meant to be handed out. The fleet says
// what the pool is designed for; what nodes actually advertise comes from
// the candidate's Operator configs, and the suites compare the two.
type Sharing struct {
	Mode string `json:"mode"`
	// MIG: the mig-parted layout (node label nvidia.com/mig.config) and the
	// strategy the pool is designed for.
	MIG *MIGSharing `json:"mig,omitempty"`
	// Time-slicing or MPS: the device-plugin config key (node label
	// nvidia.com/device-plugin.config) and the sharing it is meant to give.
	Replicated *ReplicatedSharing `json:"timeSlicing,omitempty"`
	MPS        *ReplicatedSharing `json:"mps,omitempty"`
}

// MIGSharing is the MIG design of a pool.
type MIGSharing struct {
	Config   string `json:"config"`
	Strategy string `json:"strategy"`
}

// ReplicatedSharing is the time-slicing or MPS design of a pool.
type ReplicatedSharing struct {
	Config          string `json:"config"`
	Replicas        int    `json:"replicas"`
	RenameByDefault bool   `json:"renameByDefault,omitempty"`
}

// TrustDomain is a share of a pool's nodes reserved for one tenant.
type TrustDomain struct {
	Name   string            `json:"name"`
	Nodes  int               `json:"nodes"`
	Labels map[string]string `json:"labels,omitempty"`
	Taints []corev1.Taint    `json:"taints,omitempty"`
}

// Load reads and validates a fleet file.
func Load(path string) (*Fleet, error) {
	data, err := input.ReadFile(path, input.MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("fleet %s: %w", path, err)
	}
	f.File = path
	return f, nil
}

// WriteFile writes the fleet as a fleet file Load reads back to the same
// Fleet (patches already applied stay applied).
func (f *Fleet) WriteFile(path string) error {
	b, err := yaml.Marshal(f)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Parse decodes and validates a fleet document. Unknown fields are errors.
func Parse(data []byte) (*Fleet, error) {
	var f Fleet
	if err := apis.Decode(data, Kind, &f); err != nil {
		return nil, err
	}
	return &f, f.Validate()
}

// Validate checks the fleet is complete and consistent; every error names
// the field.
func (f *Fleet) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	errs = append(errs, apis.CheckMeta(f.TypeMeta, f.Metadata, Kind)...)
	if len(f.Spec.Pools) == 0 {
		add("spec.pools: at least one pool is required")
	}
	seen := map[string]bool{}
	pool := func(field string, i int, name string, perrs []error) {
		path := fmt.Sprintf("%s[%d]", field, i)
		if name != "" {
			path = fmt.Sprintf("%s[%d] (%s)", field, i, name)
		}
		for _, e := range perrs {
			add("%s.%v", path, e)
		}
		if seen[name] {
			add("%s.name: duplicate pool name %q", path, name)
		}
		seen[name] = true
	}
	for i, p := range f.Spec.Pools {
		pool("spec.pools", i, p.Name, p.validate())
	}
	for i, p := range f.Spec.AutoscaledPools {
		pool("spec.autoscaledPools", i, p.Name, p.validate())
	}
	errs = append(errs, validateAutoscaledNodePools(f.Spec.AutoscaledPools)...)
	errs = append(errs, validateImages(f.Spec.Images)...)
	return errors.Join(errs...)
}

func (p Pool) validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if msgs := validation.IsDNS1123Label(p.Name); len(msgs) > 0 {
		add("name: %q is not a DNS label: %s", p.Name, strings.Join(msgs, "; "))
	}
	if p.Nodes < 0 || p.Nodes > MaxPoolNodes {
		add("nodes: must be 0 to %d, got %d", MaxPoolNodes, p.Nodes)
	}
	if p.MaxPods < 0 || p.MaxPods > MaxPodsPerNode {
		add("maxPods: must be 0 (110) to %d, got %d", MaxPodsPerNode, p.MaxPods)
	}
	if p.SKU == "" {
		if p.GPUsPerNode != 0 || p.Sharing != nil || p.DRA != nil {
			add("sku: required when gpusPerNode, sharing or dra is set (known: %s)", strings.Join(fakegpu.SKUKeys(), ", "))
		}
	} else {
		sku, err := fakegpu.LookupSKU(p.SKU)
		if err != nil {
			add("sku: %v", err)
		}
		if p.GPUsPerNode < 1 || p.GPUsPerNode > MaxGPUsPerNode {
			add("gpusPerNode: must be 1 to %d for a GPU pool, got %d", MaxGPUsPerNode, p.GPUsPerNode)
		}
		if err == nil {
			errs = append(errs, p.Sharing.validate(sku)...)
			errs = append(errs, p.DRA.validate(sku)...)
		}
	}
	for k, v := range p.Labels {
		errs = append(errs, labelErrs("labels", k, v)...)
	}
	errs = append(errs, taintErrs("taints", p.Taints)...)
	if len(p.TrustDomains) > 0 {
		total := 0
		for i, td := range p.TrustDomains {
			path := fmt.Sprintf("trustDomains[%d]", i)
			if td.Name == "" {
				add("%s.name: required", path)
			}
			if td.Nodes < 1 {
				add("%s.nodes: must be >= 1, got %d", path, td.Nodes)
			}
			total += td.Nodes
			for k, v := range td.Labels {
				errs = append(errs, labelErrs(path+".labels", k, v)...)
			}
			errs = append(errs, taintErrs(path+".taints", td.Taints)...)
		}
		if total != p.Nodes {
			add("trustDomains: node counts add up to %d, but the pool has %d nodes", total, p.Nodes)
		}
	}
	return errs
}

func (s *Sharing) validate(sku fakegpu.SKU) []error {
	if s == nil {
		return nil
	}
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch s.Mode {
	case ModeExclusive:
	case ModeMIG:
		switch {
		case !sku.MIGCapable():
			add("sharing.mode: %s is not MIG-capable", sku.Key)
		case s.MIG == nil || s.MIG.Config == "":
			add("sharing.mig.config: required for mode mig (a mig-parted layout name, e.g. all-1g.5gb)")
		case s.MIG.Strategy != fakegpu.MIGStrategySingle && s.MIG.Strategy != fakegpu.MIGStrategyMixed:
			add("sharing.mig.strategy: want single or mixed, got %q", s.MIG.Strategy)
		}
	case ModeTimeSlicing, ModeMPS:
		r := s.Replicated
		field := "timeSlicing"
		if s.Mode == ModeMPS {
			r, field = s.MPS, "mps"
		}
		switch {
		case r == nil || r.Config == "":
			add("sharing.%s.config: required for mode %s (a key of the candidate's device-plugin ConfigMap)", field, s.Mode)
		case r.Replicas < 2:
			add("sharing.%s.replicas: must be >= 2, got %d", field, r.Replicas)
		case r.Replicas > MaxReplicas:
			add("sharing.%s.replicas: at most %d, got %d (each replica is a device the simulator names)", field, MaxReplicas, r.Replicas)
		}
	default:
		add("sharing.mode: unknown mode %q (valid: %s)", s.Mode, strings.Join(modes, ", "))
	}
	return errs
}

func labelErrs(field, k, v string) []error {
	var errs []error
	if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("%s: key %q: %s", field, k, strings.Join(msgs, "; ")))
	}
	if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("%s[%s]: value %q: %s", field, k, v, strings.Join(msgs, "; ")))
	}
	return errs
}

func taintErrs(field string, taints []corev1.Taint) []error {
	var errs []error
	for i, t := range taints {
		switch t.Effect {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, fmt.Errorf("%s[%d].effect: want NoSchedule, PreferNoSchedule or NoExecute, got %q", field, i, t.Effect))
		}
		if msgs := validation.IsQualifiedName(t.Key); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s[%d].key: %q: %s", field, i, t.Key, strings.Join(msgs, "; ")))
		}
	}
	return errs
}

// Pool returns the named pool.
func (f *Fleet) Pool(name string) (Pool, bool) {
	for _, p := range f.Spec.Pools {
		if p.Name == name {
			return p, true
		}
	}
	return Pool{}, false
}

// PoolsWithMode returns the GPU pools designed for a sharing mode.
func (f *Fleet) PoolsWithMode(mode string) []Pool {
	var out []Pool
	for _, p := range f.Spec.Pools {
		if p.Mode() == mode {
			out = append(out, p)
		}
	}
	return out
}

// GPU reports whether the pool has GPUs.
func (p Pool) GPU() bool { return p.SKU != "" && p.GPUsPerNode > 0 }

// Mode is the pool's sharing mode ("" for CPU pools, exclusive by default).
func (p Pool) Mode() string {
	switch {
	case !p.GPU():
		return ""
	case p.Sharing == nil:
		return ModeExclusive
	}
	return p.Sharing.Mode
}

// SharesDevices reports whether DRA hands one of the pool's devices to
// several claims at once (the driver's --consumable-shares).
func (p Pool) SharesDevices() bool { return p.DRA != nil && p.DRA.ConsumableShares != "" }

// Replicated returns the time-slicing or MPS design, if any.
func (p Pool) Replicated() *ReplicatedSharing {
	if p.Sharing == nil {
		return nil
	}
	if p.Sharing.Mode == ModeMPS {
		return p.Sharing.MPS
	}
	return p.Sharing.Replicated
}

// PoolNames lists pool names, sorted.
func (f *Fleet) PoolNames() []string {
	var names []string
	for _, p := range f.Spec.Pools {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

// TotalNodes counts nodes over all pools.
func (f *Fleet) TotalNodes() int {
	n := 0
	for _, p := range f.Spec.Pools {
		n += p.Nodes
	}
	return n
}

// PoolPatch changes one pool with a JSON merge patch (RFC 7386) on its
// fleet-file form, e.g. {pool: gpu-l4-shared, patch: {taints: []}}.
type PoolPatch struct {
	Pool  string         `json:"pool"`
	Patch map[string]any `json:"patch"`
}

// Patched returns a copy of the fleet with the patches applied, validated
// again. source names where the patches come from, for errors.
func (f *Fleet) Patched(source string, patches []PoolPatch) (*Fleet, error) {
	if len(patches) == 0 {
		return f, nil
	}
	data, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	var out Fleet
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	out.File = f.File
	for i, p := range patches {
		field := fmt.Sprintf("%s: spec.fleetPatches[%d]", source, i)
		// A fixed pool, or an autoscaled one (whose nodePool and maxNodes
		// a patch may change too).
		var target any
		if idx := slices.IndexFunc(out.Spec.Pools, func(q Pool) bool { return q.Name == p.Pool }); idx >= 0 {
			target = &out.Spec.Pools[idx]
		} else if idx := slices.IndexFunc(out.Spec.AutoscaledPools, func(q AutoscaledPool) bool { return q.Name == p.Pool }); idx >= 0 {
			target = &out.Spec.AutoscaledPools[idx]
		} else {
			names := f.PoolNames()
			for _, a := range f.Spec.AutoscaledPools {
				names = append(names, a.Name+" (autoscaled)")
			}
			return nil, fmt.Errorf("%s.pool: fleet %s has no pool %q (pools: %s)", field, f.Metadata.Name, p.Pool, strings.Join(names, ", "))
		}
		raw, err := json.Marshal(target)
		if err != nil {
			return nil, err
		}
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			return nil, err
		}
		patched, err := json.Marshal(mergepatch.Apply(doc, p.Patch))
		if err != nil {
			return nil, fmt.Errorf("%s.patch: %w", field, err)
		}
		switch t := target.(type) {
		case *Pool:
			var pool Pool
			if err := yaml.UnmarshalStrict(patched, &pool); err != nil {
				return nil, fmt.Errorf("%s.patch: %w", field, err)
			}
			*t = pool
		case *AutoscaledPool:
			var pool AutoscaledPool
			if err := yaml.UnmarshalStrict(patched, &pool); err != nil {
				return nil, fmt.Errorf("%s.patch: %w", field, err)
			}
			*t = pool
		}
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("fleet %s as patched by %s: %w", f.File, source, err)
	}
	return &out, nil
}
