package fakegpu

// The simulated stack's own node API: what a fleet writes on a node so the
// controller knows its hardware, and what the controller records.
const (
	// AnnotationSKU and AnnotationGPUs are the node's GPU inventory: a
	// catalog key and a count. A node without them is not a GPU node.
	AnnotationSKU  = "fakegpu.gpupool.dev/sku"
	AnnotationGPUs = "fakegpu.gpupool.dev/gpus"
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
