// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"maps"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpupool/gpupool/fakegpu"
)

// Sharing modes a pool can be designed for.
const (
	ModeExclusive   = "exclusive"
	ModeMIG         = "mig"
	ModeTimeSlicing = "time-slicing"
	ModeMPS         = "mps"
)

var modes = []string{ModeExclusive, ModeMIG, ModeTimeSlicing, ModeMPS}

// Fleet is a set of node pools: the nodes a run simulates, as data.
type Fleet struct {
	// TypeMeta is apiVersion gpupool.dev/v1alpha1 and kind Fleet.
	metav1.TypeMeta `json:",inline"`
	// Metadata: name (required), labels and annotations; a fleet file is
	// not a cluster object, so nothing else.
	Metadata metav1.ObjectMeta `json:"metadata"`
	// Spec is the pools and the images their tenants run.
	Spec FleetSpec `json:"spec"`

	// File is where the fleet was read from (not part of the format).
	File string `json:"-"`
}

// FleetSpec lists the pools, and the images tenants run whose ENV matters.
type FleetSpec struct {
	// Pools are the node groups the run creates itself, at their full
	// size from the start. At least one.
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
	// Image is the reference (registry/repository[:tag][@sha256:digest],
	// lower case), as a pod's spec names it.
	Image string `json:"image"`
	// Env is the ENV the image's config sets: values only, as a registry
	// stores them (no valueFrom).
	Env []corev1.EnvVar `json:"env"`
}

// Pool is a group of identical nodes.
type Pool struct {
	// Name is the pool's, a DNS label: nodes are named <pool>-<i> and
	// labelled gpupool.dev/pool=<name>.
	Name string `json:"name"`
	// SKU is a key of the fakegpu catalog; empty for CPU-only pools.
	SKU string `json:"sku,omitempty"`
	// Nodes is how many nodes the pool has (0 to 100,000).
	Nodes int `json:"nodes"`
	// GPUsPerNode is each node's physical GPUs (1 to 16 for a GPU pool,
	// unset for a CPU pool).
	GPUsPerNode int `json:"gpusPerNode,omitempty"`
	// Labels are put on every node of the pool, as a platform team's
	// node labels.
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are put on every node of the pool, to keep pods that do not
	// tolerate them off it.
	Taints []corev1.Taint `json:"taints,omitempty"`
	// Sharing is how the pool's GPUs are meant to be handed out (unset:
	// exclusive, one GPU to one container).
	Sharing *Sharing `json:"sharing,omitempty"`
	// DRA: the pool's GPUs are served by NVIDIA's DRA driver instead of
	// the device plugin (unset: the device plugin).
	DRA *DRA `json:"dra,omitempty"`
	// TrustDomains splits the pool's nodes between tenants that must not
	// share hardware; their node counts add up to Nodes.
	TrustDomains []TrustDomain `json:"trustDomains,omitempty"`
	// CPU is each node's allocatable CPU, a quantity (default 64).
	CPU string `json:"cpu,omitempty"`
	// Memory is each node's allocatable memory, a quantity (default 512Gi).
	Memory string `json:"memory,omitempty"`
	// MaxPods is each node's pod capacity (default 110, the kubelet's).
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

// Sharing is how the pool's GPUs are meant to be handed out. The fleet says
// what the pool is designed for; what nodes actually advertise comes from
// the candidate's Operator configs, and the suites compare the two.
type Sharing struct {
	// Mode: exclusive, mig, time-slicing or mps; the field of the same
	// name says the rest.
	Mode string `json:"mode"`
	// MIG: the mig-parted layout (node label nvidia.com/mig.config) and the
	// strategy the pool is designed for.
	MIG *MIGSharing `json:"mig,omitempty"`
	// Replicated (time-slicing): the device-plugin config key (node label
	// nvidia.com/device-plugin.config) and the sharing it is meant to give.
	Replicated *ReplicatedSharing `json:"timeSlicing,omitempty"`
	// MPS: as timeSlicing, for mode mps.
	MPS *ReplicatedSharing `json:"mps,omitempty"`
}

// MIGSharing is the MIG design of a pool.
type MIGSharing struct {
	// Config is the mig-parted layout name (e.g. all-1g.5gb), which the
	// nodes get as nvidia.com/mig.config.
	Config string `json:"config"`
	// Strategy is the device plugin's MIG strategy the pool is designed
	// for: single or mixed.
	Strategy string `json:"strategy"`
}

// ReplicatedSharing is the time-slicing or MPS design of a pool.
type ReplicatedSharing struct {
	// Config is the key of the candidate's device-plugin ConfigMap the
	// nodes name (label nvidia.com/device-plugin.config).
	Config string `json:"config"`
	// Replicas is how many shares of each GPU the config is meant to
	// give (2 to 128).
	Replicas int `json:"replicas"`
	// RenameByDefault: the config is meant to advertise the shares as
	// nvidia.com/gpu.shared rather than nvidia.com/gpu.
	RenameByDefault bool `json:"renameByDefault,omitempty"`
}

// TrustDomain is a share of a pool's nodes reserved for one tenant.
type TrustDomain struct {
	// Name is the tenant's; its nodes are labelled
	// gpupool.dev/trust-domain=<name>.
	Name string `json:"name"`
	// Nodes is how many of the pool's nodes are the tenant's (>= 1); 0
	// in an autoscaled pool.
	Nodes int `json:"nodes,omitempty"`
	// Labels are added to the domain's nodes, after the pool's.
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are added to the domain's nodes, after the pool's.
	Taints []corev1.Taint `json:"taints,omitempty"`
	// NodePool, in an autoscaled pool only, is the candidate's NodePool
	// that makes the domain's nodes, in place of the pool's: trust
	// domains scale apart, each by a NodePool of its own, since a
	// NodePool gives all its nodes the same taints.
	NodePool string `json:"nodePool,omitempty"`
	// MaxNodes, in an autoscaled pool only, is the most nodes the domain
	// is designed to grow to.
	MaxNodes int `json:"maxNodes,omitempty"`
}

// PoolPatch changes one pool with a JSON merge patch (RFC 7386) on its
// fleet-file form, e.g. {pool: gpu-l4-shared, patch: {taints: []}}.
type PoolPatch struct {
	// Pool names the pool (fixed or autoscaled) to change.
	Pool string `json:"pool"`
	// Patch is the merge patch, on the pool as the fleet file writes it.
	Patch map[string]any `json:"patch"`
}

// MaxAutoscaledNodes bounds what one autoscaled pool may grow to in a run:
// each node is a kwok node and a simulated GPU stack's worth of objects.
const MaxAutoscaledNodes = 1000

// AutoscaledPool is a node group an autoscaler makes from zero: the
// hardware of its nodes (SKU, GPUs, CPU, memory) is the instance type the
// simulated cloud offers for it, and their labels, taints and limits are
// the candidate's NodePool's. Labels and Taints say what the pool is
// designed to carry, which the checks compare with what the NodePool
// gives its nodes.
type AutoscaledPool struct {
	// Pool is the nodes' design, as a fixed pool's, with nodes 0; its
	// trust domains, if any, each name their own NodePool and maxNodes.
	Pool `json:",inline"`
	// NodePool names the candidate's Karpenter NodePool meant to scale
	// this pool (empty when its trust domains name theirs).
	NodePool string `json:"nodePool,omitempty"`
	// MaxNodes is the most nodes the pool is designed to grow to.
	MaxNodes int `json:"maxNodes"`
}

// Defaults of a node's allocatable: a large GPU server's, so a pool that
// does not say is not the bottleneck of what runs on it.
const (
	DefaultNodeCPU    = "64"
	DefaultNodeMemory = "512Gi"
	// DefaultMaxPods is the kubelet's maxPods default.
	DefaultMaxPods = 110
)

// NodeCPU is each node's allocatable CPU, the default if unset. Read
// through here rather than defaulted into the document: a fleet is written
// back and patched, and an unset field there keeps meaning "the default".
func (p Pool) NodeCPU() string { return orDefault(p.CPU, DefaultNodeCPU) }

// NodeMemory is each node's allocatable memory, the default if unset.
func (p Pool) NodeMemory() string { return orDefault(p.Memory, DefaultNodeMemory) }

// NodeMaxPods is each node's pod capacity, the default if unset.
func (p Pool) NodeMaxPods() int {
	if p.MaxPods == 0 {
		return DefaultMaxPods
	}
	return p.MaxPods
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

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

// Pool returns the named pool.
func (f *Fleet) Pool(name string) (Pool, bool) {
	for _, p := range f.Spec.Pools {
		if p.Name == name {
			return p, true
		}
	}
	return Pool{}, false
}

// AutoscaledPool returns the named autoscaled pool as the fleet declares
// it (split into trust domains, if it is, unlike Autoscaled).
func (f *Fleet) AutoscaledPool(name string) (AutoscaledPool, bool) {
	for _, p := range f.Spec.AutoscaledPools {
		if p.Name == name {
			return p, true
		}
	}
	return AutoscaledPool{}, false
}

// Design returns the named pool's design: a fixed pool, or an autoscaled
// pool as the fleet declares it (its nodes' labels, taints and sharing,
// its trust domains whole), for nodes labelled with either.
func (f *Fleet) Design(name string) (Pool, bool) {
	if p, ok := f.Pool(name); ok {
		return p, true
	}
	if ap, ok := f.AutoscaledPool(name); ok {
		return ap.Pool, true
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

// Autoscaled lists the autoscaled pools' designs.
//
// A pool split into trust domains comes as one per domain, as its
// NodePool scales it: the pool's design with the domain's labels and
// taints added, the domain as its only one, and the domain's NodePool
// and maxNodes.
func (f *Fleet) Autoscaled() []AutoscaledPool {
	var out []AutoscaledPool
	for _, p := range f.Spec.AutoscaledPools {
		if len(p.TrustDomains) == 0 {
			out = append(out, p)
			continue
		}
		for _, d := range p.TrustDomains {
			one := p
			one.Labels = maps.Clone(p.Labels)
			if one.Labels == nil {
				one.Labels = map[string]string{}
			}
			maps.Copy(one.Labels, d.Labels)
			one.Taints = append(slices.Clone(p.Taints), d.Taints...)
			one.TrustDomains = []TrustDomain{d}
			one.NodePool, one.MaxNodes = d.NodePool, d.MaxNodes
			out = append(out, one)
		}
	}
	return out
}

// AutoscaledPoolFor returns the autoscaled pool (a trust domain of one,
// as Autoscaled gives it) a NodePool scales.
func (f *Fleet) AutoscaledPoolFor(nodePool string) (AutoscaledPool, bool) {
	for _, p := range f.Autoscaled() {
		if p.NodePool == nodePool {
			return p, true
		}
	}
	return AutoscaledPool{}, false
}
