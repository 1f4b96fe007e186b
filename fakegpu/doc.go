// Package fakegpu simulates the NVIDIA GPU Operator stack that a GPU node pool
// depends on: the GPU catalog (what a SKU is), the config formats the real
// components read (device-plugin config v1, mig-parted config v1, the
// ClusterPolicy fields that matter), and a pure Advertise function that says
// which extended resources and GPU Feature Discovery labels a node publishes.
//
// It carries NVIDIA facts only; it knows nothing of the test harness. The
// behaviour it reproduces is written down, with upstream sources, in
// shared/docs/nvidia-stack-facts.md ("facts §n") and in the project's
// docs/facts/ (gpu-access-facts.md: "access §n"; kubelet-facts.md).
package fakegpu
