// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package explore

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/workload"
)

// Space is what a tenant can name when writing a pod on this cluster:
// the pools with the resource each advertises, the trust domains and
// their namespaces, the RuntimeClasses. The suites build it from the
// fleet and the live cluster.
type Space struct {
	Pools []PoolSpace
	// Advertised lists every nvidia.com/ resource some node advertises.
	Advertised []string
	// Unlabelled is a namespace with no labels at all.
	Unlabelled string
	// OtherRuntimeClass exists and is not nvidia; MissingRuntimeClass
	// does not exist.
	OtherRuntimeClass, MissingRuntimeClass string
	// Image is pinned by digest; TagImage names the same image by tag.
	Image, TagImage string
	// ServiceAccount is a service account of the pod's own in every
	// namespace (not the namespace's default).
	ServiceAccount string
	// Labels go on every pod (the check label, for cleanup).
	Labels map[string]string
	// NodeLabels are the labels of one node of each pool, by pool name.
	NodeLabels map[string]map[string]string
	// CUDAImage is a CUDA image: its ENV says NVIDIA_VISIBLE_DEVICES=all
	// (access §2.1). EnvSource names a ConfigMap and a Secret
	// in every namespace of Namespaces holding NVIDIA_VISIBLE_DEVICES=all.
	CUDAImage, EnvSource string
	// Claims are the ways a pod can ask for a GPU through DRA here: one
	// per GPU DeviceClass of the cluster, each with a ResourceClaimTemplate
	// of that name in every namespace of Namespaces (none: shapes ask by
	// limits alone).
	Claims []ClaimSpace
}

// ClaimSpace is one DeviceClass a tenant can claim a device of.
type ClaimSpace struct {
	Class string
	// Template names the ResourceClaimTemplate asking for one device of
	// Class, in every namespace shapes are drawn into.
	Template string
}

// PoolSpace is one GPU pool as tenants see it.
type PoolSpace struct {
	Pool fleet.Pool
	// Resource is what its tenants are told to ask for.
	Resource string
	Domains  []DomainSpace
	Nodes    []string
}

// DomainSpace is a trust domain of a pool and the namespace of its tenant.
type DomainSpace struct {
	Domain    fleet.TrustDomain
	Namespace string
	Nodes     []string
}

// Dimensions of a pod a tenant controls. A rule explores some uniformly;
// the others keep their well-formed value most of the time, so a
// violation needs only the few departures that matter, and shrinking
// takes every other dimension back to well-formed.
const (
	DimPool       = "pool"
	DimHome       = "namespace"
	DimAim        = "trust-aim"
	DimSlot       = "container-list"
	DimExtra      = "extra-containers"
	DimResource   = "resource"
	DimCount      = "count"
	DimForm       = "request-form"
	DimSelector   = "node-selection"
	DimToleration = "tolerations"
	DimRuntime    = "runtimeclass"
	DimAccount    = "service-account"
	DimImage      = "image"
	DimSecurity   = "security-context"
	DimNodeName   = "node-name"
	DimVia        = "via"
	DimAsk        = "device-request"
	// What a container can see (Focus.Sight): whether the pod asks for a
	// GPU at all, how its environment names GPUs, and its privileges.
	DimNoGPU     = "gpu-request"
	DimGPUEnv    = "visible-devices"
	DimEnvValue  = "visible-devices-value"
	DimPrivilege = "privilege"
	// DimAfter: what the tenant changes once the pod is admitted
	// (Focus.After).
	DimAfter = "after-admission"
)

// What a rule lets a tenant change after admission (Focus.After).
const (
	// AfterImageTag: the GPU container's image set to one by tag.
	AfterImageTag = "image-tag"
	// AfterImageCUDA: the first container's image set to a CUDA image.
	AfterImageCUDA = "image-cuda"
	// AfterEphemeralEnv, AfterEphemeralCUDA, AfterEphemeralPrivileged: an
	// ephemeral container naming every GPU in its env, running a CUDA
	// image, or privileged with the variable.
	AfterEphemeralEnv        = "ephemeral-env"
	AfterEphemeralCUDA       = "ephemeral-cuda"
	AfterEphemeralPrivileged = "ephemeral-privileged"
	// AfterRetarget: created behind the tenant's own scheduling gate,
	// then aimed at another pool's or trust domain's nodes (tolerating
	// their taints, selecting their labels) and ungated in one update.
	AfterRetarget = "retarget"
)

// Focus is the part of the space a rule explores.
type Focus struct {
	// Pools narrows the pools drawn from (nil: every GPU pool).
	Pools func(PoolSpace) bool
	// Explore lists the dimensions drawn uniformly.
	Explore []string
	// NodeName lets shapes name their node (admission rules: the
	// scheduler never sees such pods, and simulated nodes have no kubelet
	// to refuse a pod its selector excludes).
	NodeName bool
	// Vias narrows the ways in (nil: all).
	Vias []string
	// Sight draws what decides what a container sees: no GPU request,
	// NVIDIA_VISIBLE_DEVICES from the image, env or envFrom, privilege.
	// Other rules draw none of it, so their shapes stay as they were.
	Sight bool
	// After lists the updates a shape may make once admitted (After*
	// constants), to its pod or the first its controller made. Runtime
	// and identity are immutable; placement changes only behind a gate,
	// for rules judged on placement.
	After []string
}

// keepWellFormed is the chance (in %) that a dimension a rule does not
// explore keeps its well-formed value.
const keepWellFormed = 90

const (
	slotMain    = "containers"
	slotInit    = "initContainers"
	slotSidecar = "sidecar"
)

type drawer struct {
	t       *rapid.T
	explore map[string]bool
	choices []string
}

// pick draws an option index in [0, n): index 0 is the well-formed
// choice, and what shrinking falls back to.
func (d *drawer) pick(dim string, n int) int {
	if n <= 1 {
		return 0
	}
	keep := keepWellFormed
	if d.explore[dim] {
		keep = 100 / n
	}
	r := rapid.IntRange(0, 99).Draw(d.t, dim)
	if r < keep {
		return 0
	}
	return 1 + (r-keep)*(n-1)/(100-keep)
}

func (d *drawer) note(format string, args ...any) {
	d.choices = append(d.choices, fmt.Sprintf(format, args...))
}

// Shapes returns the generator of one rule's pod shapes. name gives each
// drawn pod a fresh name (not a draw: replaying a seed draws the same
// shapes whatever they are called).
func (s *Space) Shapes(f Focus, rule string, name func() string) *rapid.Generator[Shape] {
	explore := map[string]bool{}
	for _, d := range f.Explore {
		explore[d] = true
	}
	var pools []PoolSpace
	for _, p := range s.Pools {
		if f.Pools == nil || f.Pools(p) {
			pools = append(pools, p)
		}
	}
	vias := f.Vias
	if vias == nil {
		vias = Vias
	}
	return rapid.Custom(func(t *rapid.T) Shape {
		if len(pools) == 0 {
			t.Skip("no pool to draw from")
		}
		d := &drawer{t: t, explore: explore}
		return s.draw(d, f, pools, vias, name(), rule)
	})
}

func (s *Space) draw(d *drawer, f Focus, pools []PoolSpace, vias []string, name, rule string) Shape {
	// The way in first: shrinking works from the first draw on, and a
	// controller's shape costs about 100 ms to judge where a dry-run pod
	// costs a few.
	via := vias[d.pick(DimVia, len(vias))]
	p := pools[d.pick(DimPool, len(pools))]
	// Home: the namespace of the pool's tenant (its trust domain's).
	var own *DomainSpace
	home := s.Unlabelled
	if len(p.Domains) > 0 {
		own = &p.Domains[rapid.IntRange(0, len(p.Domains)-1).Draw(d.t, "domain")]
		home = own.Namespace
	}
	others := s.otherTenants(home)
	switch d.pick(DimHome, 3) {
	case 1:
		if len(others) > 0 {
			home = others[rapid.IntRange(0, len(others)-1).Draw(d.t, "other-namespace")]
			d.note("in namespace %s, not its pool's tenant's", home)
		}
	case 2:
		if home != s.Unlabelled {
			home = s.Unlabelled
			d.note("in namespace %s, which has no labels", home)
		}
	}

	// Which trust domain's nodes it selects and tolerates.
	selDomain, tolDomain := own, own
	if own != nil {
		other := otherDomain(p, own)
		switch d.pick(DimAim, 4) {
		case 1:
			if other != nil {
				selDomain, tolDomain = other, other
				d.note("selects and tolerates trust domain %s's nodes", other.Domain.Name)
			}
		case 2:
			selDomain = nil
			d.note("selects no trust domain")
		case 3:
			if other != nil {
				selDomain = other
				d.note("selects trust domain %s's nodes, tolerates %s's", other.Domain.Name, own.Domain.Name)
			}
		}
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: home, Labels: map[string]string{LabelShape: name, LabelRule: rule}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(0)),
			Containers:                    []corev1.Container{{Name: "main", Image: s.Image}},
		},
	}
	for k, v := range s.Labels {
		pod.Labels[k] = v
	}

	// Where the devices are asked for.
	slot := slotMain
	switch d.pick(DimSlot, 3) {
	case 1:
		slot = slotInit
		pod.Spec.InitContainers = []corev1.Container{{Name: "gpu", Image: s.Image}}
		d.note("GPU limit in %s", describeList(slotInit))
	case 2:
		slot = slotSidecar
		pod.Spec.InitContainers = []corev1.Container{{Name: "gpu", Image: s.Image, RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways)}}
		d.note("GPU limit in %s", describeList(slotSidecar))
	}
	if n := d.pick(DimExtra, 3); n > 0 {
		for i := 0; i < n; i++ {
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: fmt.Sprintf("extra-%d", i+1), Image: s.Image})
		}
		d.note("%d more containers without GPUs", n)
	}
	gpu := &pod.Spec.Containers[0]
	if slot != slotMain {
		gpu = &pod.Spec.InitContainers[0]
	}

	// What it asks for, and how.
	asked := len(d.choices)
	res := []string{p.Resource}
	switch d.pick(DimResource, 4) {
	case 1:
		if alt := s.otherAdvertised(p.Resource); len(alt) > 0 {
			res = []string{alt[rapid.IntRange(0, len(alt)-1).Draw(d.t, "other-resource")]}
			d.note("asks for %s, which another pool advertises", res[0])
		}
	case 2:
		if un := s.unadvertised(); len(un) > 0 {
			res = []string{un[rapid.IntRange(0, len(un)-1).Draw(d.t, "unadvertised-resource")]}
			d.note("asks for %s, which no node advertises", res[0])
		}
	case 3:
		if alt := s.otherAdvertised(p.Resource); len(alt) > 0 {
			res = append(res, alt[rapid.IntRange(0, len(alt)-1).Draw(d.t, "second-resource")])
			d.note("asks for %s and %s", res[0], res[1])
		}
	}
	count := int64(1)
	if d.pick(DimCount, 2) == 1 {
		count = 2
		d.note("asks for 2 of each")
	}
	form := d.pick(DimForm, 3)
	lim, req := corev1.ResourceList{}, corev1.ResourceList{}
	for _, r := range res {
		q := *resource.NewQuantity(count, resource.DecimalSI)
		switch form {
		case 0:
			lim[corev1.ResourceName(r)] = q
		case 1:
			lim[corev1.ResourceName(r)], req[corev1.ResourceName(r)] = q, q
		case 2:
			req[corev1.ResourceName(r)] = q
		}
	}
	switch form {
	case 1:
		d.note("sets requests equal to limits")
	case 2:
		d.note("sets requests only, no limits")
	}
	gpu.Resources = corev1.ResourceRequirements{}
	if len(lim) > 0 {
		gpu.Resources.Limits = lim
	}
	if len(req) > 0 {
		gpu.Resources.Requests = req
	}
	s.ask(d, pod, gpu, count, asked)

	s.select_(d, pod, p, selDomain)
	s.tolerate(d, pod, p, tolDomain, own)

	switch d.pick(DimRuntime, 4) {
	case 0:
		pod.Spec.RuntimeClassName = ptr(workload.RuntimeClass)
	case 1:
		d.note("no runtimeClassName")
	case 2:
		pod.Spec.RuntimeClassName = ptr(s.OtherRuntimeClass)
		d.note("runtimeClassName %s (exists, not nvidia)", s.OtherRuntimeClass)
	case 3:
		pod.Spec.RuntimeClassName = ptr(s.MissingRuntimeClass)
		d.note("runtimeClassName %s (does not exist)", s.MissingRuntimeClass)
	}
	switch d.pick(DimAccount, 3) {
	case 0:
		pod.Spec.ServiceAccountName = s.ServiceAccount
	case 1:
		pod.Spec.ServiceAccountName = "default"
		d.note("serviceAccountName default")
	case 2:
		d.note("no serviceAccountName")
	}
	switch d.pick(DimImage, 3) {
	case 1:
		gpu.Image = s.TagImage
		d.note("the GPU container's image by tag")
	case 2:
		pod.Spec.Containers[len(pod.Spec.Containers)-1].Image = s.TagImage
		if gpu == &pod.Spec.Containers[len(pod.Spec.Containers)-1] {
			d.note("the GPU container's image by tag")
		} else {
			d.note("container %s's image by tag", pod.Spec.Containers[len(pod.Spec.Containers)-1].Name)
		}
	}
	if d.pick(DimSecurity, 2) == 0 {
		restrict(pod)
	} else {
		d.note("no security context (not Pod Security restricted)")
	}
	if f.Sight {
		s.sight(d, pod, gpu)
	}
	// What the tenant changes once admitted, in the pod it created or
	// the first its controller made (a tenant may update both; a
	// retarget's controller template is gated). A gated pod names no node
	// (pod-update-facts §1.4).
	var updates []Update
	if len(f.After) > 0 {
		if i := d.pick(DimAfter, len(f.After)+1); i > 0 {
			var u Update
			var ok bool
			if kind := f.After[i-1]; kind == AfterRetarget {
				u, ok = s.retarget(d, pod, p, own)
			} else {
				u, ok = s.after(kind, pod, gpu)
			}
			if ok {
				updates = []Update{u}
				d.note("%s", u)
			}
		}
	}
	if f.NodeName && pod.Spec.SchedulingGates == nil {
		switch d.pick(DimNodeName, 3) {
		case 1:
			nodes := p.Nodes
			if selDomain != nil {
				nodes = selDomain.Nodes
			}
			if len(nodes) > 0 {
				pod.Spec.NodeName = nodes[rapid.IntRange(0, len(nodes)-1).Draw(d.t, "node")]
				d.note("nodeName %s, bypassing the scheduler", pod.Spec.NodeName)
			}
		case 2:
			if nodes := s.otherPoolNodes(p); len(nodes) > 0 {
				pod.Spec.NodeName = nodes[rapid.IntRange(0, len(nodes)-1).Draw(d.t, "other-node")]
				d.note("nodeName %s, a node of another pool", pod.Spec.NodeName)
			}
		}
	}
	if via != ViaPod {
		d.note("created by a %s's controller", via)
	}
	shape := Shape{Via: via, Pod: pod, Updates: updates}
	shape.Choices = d.choices
	return shape
}

// after is the update of kind to an admitted pod (Focus.After); ok false
// where the space has nothing to write it with.
func (s *Space) after(kind string, pod *corev1.Pod, gpu *corev1.Container) (Update, bool) {
	eph := func(name, image string) *corev1.EphemeralContainer {
		return &corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: name, Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		}}
	}
	all := []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}}
	switch kind {
	case AfterImageTag:
		if gpu == nil || s.TagImage == "" {
			return Update{}, false
		}
		return Update{Kind: UpdateImage, Container: gpu.Name, Image: s.TagImage}, true
	case AfterImageCUDA:
		if s.CUDAImage == "" {
			return Update{}, false
		}
		return Update{Kind: UpdateImage, Container: pod.Spec.Containers[0].Name, Image: s.CUDAImage}, true
	case AfterEphemeralEnv:
		c := eph("debug-env", s.Image)
		c.Env = all
		return Update{Kind: UpdateEphemeral, Ephemeral: c}, true
	case AfterEphemeralCUDA:
		if s.CUDAImage == "" {
			return Update{}, false
		}
		return Update{Kind: UpdateEphemeral, Ephemeral: eph("debug-cuda", s.CUDAImage)}, true
	case AfterEphemeralPrivileged:
		c := eph("debug-privileged", s.Image)
		c.Env = all
		c.SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
		return Update{Kind: UpdateEphemeral, Ephemeral: c}, true
	}
	return Update{}, false
}

// retarget creates the pod behind the tenant's gate and aims it, once
// admitted, at the nodes of another pool or trust domain than its own:
// their taints tolerated (exactly, or every taint), their labels added
// to its nodeSelector, or as required node affinity where it has none
// (pod-update-facts §2). Selector entries may only be added, so the pod
// is created without those the update gives another value: what a
// tenant who means to retarget would submit.
func (s *Space) retarget(d *drawer, pod *corev1.Pod, p PoolSpace, own *DomainSpace) (Update, bool) {
	type target struct {
		pool PoolSpace
		dom  *DomainSpace
	}
	var targets []target
	for _, q := range s.Pools {
		if len(q.Domains) == 0 && q.Pool.Name != p.Pool.Name {
			targets = append(targets, target{q, nil})
		}
		for i := range q.Domains {
			if dom := &q.Domains[i]; q.Pool.Name != p.Pool.Name || own == nil || dom.Domain.Name != own.Domain.Name {
				targets = append(targets, target{q, dom})
			}
		}
	}
	if len(targets) == 0 {
		return Update{}, false
	}
	// Another trust domain of its own pool first: the neighbour a
	// time-sliced GPU must not be shared with.
	var near []target
	for _, t := range targets {
		if t.pool.Pool.Name == p.Pool.Name && t.dom != nil {
			near = append(near, t)
		}
	}
	if len(near) == 0 || rapid.Bool().Draw(d.t, "retarget-any-pool") {
		near = targets
	}
	tg := near[rapid.IntRange(0, len(near)-1).Draw(d.t, "retarget")]
	labels, taints, why := maps.Clone(tg.pool.Pool.Labels), append([]corev1.Taint{}, tg.pool.Pool.Taints...), "pool "+tg.pool.Pool.Name
	if tg.dom != nil {
		labels = merge(labels, tg.dom.Domain.Labels)
		taints = append(taints, tg.dom.Domain.Taints...)
		why += ", trust domain " + tg.dom.Domain.Name
	}
	u := Update{Kind: UpdateRetarget, Why: "aimed at " + why}
	if rapid.Bool().Draw(d.t, "retarget-every-taint") {
		u.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	} else {
		for _, t := range taints {
			u.Tolerations = append(u.Tolerations, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOpEqual, Value: t.Value, Effect: t.Effect})
		}
	}
	hasRequired := pod.Spec.Affinity != nil && pod.Spec.Affinity.NodeAffinity != nil && pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil
	if !hasRequired && rapid.Bool().Draw(d.t, "retarget-by-affinity") {
		var term corev1.NodeSelectorTerm
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			term.MatchExpressions = append(term.MatchExpressions, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{labels[k]}})
		}
		u.Affinity = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}}
	} else {
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			if have, has := pod.Spec.NodeSelector[k]; !has || have != labels[k] {
				if u.NodeSelector == nil {
					u.NodeSelector = map[string]string{}
				}
				u.NodeSelector[k] = labels[k]
			}
		}
	}
	// Created without what it will add or contradict: selector entries,
	// and (for an affinity retarget) the keys the affinity names.
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if _, add := u.NodeSelector[k]; add || u.Affinity != nil {
			if have, has := pod.Spec.NodeSelector[k]; has && (add || have != labels[k]) {
				delete(pod.Spec.NodeSelector, k)
				d.note("created without nodeSelector %s", k)
			}
		}
	}
	if len(pod.Spec.NodeSelector) == 0 {
		pod.Spec.NodeSelector = nil
	}
	pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: TenantGate}}
	return u, true
}

// ask lets the pod get its device through DRA instead of an nvidia.com/
// limit: a claim from a ResourceClaimTemplate, referenced by the GPU
// container or by none (the pod still holds the device), or the
// DeviceClass's implicit extended resource, which the scheduler serves
// from DRA devices whether or not the class maps a resource.
//
// The resource, count and form drawn before are replaced, so their notes
// (from index asked on) go: a shape says what it is.
func (s *Space) ask(d *drawer, pod *corev1.Pod, gpu *corev1.Container, count int64, asked int) {
	opt := d.pick(DimAsk, 4)
	if opt == 0 || len(s.Claims) == 0 {
		return
	}
	c := s.Claims[rapid.IntRange(0, len(s.Claims)-1).Draw(d.t, "device-class")]
	d.choices = d.choices[:asked]
	switch opt {
	case 1, 2:
		gpu.Resources = corev1.ResourceRequirements{}
		pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr(c.Template)}}
		if opt == 1 {
			gpu.Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
			d.note("gets its device through a ResourceClaim from template %s (DeviceClass %s), not a limit", c.Template, c.Class)
		} else {
			d.note("holds a ResourceClaim from template %s (DeviceClass %s) that no container references, and no limit", c.Template, c.Class)
		}
	case 3:
		name := corev1.ResourceName(workload.ImplicitDeviceClassResource(c.Class))
		q := *resource.NewQuantity(count, resource.DecimalSI)
		gpu.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{name: q}}
		d.note("limits %d %s, the DeviceClass's implicit extended resource, instead of an nvidia.com/ one", count, name)
	}
}

// sight draws what the NVIDIA runtime reads (access §8): the
// pod asks for no GPU at all; its first container names GPUs through its
// image's ENV, env or envFrom (a ConfigMap or a Secret), with all, an
// index or a CDI name; it is privileged or adds SYS_ADMIN (Pod Security
// restricted and the candidate's policies should refuse both).
func (s *Space) sight(d *drawer, pod *corev1.Pod, gpu *corev1.Container) {
	if d.pick(DimNoGPU, 2) == 1 {
		for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range list {
				list[i].Resources = corev1.ResourceRequirements{}
			}
		}
		pod.Spec.ResourceClaims = nil
		d.note("asks for no GPU")
	}
	c := &pod.Spec.Containers[0]
	value := "all"
	switch d.pick(DimEnvValue, 3) {
	case 1:
		value = "0"
	case 2:
		value = "management.nvidia.com/gpu=all"
	}
	ref := corev1.LocalObjectReference{Name: s.EnvSource}
	switch d.pick(DimGPUEnv, 5) {
	case 1:
		if s.CUDAImage != "" {
			c.Image = s.CUDAImage
			d.note("container %s runs a CUDA image (ENV NVIDIA_VISIBLE_DEVICES=all)", c.Name)
		}
	case 2:
		c.Env = append(c.Env, corev1.EnvVar{Name: "NVIDIA_VISIBLE_DEVICES", Value: value})
		d.note("container %s sets env NVIDIA_VISIBLE_DEVICES=%s", c.Name, value)
	case 3:
		if s.EnvSource != "" {
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref}})
			d.note("container %s takes envFrom ConfigMap %s (NVIDIA_VISIBLE_DEVICES=all)", c.Name, s.EnvSource)
		}
	case 4:
		if s.EnvSource != "" {
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref}})
			d.note("container %s takes envFrom Secret %s (NVIDIA_VISIBLE_DEVICES=all)", c.Name, s.EnvSource)
		}
	}
	switch d.pick(DimPrivilege, 3) {
	case 1:
		c.SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
		d.note("container %s is privileged", c.Name)
	case 2:
		c.SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}
		d.note("container %s adds capability SYS_ADMIN", c.Name)
	}
}

// select_ writes how the pod chooses nodes.
func (s *Space) select_(d *drawer, pod *corev1.Pod, p PoolSpace, dom *DomainSpace) {
	sel := map[string]string{}
	var trust map[string]string
	if dom != nil {
		trust = dom.Domain.Labels
	}
	put := func(m map[string]string) {
		for k, v := range m {
			sel[k] = v
		}
	}
	inTerm := func(m map[string]string) corev1.NodeSelectorTerm {
		var t corev1.NodeSelectorTerm
		for _, k := range slices.Sorted(maps.Keys(m)) {
			t.MatchExpressions = append(t.MatchExpressions, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{m[k]}})
		}
		return t
	}
	required := func(terms ...corev1.NodeSelectorTerm) {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	// widen selects by one required affinity expression instead of the
	// pool's labels; where the fleet offers none to write, the pod keeps
	// the well-formed selection.
	widen := func(ok bool, req corev1.NodeSelectorRequirement, why string) {
		put(trust)
		if !ok {
			put(p.Pool.Labels)
			return
		}
		required(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req}})
		words := fmt.Sprintf("required node affinity %s %s", req.Key, req.Operator)
		if len(req.Values) > 0 {
			words += fmt.Sprintf(" %v", req.Values)
		}
		if why != "" {
			words += " " + why
		}
		d.note("%s", words)
	}
	key := firstKey(p.Pool.Labels)
	other := s.otherPool(p)
	switch d.pick(DimSelector, 11) {
	case 0:
		put(p.Pool.Labels)
		put(trust)
	case 1:
		required(inTerm(merge(p.Pool.Labels, trust)))
		d.note("selects its pool by required node affinity, not nodeSelector")
	case 2:
		put(trust)
		d.note("no pool labels in its nodeSelector")
	case 3:
		if other != nil {
			put(other.Pool.Labels)
			d.note("selects pool %s's labels", other.Pool.Name)
		} else {
			put(p.Pool.Labels)
		}
		put(trust)
	case 4:
		d.note("no nodeSelector and no affinity")
	case 5:
		widen(key != "", corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpExists}, "(any pool)")
	case 6:
		if other != nil && key != "" && other.Pool.Labels[key] != "" {
			widen(true, corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpNotIn, Values: []string{other.Pool.Labels[key]}}, "")
		} else {
			widen(false, corev1.NodeSelectorRequirement{}, "")
		}
	case 7:
		put(trust)
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
			{Weight: 100, Preference: inTerm(p.Pool.Labels)}}}}
		d.note("prefers its pool by preferred node affinity only")
	case 8:
		put(trust)
		if other != nil {
			required(inTerm(p.Pool.Labels), inTerm(other.Pool.Labels))
			d.note("required node affinity: its pool's labels OR pool %s's", other.Pool.Name)
		} else {
			required(inTerm(p.Pool.Labels))
		}
	case 9:
		k := s.labelNotOn(p)
		widen(k != "", corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpDoesNotExist}, "")
	case 10:
		k, below := s.numericLabel(p)
		widen(k != "", corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpGt, Values: []string{fmt.Sprint(below)}}, "")
	}
	if len(sel) > 0 {
		pod.Spec.NodeSelector = sel
	}
}

// labelNotOn is a label key another pool's nodes carry and p's do not:
// "DoesNotExist" on it is a way to select p without naming it.
func (s *Space) labelNotOn(p PoolSpace) string {
	for _, o := range s.Pools {
		for _, k := range slices.Sorted(maps.Keys(o.Pool.Labels)) {
			if _, mine := p.Pool.Labels[k]; !mine && o.Pool.Name != p.Pool.Name {
				return k
			}
		}
	}
	return ""
}

// numericLabel is a label whose value is a number on p's nodes (what a
// tenant would compare with Gt and Lt), with a bound just below p's value.
// The nodes say which: no label name is assumed.
func (s *Space) numericLabel(p PoolSpace) (string, int64) {
	labels := s.NodeLabels[p.Pool.Name]
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if n, err := strconv.ParseInt(labels[k], 10, 64); err == nil && n > 0 {
			return k, n - 1
		}
	}
	return "", 0
}

// tolerate writes the pod's tolerations.
func (s *Space) tolerate(d *drawer, pod *corev1.Pod, p PoolSpace, dom, own *DomainSpace) {
	taints := append([]corev1.Taint{}, p.Pool.Taints...)
	if dom != nil {
		taints = append(taints, dom.Domain.Taints...)
	}
	exact := func(ts []corev1.Taint) []corev1.Toleration {
		var out []corev1.Toleration
		for _, t := range ts {
			out = append(out, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOpEqual, Value: t.Value, Effect: t.Effect})
		}
		return out
	}
	tols := exact(taints)
	switch d.pick(DimToleration, 6) {
	case 1:
		tols = append(tols, corev1.Toleration{Operator: corev1.TolerationOpExists})
		d.note("tolerates every taint (operator Exists, no key)")
	case 2:
		seen := map[string]bool{}
		tols = nil
		for _, t := range taints {
			if !seen[t.Key] {
				seen[t.Key] = true
				tols = append(tols, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOpExists})
			}
		}
		d.note("tolerates its taints by key with operator Exists (any value)")
	case 3:
		for i := range tols {
			tols[i].Effect = corev1.TaintEffectNoExecute
		}
		d.note("tolerates its taints with the wrong effect (NoExecute)")
	case 4:
		tols = nil
		d.note("no tolerations")
	case 5:
		if o := otherDomain(p, own); o != nil {
			tols = append(tols, exact(o.Domain.Taints)...)
			d.note("also tolerates trust domain %s's taints", o.Domain.Name)
		}
	}
	pod.Spec.Tolerations = tols
}

// restrict makes the pod Pod Security restricted compliant, every
// container list included.
func restrict(pod *corev1.Pod) {
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr(true),
		RunAsUser:      ptr(int64(65532)),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	sc := func() *corev1.SecurityContext {
		return &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].SecurityContext = sc()
	}
	for i := range pod.Spec.InitContainers {
		pod.Spec.InitContainers[i].SecurityContext = sc()
	}
}

func (s *Space) otherTenants(home string) []string {
	seen := map[string]bool{home: true}
	var out []string
	for _, p := range s.Pools {
		for _, d := range p.Domains {
			if !seen[d.Namespace] {
				seen[d.Namespace] = true
				out = append(out, d.Namespace)
			}
		}
	}
	return out
}

func otherDomain(p PoolSpace, own *DomainSpace) *DomainSpace {
	if own == nil {
		return nil
	}
	for i := range p.Domains {
		if p.Domains[i].Domain.Name != own.Domain.Name {
			return &p.Domains[i]
		}
	}
	return nil
}

func (s *Space) otherPool(p PoolSpace) *PoolSpace {
	for i := range s.Pools {
		if s.Pools[i].Pool.Name != p.Pool.Name {
			return &s.Pools[i]
		}
	}
	return nil
}

func (s *Space) otherPoolNodes(p PoolSpace) []string {
	var out []string
	for _, o := range s.Pools {
		if o.Pool.Name != p.Pool.Name {
			out = append(out, o.Nodes...)
		}
	}
	return out
}

func (s *Space) otherAdvertised(r string) []string {
	var out []string
	for _, a := range s.Advertised {
		if a != r {
			out = append(out, a)
		}
	}
	return out
}

// unadvertisedNames are NVIDIA resource names a tenant might try; those
// no node advertises are drawn.
var unadvertisedNames = []string{"nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-3g.20gb", "nvidia.com/mig-1g.10gb"}

func (s *Space) unadvertised() []string {
	adv := map[string]bool{}
	for _, a := range s.Advertised {
		adv[a] = true
	}
	var out []string
	for _, n := range unadvertisedNames {
		if !adv[n] {
			out = append(out, n)
		}
	}
	return out
}

// firstKey is the pool label a tenant would widen: the one every pool
// sets (sku in the reference fleet), else the first by name.
func firstKey(m map[string]string) string {
	if _, ok := m["sku"]; ok {
		return "sku"
	}
	keys := slices.Sorted(maps.Keys(m))
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// Namespaces lists every namespace shapes are drawn into.
func (s *Space) Namespaces() []string {
	out := append([]string{s.Unlabelled}, s.otherTenants(s.Unlabelled)...)
	return out
}
