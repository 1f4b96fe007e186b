// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

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
	// AnnotationDRA names how NVIDIA's DRA driver serves the node's GPUs
	// (a DRAModes value; absent: no DRA driver on the node), and
	// AnnotationDRAShares its --consumable-shares (DRAConfig).
	AnnotationDRA       = "fakegpu.gpupool.dev/dra"
	AnnotationDRAShares = "fakegpu.gpupool.dev/dra-consumable-shares"
	// AnnotationGPUMemory on a pod declares the GPU memory (MiB) it uses
	// on a shared GPU; the simulated kubelet OOMKills the pod that makes a
	// physical GPU's pods exceed its memory.
	AnnotationGPUMemory = "fakegpu.gpupool.dev/gpu-memory-mib"

	// Controller bookkeeping on the node. The MIG manager's: the layout it
	// last applied, the label value its last run failed on (the last run's
	// label is the one of the two that is set, failed first), when the
	// running reconfiguration started, and the GPUs' MIG state
	// (EncodeGPUStates), which a layout that leaves GPUs out does not reset.
	AnnotationMIGApplied     = "fakegpu.gpupool.dev/mig-applied"
	AnnotationMIGFailed      = "fakegpu.gpupool.dev/mig-failed"
	AnnotationMIGSince       = "fakegpu.gpupool.dev/mig-reconfigure-since"
	AnnotationMIGGPUs        = "fakegpu.gpupool.dev/mig-gpus"
	AnnotationPluginError    = "fakegpu.gpupool.dev/device-plugin-error"
	AnnotationDRAError       = "fakegpu.gpupool.dev/dra-driver-error"
	AnnotationObservedConfig = "fakegpu.gpupool.dev/observed-config"
)

// Node labels the GPU Operator writes (stack-facts §6 "Node labels GO writes").
const (
	// LabelGPUPresent marks a GPU node (GO, from NFD's PCI labels; the
	// simulator has no NFD and takes every node with a GPU inventory).
	LabelGPUPresent = "nvidia.com/gpu.present"

	// Deploy labels: an operand's DaemonSet runs on a node only while its
	// label is "true".
	LabelDeployDevicePlugin = "nvidia.com/gpu.deploy.device-plugin"
	LabelDeployGFD          = "nvidia.com/gpu.deploy.gpu-feature-discovery"
	LabelDeployMIGManager   = "nvidia.com/gpu.deploy.mig-manager"
	// LabelDeployClient is GO main's; the MIG manager pauses it only if a
	// node has it (stack-facts §4 step 4).
	LabelDeployClient = "nvidia.com/gpu.deploy.client"
	// LabelDeployPrefix starts every deploy label: the stack never removes one.
	LabelDeployPrefix = "nvidia.com/gpu.deploy."

	// PausedForMIGChange is the value the MIG manager gives the deploy
	// labels of the operands it stops while it repartitions.
	PausedForMIGChange = "paused-for-mig-change"
)

// OperatorDeployLabels are the deploy labels GOmod (v25.3.4, the CRD the
// simulated cluster serves) writes as "true" on every GPU node that lacks
// them, container workloads only; LabelDeployMIGManager is added on
// MIG-capable nodes (stack-facts §6, GOmod@d73a0086
// controllers/state_manager.go labelGPUNodes). A value already there,
// "false" or paused, is kept.
var OperatorDeployLabels = []string{
	"nvidia.com/gpu.deploy.driver",
	LabelDeployGFD,
	"nvidia.com/gpu.deploy.container-toolkit",
	LabelDeployDevicePlugin,
	"nvidia.com/gpu.deploy.dcgm",
	"nvidia.com/gpu.deploy.dcgm-exporter",
	"nvidia.com/gpu.deploy.node-status-exporter",
	"nvidia.com/gpu.deploy.operator-validator",
}

// MIGPausedLabels are the deploy labels the MIG manager sets to
// PausedForMIGChange while it reconfigures and back to "true" when it ends,
// a "false" staying "false" and a missing one written; LabelDeployClient
// joins them only where present (stack-facts §4 step 4, MP@bd7160f4
// pkg/mig/reconfigure/reconfigure.go shutdownKubernetesGPUClients).
var MIGPausedLabels = []string{
	LabelDeployDevicePlugin,
	LabelDeployGFD,
	"nvidia.com/gpu.deploy.dcgm-exporter",
	"nvidia.com/gpu.deploy.dcgm",
	"nvidia.com/gpu.deploy.nvsm",
}

// MIGConfigAllDisabled is the layout GO labels MIG-capable nodes with when
// ClusterPolicy migManager.config.default asks for it (stack-facts §4 step 1).
const MIGConfigAllDisabled = "all-disabled"

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

// EnvDRADevicePrefix starts the variables the fake DRA plugin's CDI specs
// set, one per prepared device naming its UUID: the fake's stand-in for the
// device nodes and hooks the real driver's specs inject, and so the trace a
// runtime on a real node reads of the CDI devices a container got.
const EnvDRADevicePrefix = "FAKEGPU_DRA_DEVICE_"
