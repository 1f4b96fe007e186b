// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpupool/gpupool/e2e/apis"
	"github.com/gpupool/gpupool/fakegpu"
)

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

// Validate checks the fleet is complete and consistent; every error names
// the field.
func (f *Fleet) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	errs = append(errs, apis.CheckMeta(f.TypeMeta, f.Metadata, apis.KindFleet)...)
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
		pool("spec.pools", i, p.Name, p.validateFixed())
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
		add("maxPods: must be 0 (%d) to %d, got %d", DefaultMaxPods, MaxPodsPerNode, p.MaxPods)
	}
	// Refused here, not when a node or an instance type is built from it.
	for _, q := range []struct{ field, value, example string }{{"cpu", p.CPU, DefaultNodeCPU}, {"memory", p.Memory, DefaultNodeMemory}} {
		if q.value == "" {
			continue
		}
		if v, err := resource.ParseQuantity(q.value); err != nil {
			add("%s: %q is not a quantity (such as %s)", q.field, q.value, q.example)
		} else if v.Sign() <= 0 {
			add("%s: must be more than 0, got %s", q.field, q.value)
		}
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
	for i, td := range p.TrustDomains {
		path := fmt.Sprintf("trustDomains[%d]", i)
		if td.Name == "" {
			add("%s.name: required", path)
		}
		for k, v := range td.Labels {
			errs = append(errs, labelErrs(path+".labels", k, v)...)
		}
		errs = append(errs, taintErrs(path+".taints", td.Taints)...)
	}
	return errs
}

// validateFixed adds what only a fixed pool must hold: its trust domains
// split its nodes, and name no NodePool.
func (p Pool) validateFixed() []error {
	errs := p.validate()
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(p.TrustDomains) == 0 {
		return errs
	}
	total := 0
	for i, td := range p.TrustDomains {
		path := fmt.Sprintf("trustDomains[%d]", i)
		if td.Nodes < 1 {
			add("%s.nodes: must be >= 1, got %d", path, td.Nodes)
		}
		if td.NodePool != "" || td.MaxNodes != 0 {
			add("%s: nodePool and maxNodes are an autoscaled pool's; a fixed pool's domain has nodes", path)
		}
		total += td.Nodes
	}
	if total != p.Nodes {
		add("trustDomains: node counts add up to %d, but the pool has %d nodes", total, p.Nodes)
	}
	return errs
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

func (p AutoscaledPool) validate() []error {
	errs := p.Pool.validate()
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if p.Nodes != 0 {
		add("nodes: an autoscaled pool starts at zero nodes (the autoscaler makes them), got %d", p.Nodes)
	}
	if !p.GPU() {
		add("sku: an autoscaled pool is a GPU pool: sku and gpusPerNode are required")
	}
	scaled := func(path, nodePool string, maxNodes int) {
		if nodePool == "" {
			add("%snodePool: required: the candidate's NodePool that makes these nodes", path)
		} else if msgs := validation.IsDNS1123Subdomain(nodePool); len(msgs) > 0 {
			add("%snodePool: %q is not a NodePool name: %s", path, nodePool, strings.Join(msgs, "; "))
		}
		if maxNodes < 1 || maxNodes > MaxAutoscaledNodes {
			add("%smaxNodes: must be 1 to %d, got %d", path, MaxAutoscaledNodes, maxNodes)
		}
	}
	if len(p.TrustDomains) == 0 {
		scaled("", p.NodePool, p.MaxNodes)
		return errs
	}
	// Split into trust domains, each scales by its own NodePool.
	if p.NodePool != "" || p.MaxNodes != 0 {
		add("nodePool, maxNodes: a pool split into trust domains scales by each domain's nodePool and maxNodes, not the pool's")
	}
	names := map[string]bool{}
	for i, td := range p.TrustDomains {
		path := fmt.Sprintf("trustDomains[%d].", i)
		if names[td.Name] {
			add("%sname: duplicate trust domain %q", path, td.Name)
		}
		names[td.Name] = true
		if td.Nodes != 0 {
			add("%snodes: an autoscaled pool's domain starts at zero nodes, got %d", path, td.Nodes)
		}
		scaled(path, td.NodePool, td.MaxNodes)
	}
	return errs
}

// validateAutoscaledNodePools refuses two pools scaled by one NodePool:
// the nodes it makes would belong to both.
func validateAutoscaledNodePools(pools []AutoscaledPool) []error {
	var errs []error
	by := map[string]string{}
	claim := func(at, nodePool, what string) {
		if nodePool == "" {
			return
		}
		if other, dup := by[nodePool]; dup {
			errs = append(errs, fmt.Errorf("%s.nodePool: NodePool %q already scales %s", at, nodePool, other))
			return
		}
		by[nodePool] = what
	}
	for i, p := range pools {
		claim(fmt.Sprintf("spec.autoscaledPools[%d] (%s)", i, p.Name), p.NodePool, "pool "+p.Name)
		for j, td := range p.TrustDomains {
			claim(fmt.Sprintf("spec.autoscaledPools[%d] (%s).trustDomains[%d]", i, p.Name, j), td.NodePool, "pool "+p.Name+", trust domain "+td.Name)
		}
	}
	return errs
}
