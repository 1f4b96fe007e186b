// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// What a container can see: the GPUs the NVIDIA runtime puts in it, which
// it reads from the container's own OCI spec, not from what the kubelet
// allocated (docs/facts/gpu-access-facts.md, "access" below). Everything
// here is pure: the controller gathers the inputs from the API.

// EnvVisibleDevices is the variable the toolkit reads (access §1).
const EnvVisibleDevices = "NVIDIA_VISIBLE_DEVICES"

// VolumeMountDir is where the volume-mounts strategy mounts one /dev/null
// per allocated device (access §1.1(b), §3.2).
const VolumeMountDir = "/var/run/nvidia-container-devices"

// Device-list strategies of the device plugin (access §3.1).
const (
	ListEnvvar         = "envvar"
	ListVolumeMounts   = "volume-mounts"
	ListCDIAnnotations = "cdi-annotations"
	ListCDICRI         = "cdi-cri"
)

// DeviceListStrategies are the valid values of DEVICE_LIST_STRATEGY.
var DeviceListStrategies = []string{ListEnvvar, ListVolumeMounts, ListCDIAnnotations, ListCDICRI}

// CDIKindManagement and CDIKindDevicePlugin are the CDI device kinds a
// fully-qualified name in the variable may name (access §1.8).
const (
	CDIKindManagement   = "management.nvidia.com/gpu"
	CDIKindDevicePlugin = "k8s.device-plugin.nvidia.com/gpu"
)

// EnvVar is one entry of a container's environment.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Mount is a bind mount of a container: host source at container path.
type Mount struct{ Source, Destination string }

// ImageEnv is the ENV an image sets, as far as the facts know it: the CUDA
// base images end with NVIDIA_VISIBLE_DEVICES=all and
// NVIDIA_DRIVER_CAPABILITIES=compute,utility (access §2.1), and so does
// every image built from them. Admission cannot see it (access §2.3).
func ImageEnv(image string) []EnvVar {
	repo, _, _ := splitImage(image)
	switch repo {
	case "nvcr.io/nvidia/cuda", "nvidia/cuda":
		return []EnvVar{{EnvVisibleDevices, "all"}, {"NVIDIA_DRIVER_CAPABILITIES", "compute,utility"}}
	}
	return nil
}

// AnnotationImageEnv on a node declares the ENV of images its pods may
// run (a JSON object: image reference to its ENV entries, ImageEnvs), as
// the node's runtime reads it from an image's config when it pulls it.
// An image built FROM a CUDA image under a team's own name sets the
// variable too (access §2.1), and only its config says so: the fleet
// declares such images (spec.images).
const AnnotationImageEnv = "fakegpu.gpupool.dev/image-env"

// ImageEnvs maps image references to the ENV their configs set. A
// reference without a tag or digest stands for every tag and digest of its
// repository.
type ImageEnvs map[string][]EnvVar

// DecodeImageEnvs reads a node's AnnotationImageEnv (none: nil).
func DecodeImageEnvs(annotations map[string]string) (ImageEnvs, error) {
	raw, ok := annotations[AnnotationImageEnv]
	if !ok {
		return nil, nil
	}
	var out ImageEnvs
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", AnnotationImageEnv, err)
	}
	return out, nil
}

// Encode is the annotation's value.
func (e ImageEnvs) Encode() string {
	b, _ := json.Marshal(e) // strings only: cannot fail
	return string(b)
}

// Env is the ENV image sets: the entry declared for it (by tag or digest
// first, then for its repository), else what the facts know (ImageEnv).
func (e ImageEnvs) Env(image string) []EnvVar {
	repo, tag, digest := splitImage(image)
	var refs []string
	if digest != "" {
		refs = append(refs, repo+"@"+digest)
	}
	if tag != "" {
		refs = append(refs, repo+":"+tag)
	}
	for _, ref := range append(refs, repo) {
		if env, ok := e[ref]; ok {
			return env
		}
	}
	return ImageEnv(image)
}

// NormalizeImage is the form ImageEnvs keys take: Docker Hub's implicit
// registry and library/ dropped, tag and digest kept.
func NormalizeImage(image string) string {
	repo, tag, digest := splitImage(image)
	switch {
	case digest != "":
		return repo + "@" + digest
	case tag != "":
		return repo + ":" + tag
	}
	return repo
}

// splitImage splits an image reference into its repository (Docker Hub's
// implicit registry and library/ dropped), tag and digest.
func splitImage(image string) (repo, tag, digest string) {
	repo = image
	if i := strings.Index(repo, "@"); i >= 0 {
		repo, digest = repo[:i], repo[i+1:]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo, tag = repo[:i], repo[i+1:]
	}
	repo = strings.TrimPrefix(strings.TrimPrefix(repo, "docker.io/"), "library/")
	return repo, tag, digest
}

// MergeEnv is the environment the runtime receives: the image's ENV first,
// then what the device plugin's Allocate returned, then the pod spec's
// (envFrom, then env, as the kubelet resolved them). The toolkit keeps the
// last entry of a name, so the pod spec wins over the plugin, and the plugin
// over the image (access §1.9: inferred from the kubelet and containerd's
// code, not yet seen on a live node).
func MergeEnv(image, plugin, spec []EnvVar) []EnvVar {
	out := make([]EnvVar, 0, len(image)+len(plugin)+len(spec))
	out = append(out, image...)
	out = append(out, plugin...)
	return append(out, spec...)
}

// lookupEnv is the value the toolkit reads: the last entry of name.
func lookupEnv(env []EnvVar, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if env[i].Name == name {
			return env[i].Value, true
		}
	}
	return "", false
}

// ToolkitSettings are the container toolkit's config.toml keys that decide
// which requests it honours (access §1.3, §1.4), as the ClusterPolicy's
// spec.toolkit.env sets them. Zero values are the toolkit's defaults.
type ToolkitSettings struct {
	// EnvvarRefusedUnprivileged: accept-nvidia-visible-devices-envvar-when-
	// unprivileged = false (default true).
	EnvvarRefusedUnprivileged bool
	// VolumeMountsAccepted: accept-nvidia-visible-devices-as-volume-mounts
	// = true (default false).
	VolumeMountsAccepted bool
}

// DeviceListStrategy is what the device plugin runs with on every node:
// the GPU Operator always sets DEVICE_LIST_STRATEGY on the plugin (envvar,
// or envvar,cdi-annotations with CDI on), and the environment beats the
// config file's flags.plugin.deviceListStrategy (stack-facts §1 precedence;
// access §4.3), so only spec.devicePlugin.env can change it (access §4.1:
// the user's env is applied last).
func (p ClusterPolicySettings) DeviceListStrategy() []string {
	v := p.DevicePluginEnv["DEVICE_LIST_STRATEGY"]
	if v == "" {
		if p.CDIEnabled {
			return []string{ListEnvvar, ListCDIAnnotations}
		}
		return []string{ListEnvvar}
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		out = append(out, strings.TrimSpace(s))
	}
	return out
}

// DeviceIDStrategy is DEVICE_ID_STRATEGY: "uuid" (the Operator's) or "index".
func (p ClusterPolicySettings) DeviceIDStrategy() string {
	if v := p.DevicePluginEnv["DEVICE_ID_STRATEGY"]; v != "" {
		return v
	}
	return "uuid"
}

// AllocateResponse is what the device plugin's Allocate returns for one
// container's devices (access §3.2, DP getAllocateResponse): an env,
// /dev/null mounts, or CDI device names, per the strategies in the list.
type AllocateResponse struct {
	Env    []EnvVar
	Mounts []Mount
	// CDI are CdiDevices (cdi-cri), which containerd injects under any
	// runtime handler; CDIAnnotations (cdi-annotations) only the NVIDIA
	// runtime reads, and only with CDI on (access §1.1(a), §3.2).
	CDI, CDIAnnotations []string
}

// Allocate is the device plugin's answer for devices (their IDs as the
// plugin advertises them) on a node whose GPUs are gpus (UUIDs by index).
func (p ClusterPolicySettings) Allocate(devices []string, gpus []string) AllocateResponse {
	var r AllocateResponse
	if len(devices) == 0 {
		return r
	}
	ids := make([]string, 0, len(devices))
	for _, d := range devices {
		id := physicalID(d)
		if p.DeviceIDStrategy() == "index" {
			if i := slices.Index(gpus, id); i >= 0 {
				id = strconv.Itoa(i)
			}
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	for _, s := range p.DeviceListStrategy() {
		switch s {
		case ListEnvvar:
			r.Env = append(r.Env, EnvVar{EnvVisibleDevices, strings.Join(ids, ",")})
		case ListVolumeMounts:
			r.Env = append(r.Env, EnvVar{EnvVisibleDevices, VolumeMountDir})
			for _, id := range ids {
				r.Mounts = append(r.Mounts, Mount{Source: "/dev/null", Destination: VolumeMountDir + "/" + id})
			}
		case ListCDIAnnotations, ListCDICRI:
			to := &r.CDI
			if s == ListCDIAnnotations {
				to = &r.CDIAnnotations
			}
			for _, id := range ids {
				*to = append(*to, CDIKindDevicePlugin+"="+id)
			}
		}
	}
	return r
}

// physicalID is the ID the plugin hands the runtime for an advertised
// device: a time-slicing replica's "::n" suffix stripped (access §3.2).
func physicalID(device string) string {
	if i := strings.Index(device, "::"); i > 0 {
		return device[:i]
	}
	return device
}

// ContainerAccess is what the runtime is given for one container.
type ContainerAccess struct {
	Name string
	// Handler is the pod's runtime handler ("" for none).
	Handler string
	// Privileged: privileged, or CAP_SYS_ADMIN added (access §1.5).
	Privileged bool
	// Env is the final environment (MergeEnv).
	Env []EnvVar
	// Mounts are the container's bind mounts whose host source is a file
	// the toolkit may read as a request: the plugin's, and the pod's own
	// hostPath volumes (access §1.11).
	Mounts []Mount
	// CDI are CDI device names containerd injects for it: the plugin's
	// cdi-cri answer or a DRA driver's prepared devices. CDIAnnotations are
	// the plugin's cdi-annotations answer, read by the NVIDIA runtime
	// alone, with CDI on.
	CDI, CDIAnnotations []string
	// Allocated are the physical devices (GPU or MIG UUIDs, DRA CDI
	// devices) the kubelet allocated to this container.
	Allocated []string
}

// Sight is what one container sees, and how.
type Sight struct {
	// GPUs the container sees: GPU or MIG UUIDs of the node, or the DRA
	// CDI devices injected.
	GPUs []string
	// Unallocated are the GPUs it sees beyond its allocation.
	Unallocated []string
	// Via says which request the runtime honoured ("" when it sees none),
	// or why an allocation is not seen.
	Via string
}

// NodeGPUs are the devices of one node as the runtime resolves names: the
// physical GPUs by index, and MIG devices by UUID with their GPU's index.
type NodeGPUs struct {
	GPUs []string
	MIG  map[string]int
}

// Sees computes what the NVIDIA runtime exposes to a container on node n
// (access §1.1, §1.5, §1.6, §3.2, §5):
//   - under runc (a handler that is not NVIDIA's, or no handler while
//     nvidia is not containerd's default) nothing but its CDI devices, and
//     every GPU if privileged (containerd passes all host devices);
//   - under the NVIDIA runtime the first of: CDI devices; with
//     as-volume-mounts, the /dev/null mounts under VolumeMountDir; the
//     variable, if the container is privileged or the toolkit accepts it
//     from unprivileged ones. A container whose CDI spec was applied ends
//     with NVIDIA_VISIBLE_DEVICES=void (access §3.2, an inference the doc
//     makes for the toolkit's own specs; taken to hold for NVIDIA's DRA
//     driver's too, which the facts do not say), so a CDI-injected
//     container sees its CDI devices only.
func (s *Stack) Sees(n NodeGPUs, c ContainerAccess) Sight {
	if !s.nvidiaRuns(c.Handler) {
		if c.Privileged {
			return sightOf(c, n.GPUs, "privileged: containerd passes every host device (/dev/nvidia*)")
		}
		if len(c.CDI) > 0 {
			return sightOf(c, c.CDI, "CDI devices injected")
		}
		return Sight{Via: "runtime handler is not NVIDIA's: the variable is ignored"}
	}
	rt := RuntimeSettings{Toolkit: s.toolkit()}
	if s.Policy != nil {
		rt.CDIEnabled = s.Policy.CDIEnabled
	}
	return rt.Sees(n, c)
}

// RuntimeSettings is what the NVIDIA runtime on a node decides with: the
// toolkit's config.toml keys and whether CDI is on (the ClusterPolicy's
// spec.toolkit.env and spec.cdi.enabled).
type RuntimeSettings struct {
	Toolkit    ToolkitSettings `json:"toolkit"`
	CDIEnabled bool            `json:"cdiEnabled"`
}

// Sees is what the NVIDIA runtime exposes to container c on node n: the
// first of its CDI devices; with as-volume-mounts, the /dev/null mounts
// under VolumeMountDir; the variable, if the container is privileged or
// the toolkit accepts it from unprivileged ones (access §1.1, §1.5, §1.6).
// It reads only what an OCI spec carries (env, mounts, capabilities,
// annotations), so a runtime on a real node can apply it to one.
func (rt RuntimeSettings) Sees(n NodeGPUs, c ContainerAccess) Sight {
	cdi := c.CDI
	if rt.CDIEnabled {
		for _, d := range c.CDIAnnotations {
			if !slices.Contains(cdi, d) {
				cdi = append(cdi, d)
			}
		}
	}
	if len(cdi) > 0 {
		return sightOf(c, cdi, "CDI devices injected (the CDI spec ends the env with NVIDIA_VISIBLE_DEVICES=void)")
	}
	if rt.Toolkit.VolumeMountsAccepted {
		var ids []string
		for _, m := range c.Mounts {
			if m.Source == "/dev/null" && strings.HasPrefix(m.Destination, VolumeMountDir+"/") {
				ids = append(ids, strings.TrimPrefix(m.Destination, VolumeMountDir+"/"))
			}
		}
		if len(ids) > 0 {
			return sightOf(c, n.resolve(ids, rt.cdiKinds()), "/dev/null mounts under "+VolumeMountDir)
		}
	}
	v, set := lookupEnv(c.Env, EnvVisibleDevices)
	if !set {
		// A legacy CUDA image (CUDA_VERSION set, NVIDIA_REQUIRE_CUDA unset)
		// means all (access §1.6).
		_, cuda := lookupEnv(c.Env, "CUDA_VERSION")
		_, req := lookupEnv(c.Env, "NVIDIA_REQUIRE_CUDA")
		if !cuda || req {
			return unseen(c, "")
		}
		v = "all"
	}
	ids := splitDevices(v)
	if len(ids) == 0 || slices.Contains(ids, "void") || slices.Contains(ids, "none") {
		return unseen(c, "")
	}
	if !c.Privileged && rt.Toolkit.EnvvarRefusedUnprivileged {
		return unseen(c, fmt.Sprintf("%s=%s ignored: the toolkit refuses the variable from unprivileged containers", EnvVisibleDevices, v))
	}
	return sightOf(c, n.resolve(ids, rt.cdiKinds()), EnvVisibleDevices+"="+v)
}

// sightOf is a container seeing gpus by via, with those beyond its
// allocation marked.
func sightOf(c ContainerAccess, gpus []string, via string) Sight {
	out := Sight{GPUs: gpus, Via: via}
	for _, g := range gpus {
		if !slices.Contains(c.Allocated, g) {
			out.Unallocated = append(out.Unallocated, g)
		}
	}
	return out
}

// unseen is a container that sees no GPU; why says so when it was
// allocated some.
func unseen(c ContainerAccess, why string) Sight {
	if len(c.Allocated) > 0 && why == "" {
		why = "no request the runtime honours reaches it"
	}
	if len(c.Allocated) == 0 {
		why = ""
	}
	return Sight{Via: why}
}

// nvidiaRuns reports whether the NVIDIA runtime processes a container of
// handler (GPUInjected's rules, access §5).
func (s *Stack) nvidiaRuns(handler string) bool {
	ok, _ := s.GPUInjected(handler)
	return ok
}

func (s *Stack) toolkit() ToolkitSettings {
	if s.Policy == nil {
		return ToolkitSettings{}
	}
	return s.Policy.Toolkit
}

// cdiKinds are the CDI kinds whose specs exist on a node: the management
// spec and the plugin's, only with CDI on (access §1.8, §4.3; inference).
func (rt RuntimeSettings) cdiKinds() []string {
	if !rt.CDIEnabled {
		return nil
	}
	return []string{CDIKindManagement, CDIKindDevicePlugin}
}

// splitDevices splits the variable's comma list (access §1.6).
func splitDevices(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// resolve turns the names of a request into the node's devices: "all",
// indices ("0", or "0:1" for a MIG device, taken as its GPU), GPU and MIG
// UUIDs, and fully-qualified CDI names of a kind whose spec exists. A name
// that matches nothing selects nothing (the real runtime then fails the
// container; either way it sees no GPU by it).
func (n NodeGPUs) resolve(ids []string, cdiKinds []string) []string {
	var out []string
	add := func(g string) {
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	for _, id := range ids {
		if kind, name, ok := strings.Cut(id, "="); ok && strings.Contains(kind, "/") {
			if !slices.Contains(cdiKinds, kind) {
				continue
			}
			id = name
		}
		switch {
		case id == "all":
			for _, g := range n.GPUs {
				add(g)
			}
		case slices.Contains(n.GPUs, id):
			add(id)
		case strings.HasPrefix(id, "MIG-"):
			if _, ok := n.MIG[id]; ok {
				add(id)
			}
		default:
			idx := id
			if i := strings.Index(idx, ":"); i > 0 {
				idx = idx[:i]
			}
			if k, err := strconv.Atoi(idx); err == nil && k >= 0 && k < len(n.GPUs) {
				add(n.GPUs[k])
			}
		}
	}
	return out
}

// NodeGPUsOf names a node's physical GPUs as the plugin does (DeviceIDs)
// and its MIG devices by the UUIDs of its advertised MIG resources.
func NodeGPUsOf(node string, gpus int, capacity map[string]int64) NodeGPUs {
	out := NodeGPUs{GPUs: DeviceIDs(node, ResourceGPU, int64(gpus), 1), MIG: map[string]int{}}
	for _, name := range sortedKeys(capacity) {
		if strings.HasPrefix(name, ResourceMIGPrefix) {
			for _, id := range DeviceIDs(node, name, capacity[name], 1) {
				out.MIG[id] = 0
			}
		}
	}
	return out
}

// AllocatedDevices maps advertised device IDs to what the runtime sees of
// them: replicas to their GPU.
func AllocatedDevices(devices []string) []string {
	var out []string
	for _, d := range devices {
		if id := physicalID(d); !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// AnnotationGPUSight on a pod bound to a simulated GPU node records what
// each of its containers sees (a JSON PodSight), written when its
// containers would start: the env is resolved then, so later changes to
// its ConfigMaps do not move it; a container restarted with another image,
// or an ephemeral container added, is judged when it starts. A real kubelet writes nothing there; it
// is the simulator's record for checks and people.
const AnnotationGPUSight = "fakegpu.gpupool.dev/gpu-sight"

// Events the simulated kubelet records on a pod whose containers see what
// they were not given, or do not see what they were.
const (
	EventGPUVisibleUnallocated = "GPUVisibleWithoutAllocation"
	EventAllocatedGPUUnseen    = "AllocatedGPUNotVisible"
)

// ContainerSight is one container's entry of AnnotationGPUSight.
type ContainerSight struct {
	Sees        []string `json:"sees,omitempty"`
	Allocated   []string `json:"allocated,omitempty"`
	Unallocated []string `json:"unallocated,omitempty"`
	Via         string   `json:"via,omitempty"`
	// Image the container started with: a tenant may change it after
	// admission, and the container restarts with the new image's ENV.
	Image string `json:"image,omitempty"`
}

// PodSight is AnnotationGPUSight: container name to what it sees.
type PodSight map[string]ContainerSight

// DecodePodSight reads AnnotationGPUSight (ok false: not written yet).
func DecodePodSight(annotations map[string]string) (PodSight, bool, error) {
	v, ok := annotations[AnnotationGPUSight]
	if !ok {
		return nil, false, nil
	}
	var out PodSight
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, true, fmt.Errorf("annotation %s: %w", AnnotationGPUSight, err)
	}
	return out, true, nil
}
