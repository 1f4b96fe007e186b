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
// toolkit installs; a pod under any other handler gets no GPU.
const RuntimeHandler = "nvidia"

// Outcomes of the simulated kubelet for a GPU pod.
const (
	OutcomeRunning           = ""
	OutcomeAdmissionRejected = "UnexpectedAdmissionError"
	OutcomeNoGPUVisible      = "CrashLoopBackOff"
	OutcomeOOMKilled         = "OOMKilled"
)

// AnnotationVisibleDevices on a pod lists the device IDs the simulated
// device plugin's Allocate gave it (what NVIDIA_VISIBLE_DEVICES would hold).
const AnnotationVisibleDevices = "fakegpu.gpupool.dev/visible-devices"

// AnnotationAllocatedAt records when (unix ns) the devices were allocated:
// the order in which pods arrived on the GPU, which decides who runs out
// of memory first.
const AnnotationAllocatedAt = "fakegpu.gpupool.dev/allocated-at"

// GPUPod is what the simulated kubelet knows of a pod bound to a GPU node.
type GPUPod struct {
	Key string // namespace/name
	// Limits are the pod's nvidia.com/ limits, summed over its containers.
	Limits map[string]int64
	// RuntimeHandler is the handler of the pod's RuntimeClass ("" for none).
	RuntimeHandler string
	// MemoryMiB is the GPU memory the pod declares it uses (0: undeclared).
	MemoryMiB int64
	// Devices were allocated to the pod earlier (its annotation), at
	// AllocatedAt (unix ns).
	Devices     []string
	AllocatedAt int64
}

// Verdict is what happens to one pod.
type Verdict struct {
	Outcome string
	Message string
	// Devices the pod was allocated (for running pods).
	Devices []string
}

// Kubelet judges the GPU pods bound to one node, given in bind order, as the
// kubelet, the device plugin's Allocate and the GPU itself would:
//   - a request of more than 1 of a shared resource under
//     failRequestsGreaterThanOne fails admission (DP: internal/rm);
//   - a GPU pod not run by the nvidia runtime handler sees no GPU and
//     crash-loops;
//   - every other GPU pod is allocated distinct devices (replicas of a
//     shared GPU are distinct devices on the same physical GPU);
//   - pods time-slicing one physical GPU share its memory: the pod whose
//     declared memory makes the sum exceed it is OOMKilled.
//
// capacity is the node's advertised nvidia.com resources (its status).
func (s *Stack) Kubelet(node string, nodeLabels map[string]string, capacity map[string]int64, inv NodeInventory, pods []GPUPod) map[string]Verdict {
	out := map[string]Verdict{}
	cfg, _ := s.DevicePluginConfigFor(nodeLabels)
	shared := cfg.SharedReplicas()

	taken := map[string]bool{}
	for _, p := range pods {
		for _, d := range p.Devices {
			taken[d] = true
		}
	}
	memory := map[string]int64{} // physical GPU -> MiB declared by its pods
	for _, p := range pods {
		if !anyGPU(p.Limits) {
			continue
		}
		if cfg.FailsRequestsGreaterThanOne() {
			if name, n := overOne(p.Limits, shared); name != "" {
				// The kubelet wraps the plugin's gRPC error this way.
				out[p.Key] = Verdict{Outcome: OutcomeAdmissionRejected, Message: AllocateFailedMessage(SharedRequestTooLarge(name, n))}
				continue
			}
		}
		if p.RuntimeHandler != RuntimeHandler {
			handler := "the default runtime (no RuntimeClass)"
			if p.RuntimeHandler != "" {
				handler = "runtime handler " + p.RuntimeHandler
			}
			out[p.Key] = Verdict{Outcome: OutcomeNoGPUVisible, Message: fmt.Sprintf(
				"no NVIDIA GPU is visible in the container: it runs under %s, not %q, so the NVIDIA container runtime never injected the devices (CUDA error: no CUDA-capable device is detected)", handler, RuntimeHandler)}
			continue
		}
		devices := p.Devices
		if len(devices) == 0 {
			var err error
			devices, err = allocate(node, p.Limits, shared, capacity, taken)
			if err != nil {
				out[p.Key] = Verdict{Outcome: OutcomeAdmissionRejected, Message: "Allocate failed: " + err.Error()}
				continue
			}
		}
		v := Verdict{Devices: devices}
		if p.MemoryMiB > 0 {
			for _, gpu := range sharedGPUs(devices) {
				limit := int64(inv.SKU.MemoryMiB)
				if memory[gpu]+p.MemoryMiB > limit {
					v = Verdict{Outcome: OutcomeOOMKilled, Devices: devices, Message: fmt.Sprintf(
						"CUDA out of memory on time-sliced %s %s: its other pods declare %d MiB, this pod %d MiB more (%s), over the GPU's %d MiB",
						inv.SKU.Product, gpu, memory[gpu], p.MemoryMiB, AnnotationGPUMemory, limit)}
					break
				}
			}
			if v.Outcome == OutcomeRunning {
				for _, gpu := range sharedGPUs(devices) {
					memory[gpu] += p.MemoryMiB
				}
			}
		}
		out[p.Key] = v
	}
	return out
}

// allocate hands out free device IDs for each nvidia.com limit, as the
// device plugin's Allocate would, and marks them taken.
func allocate(node string, limits map[string]int64, shared map[string]int, advertised map[string]int64, taken map[string]bool) ([]string, error) {
	var devices []string
	for _, name := range sortedKeys(limits) {
		want := limits[name]
		if want == 0 || !strings.HasPrefix(name, LabelPrefix) {
			continue
		}
		var got []string
		for _, id := range DeviceIDs(node, name, advertised[name], shared[name]) {
			if int64(len(got)) == want {
				break
			}
			if !taken[id] {
				got = append(got, id)
			}
		}
		if int64(len(got)) < want {
			return nil, fmt.Errorf("requested %d %s, only %d free on the node", want, name, len(got))
		}
		for _, id := range got {
			taken[id] = true
		}
		devices = append(devices, got...)
	}
	return devices, nil
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
	uuid := func(parts ...string) string {
		sum := sha256.Sum256([]byte(node + "/" + strings.Join(parts, "/")))
		h := hex.EncodeToString(sum[:16])
		return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
	}
	switch {
	case replicas > 1:
		gpu := k / int64(replicas)
		return fmt.Sprintf("GPU-%s::%d", uuid("gpu", strconv.FormatInt(gpu, 10)), k%int64(replicas))
	case strings.HasPrefix(resource, ResourceMIGPrefix):
		return "MIG-" + uuid(resource, strconv.FormatInt(k, 10))
	}
	return "GPU-" + uuid("gpu", strconv.FormatInt(k, 10))
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

// overOne returns the first shared resource the pod asks more than one of.
func overOne(limits map[string]int64, shared map[string]int) (string, int64) {
	for _, k := range sortedKeys(limits) {
		if _, ok := shared[k]; ok && limits[k] > 1 {
			return k, limits[k]
		}
	}
	return "", 0
}

func anyGPU(limits map[string]int64) bool {
	for k, v := range limits {
		if strings.HasPrefix(k, LabelPrefix) && v > 0 {
			return true
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
