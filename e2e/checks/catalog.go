package checks

// The contract. One entry per check; a suite implements each. Rules are
// what the report prints next to the result.
var (
	PendingOnWrongResource = Register(Check{
		ID: "pool.pending-on-wrong-resource", Area: AreaResourceNames,
		Rule: "A pod must request the exact resource its pool advertises: nvidia.com/gpu on a MIG pool stays Pending (Insufficient nvidia.com/gpu); the pool's MIG resource schedules.",
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
