package fakegpu

// The simulated stack's own node API: what a fleet writes on a node so the
// controller knows its hardware, and what the controller records.
const (
	// AnnotationSKU and AnnotationGPUs are the node's GPU inventory: a
	// catalog key and a count. A node without them is not a GPU node.
	AnnotationSKU  = "fakegpu.gpupool.dev/sku"
	AnnotationGPUs = "fakegpu.gpupool.dev/gpus"
	// AnnotationKubelet set to "real" marks a GPU node run by a real
	// kubelet with the fake device plugin (cmd/fake-device-plugin): its
	// resources and its pods are the kubelet's, and the simulator only
	// publishes what GPU Feature Discovery and the MIG manager would.
	AnnotationKubelet = "fakegpu.gpupool.dev/kubelet"
	// AnnotationDevicePlugin set to "down" simulates a crashed device
	// plugin on the node (its pod gone): allocatable GPUs drop to 0.
	AnnotationDevicePlugin = "fakegpu.gpupool.dev/device-plugin"
	DevicePluginDown       = "down"
	// AnnotationGPUMemory on a pod declares the GPU memory (MiB) it uses
	// on a shared GPU; the simulated kubelet OOMKills the pod that makes a
	// physical GPU's pods exceed its memory.
	AnnotationGPUMemory = "fakegpu.gpupool.dev/gpu-memory-mib"

	// Controller bookkeeping on the node.
	AnnotationMIGApplied     = "fakegpu.gpupool.dev/mig-applied"
	AnnotationMIGFailed      = "fakegpu.gpupool.dev/mig-failed"
	AnnotationMIGSince       = "fakegpu.gpupool.dev/mig-reconfigure-since"
	AnnotationPluginError    = "fakegpu.gpupool.dev/device-plugin-error"
	AnnotationObservedConfig = "fakegpu.gpupool.dev/observed-config"
)

// GPU Operator deploy labels: which operands run on a node. The MIG
// manager pauses them while it reconfigures.
const (
	LabelDeployDevicePlugin = "nvidia.com/gpu.deploy.device-plugin"
	PausedForMIGChange      = "paused-for-mig-change"
)

// DeployLabels are the operands the MIG manager pauses (GO: controllers;
// MP: cmd/nvidia-mig-manager).
var DeployLabels = []string{
	LabelDeployDevicePlugin,
	"nvidia.com/gpu.deploy.gpu-feature-discovery",
	"nvidia.com/gpu.deploy.dcgm-exporter",
	"nvidia.com/gpu.deploy.dcgm",
}

// MIG config states (nvidia.com/mig.config.state).
const (
	MIGStatePending = "pending"
	MIGStateSuccess = "success"
	MIGStateFailed  = "failed"
)

// RealKubelet reports whether a node's kubelet and device plugin are real
// (AnnotationKubelet "real") rather than simulated.
func RealKubelet(annotations map[string]string) bool {
	return annotations[AnnotationKubelet] == "real"
}
