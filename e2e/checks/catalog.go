// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package checks

// The contract. One entry per check; a suite implements each. Rules are
// what the report prints next to the result.
var (
	PendingOnWrongResource = Register(Check{
		ID: "pool.pending-on-wrong-resource", Area: AreaResourceNames,
		Rule: "A pod must request the exact resource its pool advertises: nvidia.com/gpu on a MIG pool, or on a time-sliced pool that renames its replicas, stays Pending (Insufficient nvidia.com/gpu, or cannot allocate all claims where a DeviceClass maps nvidia.com/gpu onto DRA); the pool's MIG resource schedules.",
	})
	SKUIsolation = Register(Check{
		ID: "pool.sku-isolation", Area: AreaSKUPools,
		Rule: "A pod without the SKU toleration never lands on a GPU node; a pod for one SKU lands on that SKU's pool and nowhere else.",
	})
	RequiresRuntimeClass = Register(Check{
		ID: "admission.requires-runtimeclass", Area: AreaRuntimeClass,
		Rule: "A GPU pod without runtimeClassName: nvidia is denied at admission, with the policy's message.",
	})
	RequiresSKUSelector = Register(Check{
		ID: "admission.requires-sku-selector", Area: AreaSKUPools,
		Rule: "A GPU pod without nodeSelector.sku is denied at admission, with the policy's message.",
	})
	CPUPodAdmitted = Register(Check{
		ID: "admission.cpu-pod-admitted", Area: AreaSKUPools,
		Rule: "The GPU admission policy does not touch CPU-only pods: they are admitted and never land on a GPU pool.",
	})
	NoCrossTrustTimeslice = Register(Check{
		ID: "sharing.no-cross-trust-timeslice", Area: AreaSharing,
		Rule: "A time-sliced GPU is never shared across trust domains: a pod aiming at another trust's nodes is denied, and no shared node hosts pods of two trusts.",
	})
)

// Checks of the simulated GPU Operator's behaviour as the contract sees it.
var (
	AdvertisesDesignedResources = Register(Check{
		ID: "pool.advertises-designed-resources", Area: AreaResourceNames,
		Rule: "Every GPU node advertises the resource its pool is designed for, in the designed count: the candidate's GPU Operator config (ClusterPolicy, device-plugin and MIG configs) matches the fleet; a DRA pool's nodes publish that many devices in their ResourceSlices.",
	})
	ExclusiveGPUsNotShared = Register(Check{
		ID: "sharing.exclusive-gpus-not-shared", Area: AreaSharing,
		Rule: "An exclusive pool never hands one GPU to two pods: a full node's pods hold distinct devices and one more pod stays Pending.",
	})
	FailRequestsGreaterThanOne = Register(Check{
		ID: "sharing.fail-requests-greater-than-one", Area: AreaSharing,
		Rule: "A pod asking for 2 replicas of a time-sliced GPU is refused at kubelet admission (UnexpectedAdmissionError), not silently given two slices of one GPU.",
	})
	GPUMemoryBounded = Register(Check{
		ID: "sharing.gpu-memory-bounded", Area: AreaSharing,
		Rule: "Replicas inflate allocatable, GPU memory stays finite: pods within their share of a time-sliced GPU run, and a pod that oversubscribes its memory is denied or OOMKilled, never silently admitted.",
	})
	NVIDIARuntimeGivesGPU = Register(Check{
		ID: "runtimeclass.nvidia-runtime-gives-gpu", Area: AreaRuntimeClass,
		Rule: "A well-formed GPU pod under RuntimeClass nvidia runs with its allocated GPU devices; under a handler other than the NVIDIA runtime it would see no GPU and crash-loop.",
	})
	MIGRelabelIsADrain = Register(Check{
		ID: "mig.relabel-is-a-drain", Area: AreaMIGDrains, Disruptive: true,
		Rule: "A MIG layout change after cordon and drain walks mig.config.state pending → success with GPU operands paused and GPUs withdrawn, and fails no pod; relabelling a busy node fails its GPU pods.",
	})
	XidWithdrawsGPU = Register(Check{
		ID: "health.xid-withdraws-the-gpu", Area: AreaOperatorHealth, Disruptive: true,
		Rule: "A GPU that reports a critical Xid leaves allocatable while capacity keeps it; new pods get only healthy GPUs, and a pod that needs the lost one stays Pending, explained by the unhealthy device.",
	})
	PluginDownPodsPending = Register(Check{
		ID: "health.plugin-down-pods-pending", Area: AreaOperatorHealth, Disruptive: true,
		Rule: "While the device plugin on a pool is down, new GPU pods for that pool stay Pending for want of the resource (Insufficient, or cannot allocate all claims where a DeviceClass maps it onto DRA), and schedule once it recovers.",
	})
)

// RuntimeClass plumbing the apiserver enforces.
var RuntimeClassExistsNotDefault = Register(Check{
	ID: "runtimeclass.exists-not-default", Area: AreaRuntimeClass,
	Rule: "RuntimeClass nvidia exists with the NVIDIA handler and is not forced on every pod; a pod naming a RuntimeClass that does not exist is denied by the apiserver's RuntimeClass admission.",
})

// The security floor.
var (
	TenantPodSecurityRestricted = Register(Check{
		ID: "security.tenant-pod-security-restricted", Area: AreaSecurityFloor,
		Rule: "Tenant namespaces enforce Pod Security restricted: a pod that is not restricted-compliant is denied there.",
	})
	PrivilegedOnlyInGPUOperator = Register(Check{
		ID: "security.privileged-only-in-gpu-operator", Area: AreaSecurityFloor,
		Rule: "Privileged and hostPID pods are denied everywhere except the gpu-operator namespace, where the Operator's operands need them.",
	})
	RBACLeastPrivilege = Register(Check{
		ID: "security.rbac-least-privilege", Area: AreaSecurityFloor,
		Rule: "No anonymous, unauthenticated or merely authenticated subject, and no tenant service account, is granted cluster-wide write (RBAC, nodes, namespaces, admission policies, the ClusterPolicy, pods in every namespace), node proxy, pods/exec in another tenant's namespace or the gpu-operator namespace, or what would let it act as the GPU Operator's service accounts (pods, tokens or secrets in gpu-operator, impersonation), as the apiserver's authorizer answers; the report lists the candidate's RBAC bindings.",
	})
	DefaultDenyNetworkPolicyObjects = Register(Check{
		ID: "security.default-deny-networkpolicy-objects", Area: AreaSecurityFloor,
		Rule: "Every GPU tenant namespace has a default-deny NetworkPolicy (all pods, Ingress and Egress, no rules). Inspects objects only: NetworkPolicy is not enforced on simulated nodes.",
	})
	GPUImagesPinned = Register(Check{
		ID: "security.gpu-images-pinned", Area: AreaSecurityFloor,
		Rule: "GPU pods must pin their images by digest: a GPU pod with a tag-only image is denied; the same pod pinned by digest is admitted, and its tenant cannot change its image to a tag once it runs.",
	})
)

// NodeIdentityUnreachableObjects guards the other half of per-pod identity:
// on a shared node, the node's own identity is shared by every tenant.
var NodeIdentityUnreachableObjects = Register(Check{
	ID: "security.node-identity-unreachable-objects", Area: AreaSecurityFloor,
	Rule: "Pods of the namespaces that share GPU nodes cannot reach the node-wide identity: their NetworkPolicies allow no egress to the instance metadata endpoint, so model weights are fetched under the pod's own service account. Inspects objects only: NetworkPolicy is not enforced on simulated nodes.",
})

// GPUPodsOwnServiceAccount guards per-pod identity.
var GPUPodsOwnServiceAccount = Register(Check{
	ID: "security.gpu-pods-own-serviceaccount", Area: AreaSecurityFloor,
	Rule: "GPU pods run under their own service account: a GPU pod under the namespace's default service account is denied; under its own it is admitted.",
})

// PendingExplained: Pending is a pool-contract bug, or the contract explains it.
var PendingExplained = Register(Check{
	ID: "pending.explained-by-contract", Area: AreaPendingExplained,
	Rule: "After a mixed GPU workload settles, every Pending GPU pod is explained by the pool contract (no pool advertises what it asks, its selector or tolerations match no pool, the pool advertises another resource, the pool is full, or its device plugin is down); the report lists each with its reason.",
})

// Checks only a real kubelet can make: the device-plugin API is where the
// kubelet enforces them, and KWOK nodes have no kubelet.
var (
	KubeletRejectsSharedOverOne = Register(Check{
		ID: "kubelet.rejects-shared-request-over-one", Area: AreaSharing, Provider: "kind",
		Rule: "On a real kubelet, a pod asking for 2 replicas of a time-sliced GPU under failRequestsGreaterThanOne is scheduled, then rejected by the kubelet's Allocate call: phase Failed, reason UnexpectedAdmissionError.",
	})
	KubeletAllocatesDistinctGPUs = Register(Check{
		ID: "kubelet.allocates-distinct-gpus", Area: AreaSharing, Provider: "kind",
		Rule: "On a real kubelet, a GPU pod of an exclusive pool sees the devices the device plugin allocated (NVIDIA_VISIBLE_DEVICES in its environment), and two such pods never see the same GPU.",
	})
	KubeletPluginLossWithdrawsGPUs = Register(Check{
		ID: "kubelet.plugin-loss-withdraws-gpus", Area: AreaOperatorHealth, Provider: "kind", Disruptive: true,
		Rule: "On a real kubelet, taking the device-plugin pod off the node (nvidia.com/gpu.deploy.device-plugin=false, as the GPU Operator does) drops the node's allocatable GPUs to 0 once the kubelet notices, and the DaemonSet's new pod brings them back.",
	})
	// The differential test: the simulated kubelet that judges every KWOK
	// node is held to what a real kubelet does with the same pod.
	KubeletSimulatorAgrees = Register(Check{
		ID: "kubelet.simulator-agrees", Area: AreaSharing, Provider: "kind",
		Rule: "Every pod shape of the differential corpus (manifests/differential: multi-container, init and sidecar containers, shared and exclusive GPUs, over-requests, a non-NVIDIA runtime handler, GPUs of a DRA pool through the extended-resource claim or claims from templates, one used by two containers or by none, containers that ask for no GPU or widen their allocation through NVIDIA_VISIBLE_DEVICES in env or envFrom) gets the same phase, reason, message and number of distinct devices, and each container sees as many GPUs beyond and within its allocation, from the simulated kubelet on a KWOK node as from a real kubelet and containerd, with a fake NVIDIA runtime applying the toolkit's selection, on a node of the same pool.",
	})
)

// Rules tried against pods drawn over everything a tenant controls
// (e2e/explore), not only the shapes the suites above spell out: the
// container list a device is asked for in, the request form, node
// selection, tolerations, RuntimeClass, identity, image, namespace, and
// whether a controller creates the pod. A violation is shrunk to a
// minimal pod and written as a reproduction.
var (
	ExploreRuntimeClass = Register(Check{
		ID: "explore.gpu-pods-run-under-nvidia", Area: AreaExploration,
		Rule: "Every admitted pod that holds an nvidia.com/ resource in any container list (containers, init containers, sidecars), created directly or by a Deployment, Job or StatefulSet, runs under RuntimeClass nvidia.",
	})
	ExploreSKUPool = Register(Check{
		ID: "explore.gpu-pods-select-one-pool", Area: AreaExploration,
		Rule: "Every admitted GPU pod selects one pool: the GPU nodes its nodeSelector, required node affinity and nodeName admit all belong to a single pool.",
	})
	ExploreNoCrossTrust = Register(Check{
		ID: "explore.no-cross-trust-timeslice", Area: AreaExploration,
		Rule: "No pod a tenant can write lands on a shared-GPU node (time-sliced, or DRA with consumable shares) of another trust domain: every live GPU-holding pod on such a node belongs to the node's trust domain.",
	})
	ExploreImagesPinned = Register(Check{
		ID: "explore.gpu-images-pinned", Area: AreaExploration,
		Rule: "Every admitted GPU pod, wherever it asks for the device, pins every image of every container list by digest.",
	})
	ExploreOwnServiceAccount = Register(Check{
		ID: "explore.gpu-pods-own-serviceaccount", Area: AreaExploration,
		Rule: "Every admitted GPU pod, wherever it asks for the device, runs under a service account of its own, never the namespace's default.",
	})
)

// GPUs served by Dynamic Resource Allocation (dra-facts.md).
var (
	DRAClaimPodsAreGPUPods = Register(Check{
		ID: "dra.claim-pods-are-gpu-pods", Area: AreaDRA,
		Rule: "A pod that gets a GPU through DRA (a ResourceClaim from a template, or a DeviceClass's implicit extended resource deviceclass.resource.kubernetes.io/<class>) is a GPU pod: well-formed it runs on its DRA pool with its devices prepared, and without runtimeClassName nvidia it is denied like any other GPU pod.",
	})
	KubeletDRAClaimsPrepared = Register(Check{
		ID: "kubelet.dra-claims-prepared", Area: AreaDRA, Provider: "kind",
		Rule: "On a real kubelet, a node of a DRA pool runs GPU pods with devices NVIDIA's DRA kubelet plugin prepared: a pod with a claim from a template, a pod limiting the pool's resource and one limiting the DeviceClass's own resource deviceclass.resource.kubernetes.io/<class> (the scheduler's extended-resource claims) all run, each with its own prepared device, no GPU handed out twice (not through a device plugin on the same node either), and once they are deleted their devices are unprepared: a pod asking every device of the node runs.",
	})
	DRANoCrossTrustSharedDevice = Register(Check{
		ID: "dra.no-cross-trust-shared-device", Area: AreaDRA,
		Rule: "A GPU that DRA hands to several claims at once (consumable capacity, allowMultipleAllocations) is never shared across trust domains: a pod of one trust domain asking for a GPU on another's nodes, by a claim or by a mapped limit, is denied, and with every trust domain filling the pool, no device is allocated to the claims of two trusts.",
	})
	DRAClassesSelectTheirPools = Register(Check{
		ID: "dra.device-classes-select-their-pools", Area: AreaDRA,
		Rule: "A DeviceClass a DRA pool names for its SKU selects what it says: a claim of it runs on that pool with a device prepared, and a claim of it aimed at a DRA pool of another SKU stays Pending (cannot allocate all claims), never given that pool's GPU; a selector that reads an attribute the devices lack aborts allocation (dra-facts §6.8) and fails the first.",
	})
	DRAOneWayPerGPU = Register(Check{
		ID: "dra.one-way-per-gpu", Area: AreaDRA,
		Rule: "No node serves its GPUs both ways: a node publishing DRA devices of a DeviceClass that maps an extended resource offers none of that resource through a device plugin (else one GPU is handed out twice; dra-facts §6.2).",
	})
	DRAMigrationKeepsThePool = Register(Check{
		ID: "dra.migration-keeps-the-pool", Area: AreaDRA,
		Rule: "A device-plugin pool can move to DRA node by node while its tenants' pods run: a node is cordoned, drained (evicted, PodDisruptionBudgets applying), its device plugin taken off and NVIDIA's DRA driver put on as on the DRA pool of the same SKU, uncordoned; pods on the pool's other nodes keep running, pods asking its resource schedule onto the moved node through the DeviceClass that maps it and run with devices prepared, and no GPU is given twice: with every GPU of the moved node held, a claim for one more stays Pending.",
	})
)

// What a container can see: the NVIDIA runtime gives GPUs to a container
// whose own environment names them, allocated or not (gpu-access-facts).
var (
	AccessNoGPUWithoutAllocation = Register(Check{
		ID: "access.no-gpu-without-allocation", Area: AreaAccess,
		Rule: "A tenant pod that asks for no GPU sees none on any GPU pool, its own trust domain's or another's: not when its image sets NVIDIA_VISIBLE_DEVICES (a CUDA image), nor when env, envFrom (ConfigMap or Secret) or valueFrom set it to all, an index, a GPU UUID or a CDI name, with or without runtimeClassName nvidia; nor after admission, when its tenant swaps an image for a CUDA image or adds an ephemeral container naming all GPUs (with SYS_ADMIN where Pod Security does not refuse it).",
	})
	AccessAllocationBoundsSight = Register(Check{
		ID: "access.allocation-bounds-sight", Area: AreaAccess,
		Rule: "A pod allocated a GPU, a MIG device, a time-sliced replica or a DRA device sees nothing beyond its allocation, even when it sets NVIDIA_VISIBLE_DEVICES=all in env or envFrom.",
	})
	AccessGPUPodsSeeTheirGPU = Register(Check{
		ID: "access.gpu-pods-see-their-gpu", Area: AreaAccess,
		Rule: "A configuration that closes the env path still gives well-formed GPU pods their GPU: on every GPU pool each container allocated a device sees every device it was allocated (the toolkit refusing the variable while the device plugin still passes devices through it leaves GPU pods running with no GPU).",
	})
	AccessToolkitCVEFloor = Register(Check{
		ID: "access.toolkit-meets-cve-floor", Area: AreaAccess,
		Rule: "The NVIDIA container toolkit the ClusterPolicy deploys (spec.toolkit.version, else the Operator's own) has every confirmed CVE fix of the toolkit's hooks (v1.17.8 or later) and is not v1.18.0 or v1.18.1, which give every GPU for NVIDIA_VISIBLE_DEVICES=none; a version that names no release (latest) fails too.",
	})
)

// Autoscaled pools: a real autoscaler (Karpenter) makes their nodes from
// the candidate's NodePools (autoscaler-facts).
var (
	AutoscalingScalesItsOwnPool = Register(Check{
		ID: "autoscaling.pending-pod-scales-its-own-pool", Area: AreaAutoscaling, NeedsAutoscaler: true,
		Rule: "A Pending GPU pod of an autoscaled pool at zero nodes gets, in bounded time, a node the pool's own NodePool makes: the machine of the pool's SKU, with the pool's labels and taints, and the pod runs there with its GPU.",
	})
	AutoscalingLimitHolds = Register(Check{
		ID: "autoscaling.pool-limit-holds", Area: AreaAutoscaling, NeedsAutoscaler: true,
		Rule: "An autoscaled pool grows to its designed maxNodes and no further: with that many nodes full, one more pod of the pool stays Pending, the autoscaler says its NodePool is at its limit, gpupool explain says so too, and no node of another pool takes the pod.",
	})
	AutoscalingDrainHonoursPDB = Register(Check{
		ID: "autoscaling.scale-down-honours-pdb", Area: AreaAutoscaling, NeedsAutoscaler: true,
		Rule: "A node the autoscaler removes while a GPU pod runs on it is drained through eviction: under a PodDisruptionBudget that allows no disruption the pod keeps running on the draining node, its eviction is refused, and the autoscaler sets no deadline after which it deletes the pod anyway.",
	})
	AutoscalingMIGReconfigNotDisrupted = Register(Check{
		ID: "autoscaling.mig-reconfiguration-not-disrupted", Area: AreaAutoscaling, NeedsAutoscaler: true,
		Rule: "A node of an autoscaled MIG pool is never removed by the autoscaler in the middle of a MIG reconfiguration: while its layout is being applied it carries karpenter.sh/do-not-disrupt, and before and after it does not, so the pool can still shrink.",
	})
)

// ExploreNoGPUWithoutAllocation tries what a container can see over the
// pods a tenant can write.
var ExploreNoGPUWithoutAllocation = Register(Check{
	ID: "explore.no-gpu-without-allocation", Area: AreaExploration,
	Rule: "No container of a pod a tenant can write sees a GPU it was not allocated: drawn over asking for a GPU or none, NVIDIA_VISIBLE_DEVICES from a CUDA image, env or envFrom (ConfigMap or Secret) with all, an index or a CDI name, privileged or SYS_ADMIN, RuntimeClass, namespace, trust domain aimed at, nodeName and the controller that creates it.",
})
