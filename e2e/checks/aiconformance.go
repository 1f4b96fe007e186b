// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package checks

// AIRequirement is a requirement of the CNCF Kubernetes AI Conformance
// checklist (cncf/k8s-ai-conformance docs/AIConformance-1.37.yaml) that
// gpupool's checks give evidence for. Id and level are the checklist's.
type AIRequirement struct {
	ID    string `json:"id"`
	Level string `json:"level"`
	// Checks give evidence for it: each passing shows part of it holds on
	// the cluster checked.
	Checks []string `json:"checks"`
	// Procedures are the requirement's own test procedures (where the
	// working group wrote them) and the checks and pod shapes that run each.
	Procedures []AIProcedure `json:"procedures,omitempty"`
}

// AIProcedure is one test procedure of a requirement.
type AIProcedure struct {
	Procedure string   `json:"procedure"`
	Checks    []string `json:"checks"`
	Shapes    string   `json:"shapes"`
}

// AIConformanceVersion is the checklist the mapping follows.
const AIConformanceVersion = "v1.37"

// AIRequirements maps the checklist's accelerator and security
// requirements, and its cluster autoscaling one, to the checks that give
// evidence for them. The rest of the checklist (inference networking, gang
// scheduling, pod autoscaling, metrics, operators, sandboxing) is outside
// the GPU pool contract.
var AIRequirements = []AIRequirement{
	{
		ID: "secure_accelerator_access", Level: "MUST",
		// Accelerators reach a container only through the resource
		// framework and the NVIDIA runtime, and never across workloads.
		Checks: []string{
			"admission.requires-runtimeclass", "runtimeclass.exists-not-default", "runtimeclass.nvidia-runtime-gives-gpu",
			"pool.sku-isolation", "admission.requires-sku-selector",
			"sharing.exclusive-gpus-not-shared", "sharing.no-cross-trust-timeslice",
			"security.tenant-pod-security-restricted", "security.privileged-only-in-gpu-operator",
			"security.gpu-images-pinned", "security.gpu-pods-own-serviceaccount", "security.node-identity-unreachable-objects",
			"kubelet.allocates-distinct-gpus",
			"explore.gpu-pods-run-under-nvidia", "explore.gpu-pods-select-one-pool", "explore.no-cross-trust-timeslice",
			"explore.gpu-images-pinned", "explore.gpu-pods-own-serviceaccount",
			"dra.claim-pods-are-gpu-pods", "dra.one-way-per-gpu", "dra.no-cross-trust-shared-device",
			"access.no-gpu-without-allocation", "access.allocation-bounds-sight", "access.gpu-pods-see-their-gpu", "access.toolkit-meets-cve-floor",
		},
		// kubernetes-sigs/ai-conformance kars/0049-secure-accelerator-access
		// (access §7.2). Its automated test lists /dev/nvidia* in an
		// ubuntu image on DRA only (access §7.3); these run every way in
		// of access §8.
		Procedures: []AIProcedure{
			{
				Procedure: "A pod on a node with accelerators that requests none finds no device",
				Checks:    []string{"access.no-gpu-without-allocation"},
				Shapes: "pods with no GPU request on every GPU pool (device plugin and DRA), own and another trust domain's nodes: " +
					"a CUDA image (ENV NVIDIA_VISIBLE_DEVICES=all), env, envFrom a ConfigMap and a Secret, valueFrom; " +
					"all, an index, the pool's GPU UUIDs, a CDI name; with and without runtimeClassName nvidia; spec.nodeName naming a GPU node",
			},
			{
				Procedure: "Of two pods each allocated an accelerator, neither can reach the other's",
				Checks: []string{"access.allocation-bounds-sight", "sharing.exclusive-gpus-not-shared",
					"sharing.no-cross-trust-timeslice", "dra.no-cross-trust-shared-device"},
				Shapes: "GPU pods of every pool (a GPU, a MIG device, a time-sliced replica, a DRA device) setting NVIDIA_VISIBLE_DEVICES=all " +
					"in env and in envFrom; full exclusive nodes; shared pools filled by two trust domains",
			},
		},
	},
	{
		ID: "gpu_sharing", Level: "SHOULD",
		// Time-slicing with its oversubscription rules, MIG devices
		// exposed as schedulable resources, and DRA's consumable shares.
		Checks: []string{
			"pool.advertises-designed-resources", "pool.pending-on-wrong-resource",
			"sharing.fail-requests-greater-than-one", "sharing.gpu-memory-bounded", "sharing.no-cross-trust-timeslice",
			"mig.relabel-is-a-drain", "kubelet.rejects-shared-request-over-one", "dra.no-cross-trust-shared-device",
		},
	},
	{
		ID: "driver_runtime_management", Level: "SHOULD",
		// The Operator's device plugin, runtime and MIG manager are
		// installed, advertise what the pools are designed for, and
		// degrade as the contract says.
		Checks: []string{
			"pool.advertises-designed-resources", "runtimeclass.exists-not-default", "runtimeclass.nvidia-runtime-gives-gpu",
			"mig.relabel-is-a-drain", "health.plugin-down-pods-pending", "health.xid-withdraws-the-gpu",
			"pending.explained-by-contract", "kubelet.plugin-loss-withdraws-gpus", "kubelet.simulator-agrees",
		},
	},
	{
		ID: "cluster_autoscaling", Level: "MUST",
		// Where an autoscaler is offered: node groups of an accelerator
		// type scale up on Pending pods that request it, and down
		// (access §7.4). Scale-down is checked as the drain it must be;
		// the removal of an idle node is not a check (docs/autoscaling.md).
		Checks: []string{"autoscaling.pending-pod-scales-its-own-pool", "autoscaling.pool-limit-holds", "autoscaling.scale-down-honours-pdb", "autoscaling.mig-reconfiguration-not-disrupted"},
	},
}
