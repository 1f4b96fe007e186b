// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// RuntimeHandler is the containerd runtime handler the NVIDIA container
// toolkit installs.
const RuntimeHandler = "nvidia"

// Outcomes of the simulated kubelet for a GPU pod.
const (
	OutcomeRunning           = ""
	OutcomeAdmissionRejected = "UnexpectedAdmissionError"
	// OutcomeNoGPUVisible: the container runs without the NVIDIA driver
	// libraries (stack-facts §6: "silently gets none"); a GPU workload then
	// fails at CUDA init and the container crash-loops.
	OutcomeNoGPUVisible = "CrashLoopBackOff"
	OutcomeOOMKilled    = "OOMKilled"
)

// AnnotationVisibleDevices on a pod lists the device IDs the simulated
// device plugin's Allocate gave it (what NVIDIA_VISIBLE_DEVICES would hold).
const AnnotationVisibleDevices = "fakegpu.gpupool.dev/visible-devices"

// AnnotationNoGPU on a pod says why its containers cannot use the devices
// they were allocated (their runtime injects none; stack-facts §6). It is
// written with AnnotationVisibleDevices, in the same update.
const AnnotationNoGPU = "fakegpu.gpupool.dev/no-gpu"

// AnnotationAllocatedAt records when (unix ns) the devices were allocated:
// the order in which pods arrived on the GPU, which decides who runs out
// of memory first.
const AnnotationAllocatedAt = "fakegpu.gpupool.dev/allocated-at"

// GPUPod is what the simulated kubelet knows of a pod bound to a GPU node.
type GPUPod struct {
	Key string // namespace/name
	// Containers are the pod's containers in the order the kubelet
	// allocates devices: init containers (sidecars among them) first,
	// then app containers.
	Containers []ContainerRequest
	// RuntimeHandler is the handler of the pod's RuntimeClass ("" for none).
	RuntimeHandler string
	// MemoryMiB is the GPU memory the pod declares it uses (0: undeclared).
	MemoryMiB int64
	// Devices were allocated to the pod earlier (its annotation), at
	// AllocatedAt (unix ns).
	Devices     []string
	AllocatedAt int64
}

// ContainerRequest is one container's nvidia.com/ limits.
type ContainerRequest struct {
	Name string
	// Init: an init container; Restartable: a sidecar (restartPolicy
	// Always), which keeps its devices while the app containers run.
	Init, Restartable bool
	Limits            map[string]int64
}

// Verdict is what happens to one pod.
type Verdict struct {
	Outcome string
	Message string
	// Devices the pod was allocated (for running pods), distinct.
	Devices []string
}

// KubeletNode is what the simulated kubelet knows of its node.
type KubeletNode struct {
	Name   string
	Labels map[string]string
	// Capacity is the node's advertised nvidia.com resources (its status).
	Capacity  map[string]int64
	Inventory NodeInventory
	// Unhealthy device IDs: the plugin reported them so, the kubelet
	// allocates none of them.
	Unhealthy map[string]bool
}

// KubeletOn judges the GPU pods bound to one node, given in bind order, as
// the kubelet, the device plugin's Allocate and the GPU itself would:
//   - the kubelet calls Allocate once per container, init containers
//     first, each with that container's devices only; under
//     failRequestsGreaterThanOne a container asking more than 1 of a shared
//     resource fails the pod's admission (stack-facts §2);
//   - devices are allocated per container; a non-restartable init
//     container's devices are reused by the containers after it (k8s
//     devicemanager devicesToAllocate), so a pod holds the distinct
//     devices of all its containers;
//   - whether the container sees its GPU depends on the runtime handler and
//     the ClusterPolicy (stack-facts §6, GPUInjected); one that does not
//     crash-loops (a GPU workload fails at CUDA init);
//   - pods time-slicing one physical GPU share its memory: the pod whose
//     declared memory makes the sum exceed it is OOMKilled; under MPS each
//     client is pinned to its share (MPSClientLimits) and the pod declaring
//     more than that is OOMKilled alone.
func (s *Stack) KubeletOn(n KubeletNode, pods []GPUPod) map[string]Verdict {
	out := map[string]Verdict{}
	cfg, _ := s.DevicePluginConfigFor(n.Labels)
	shared := cfg.SharedReplicas()
	strategy, _ := cfg.SharingMode()

	taken := map[string]bool{}
	for id := range n.Unhealthy {
		taken[id] = true
	}
	for _, p := range pods {
		for _, d := range p.Devices {
			taken[d] = true
		}
	}
	memory := map[string]int64{} // physical GPU -> MiB declared by its pods
	for _, p := range pods {
		if !anyGPU(p.Containers) {
			continue
		}
		if cfg.FailsRequestsGreaterThanOne() {
			if name, k := overOne(p.Containers, shared); name != "" {
				out[p.Key] = Verdict{Outcome: OutcomeAdmissionRejected, Message: AllocateFailedMessage(SharedRequestTooLarge(name, k))}
				continue
			}
		}
		devices := p.Devices
		if len(devices) == 0 {
			var err error
			devices, _, err = allocatePod(n, p.Containers, shared, taken)
			if err != nil {
				out[p.Key] = Verdict{Outcome: OutcomeAdmissionRejected, Message: DeviceManagerRefusal(err)}
				continue
			}
		}
		if ok, why := s.GPUInjected(p.RuntimeHandler); !ok {
			out[p.Key] = Verdict{Outcome: OutcomeNoGPUVisible, Devices: devices, Message: "no NVIDIA GPU is usable in the container (CUDA error: no CUDA-capable device is detected): " + why}
			continue
		}
		v := Verdict{Devices: devices}
		if p.MemoryMiB > 0 {
			v = judgeMemory(v, p, n.Inventory.SKU, strategy, shared, memory)
		}
		out[p.Key] = v
	}
	return out
}

// judgeMemory decides whether a running pod's declared GPU memory fits.
func judgeMemory(v Verdict, p GPUPod, sku SKU, strategy string, shared map[string]int, memory map[string]int64) Verdict {
	gpus := sharedGPUs(v.Devices)
	if strategy == SharingMPS {
		for _, c := range p.Containers {
			for name, k := range c.Limits {
				if r := shared[name]; r > 1 && k > 0 {
					limit, _ := MPSClientLimits(sku, r)
					if p.MemoryMiB > int64(limit) {
						return Verdict{Outcome: OutcomeOOMKilled, Devices: v.Devices, Message: fmt.Sprintf(
							"CUDA out of memory: the pod declares %d MiB (%s), over its MPS client's pinned device memory limit of %d MiB (%d MiB / %d replicas)",
							p.MemoryMiB, AnnotationGPUMemory, limit, sku.MemoryMiB, r)}
					}
				}
			}
		}
		return v
	}
	limit := int64(sku.MemoryMiB)
	for _, gpu := range gpus {
		if memory[gpu]+p.MemoryMiB > limit {
			return Verdict{Outcome: OutcomeOOMKilled, Devices: v.Devices, Message: fmt.Sprintf(
				"CUDA out of memory on time-sliced %s %s: its other pods declare %d MiB, this pod %d MiB more (%s), over the GPU's %d MiB",
				sku.Product, gpu, memory[gpu], p.MemoryMiB, AnnotationGPUMemory, limit)}
		}
	}
	for _, gpu := range gpus {
		memory[gpu] += p.MemoryMiB
	}
	return v
}

// allocatePod hands out free device IDs container by container, as the
// kubelet's device manager does: a container takes the devices a finished
// (non-restartable) init container left first, then free ones; the pod's
// devices are the distinct union, and perContainer what each was given.
func allocatePod(n KubeletNode, containers []ContainerRequest, shared map[string]int, taken map[string]bool) (devices []string, perContainer map[string][]string, err error) {
	reusable := map[string][]string{}
	perContainer = map[string][]string{}
	held := map[string]bool{}
	for _, c := range containers {
		for _, name := range sortedKeys(c.Limits) {
			want := c.Limits[name]
			if want <= 0 || !strings.HasPrefix(name, LabelPrefix) {
				continue
			}
			got := append([]string(nil), reusable[name][:min(int64(len(reusable[name])), want)]...)
			ids := DeviceIDs(n.Name, name, n.Capacity[name], shared[name])
			var free []string
			healthy := 0
			for _, id := range ids {
				if !n.Unhealthy[id] {
					healthy++
				}
				if !taken[id] {
					free = append(free, id)
				}
			}
			// The device manager's own refusals (kubelet-facts §1.6), in
			// its order.
			if healthy == 0 {
				return nil, nil, fmt.Errorf("no healthy devices present; cannot allocate unhealthy devices %s", name)
			}
			if needed := want - int64(len(got)); int64(len(free)) < needed {
				return nil, nil, fmt.Errorf("requested number of devices unavailable for %s. Requested: %d, Available: %d", name, needed, len(free))
			}
			for _, id := range free {
				if int64(len(got)) == want {
					break
				}
				got = append(got, id)
				taken[id] = true
			}
			perContainer[c.Name] = append(perContainer[c.Name], got...)
			if c.Init && !c.Restartable {
				reusable[name] = got // back to the pod's pool when it exits
			} else {
				reusable[name] = reusable[name][min(int64(len(reusable[name])), want):]
			}
			for _, id := range got {
				if !held[id] {
					held[id] = true
					devices = append(devices, id)
				}
			}
		}
	}
	return devices, perContainer, nil
}

// ContainerDevices splits a pod's allocated devices among its containers
// as allocatePod gave them: with only the pod's own devices free, the
// same walk in the plugin's order hands each container the same IDs.
func (s *Stack) ContainerDevices(n KubeletNode, containers []ContainerRequest, devices []string) map[string][]string {
	cfg, _ := s.DevicePluginConfigFor(n.Labels)
	taken := map[string]bool{}
	own := map[string]bool{}
	for _, d := range devices {
		own[d] = true
	}
	for name, k := range n.Capacity {
		for _, id := range DeviceIDs(n.Name, name, k, cfg.SharedReplicas()[name]) {
			if !own[id] {
				taken[id] = true
			}
		}
	}
	_, per, err := allocatePod(n, containers, cfg.SharedReplicas(), taken)
	if err != nil {
		return nil
	}
	return per
}

// DeviceIDs lists the IDs of the count devices a node advertises of
// resource, in the order the device plugin lists them. They are named the
// way the real plugin names them: a GPU UUID, with "::<replica>" for the
// replicas of a shared GPU (replicas > 1), or a MIG device UUID. The UUIDs
// are derived from the node name, so they are stable across restarts and
// the same wherever they are computed (the simulated kubelet, the kubelet
// plugin).
func DeviceIDs(node, resource string, count int64, replicas int) []string {
	ids := make([]string, 0, max(count, 0))
	for k := int64(0); k < count; k++ {
		ids = append(ids, deviceID(node, resource, k, replicas))
	}
	return ids
}

// deviceID names the k-th device of a resource (see DeviceIDs).
func deviceID(node, resource string, k int64, replicas int) string {
	uuid := func(parts ...string) string { return nodeUUID(node, parts...) }
	switch {
	case replicas > 1:
		gpu := k / int64(replicas)
		return fmt.Sprintf("GPU-%s::%d", uuid("gpu", strconv.FormatInt(gpu, 10)), k%int64(replicas))
	case strings.HasPrefix(resource, ResourceMIGPrefix):
		return "MIG-" + uuid(resource, strconv.FormatInt(k, 10))
	}
	return "GPU-" + uuid("gpu", strconv.FormatInt(k, 10))
}

// nodeUUID is a UUID-shaped hash of a node name and parts: stable, and
// the same wherever it is computed.
func nodeUUID(node string, parts ...string) string {
	sum := sha256.Sum256([]byte(node + "/" + strings.Join(parts, "/")))
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// SharedRequestTooLarge is the error the device plugin's Allocate returns
// under failRequestsGreaterThanOne when a container asks for requested (> 1)
// devices of the shared resource advertised as resource: it quotes the
// advertised name, renamed or not (DP@1b826acc internal/plugin/server.go
// Allocate, "invalid allocation request for %q: %w"; internal/rm/rm.go
// ValidateRequest, errInvalidRequest).
func SharedRequestTooLarge(resource string, requested int64) error {
	return fmt.Errorf("invalid allocation request for %q: invalid request: maximum request size for shared resources is 1; found %d",
		resource, requested)
}

// AllocateFailedMessage is the pod's status.message when the kubelet fails
// it on a plugin's Allocate error: gRPC turns the plugin's plain error into
// code Unknown, the kubelet wraps it (k8s admission/errors.go
// unexpectedAdmissionError, "Allocate failed due to %v, which is
// unexpected") and rejectPod prefixes "Pod was rejected: ".
func AllocateFailedMessage(pluginErr error) string {
	return "Pod was rejected: Allocate failed due to rpc error: code = Unknown desc = " + pluginErr.Error() + ", which is unexpected"
}

// DeviceManagerRefusal is the pod's status.message when the kubelet's
// device manager itself refuses an allocation (kubelet-facts §1.6): no
// gRPC in between, the same wrapping and prefix as AllocateFailedMessage.
func DeviceManagerRefusal(err error) string {
	return "Pod was rejected: Allocate failed due to " + err.Error() + ", which is unexpected"
}

// sharedGPUs returns the physical GPUs behind shared device IDs.
func sharedGPUs(devices []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range devices {
		if i := strings.Index(d, "::"); i > 0 && !seen[d[:i]] {
			seen[d[:i]] = true
			out = append(out, d[:i])
		}
	}
	return out
}

// overOne returns the first shared resource one container asks more than
// one of: Allocate sees each container's request on its own (stack-facts §2).
func overOne(containers []ContainerRequest, shared map[string]int) (string, int64) {
	for _, c := range containers {
		for _, k := range sortedKeys(c.Limits) {
			if _, ok := shared[k]; ok && c.Limits[k] > 1 {
				return k, c.Limits[k]
			}
		}
	}
	return "", 0
}

func anyGPU(containers []ContainerRequest) bool {
	for _, c := range containers {
		for k, v := range c.Limits {
			if strings.HasPrefix(k, LabelPrefix) && v > 0 {
				return true
			}
		}
	}
	return false
}

// SortPods orders pods as a kubelet sees them arrive: pods already
// allocated devices first, in allocation order, then by creation time
// (one-second resolution), then name.
func SortPods(pods []GPUPod, created map[string]int64) {
	sort.SliceStable(pods, func(i, j int) bool {
		ai, aj := len(pods[i].Devices) > 0, len(pods[j].Devices) > 0
		if ai != aj {
			return ai
		}
		if ai && pods[i].AllocatedAt != pods[j].AllocatedAt {
			return pods[i].AllocatedAt < pods[j].AllocatedAt
		}
		ci, cj := created[pods[i].Key], created[pods[j].Key]
		if ci != cj {
			return ci < cj
		}
		return pods[i].Key < pods[j].Key
	})
}
