// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package fakegpu simulates the NVIDIA GPU Operator stack that a GPU node pool
// depends on: the GPU catalog (what a SKU is), the config formats the real
// components read (device-plugin config v1, mig-parted config v1, the
// ClusterPolicy fields that matter), and a pure Advertise function that says
// which extended resources and GPU Feature Discovery labels a node publishes.
//
// It carries NVIDIA facts only; it knows nothing of the test harness. The
// behaviour it reproduces is written down, with upstream sources, in
// docs/facts/: nvidia-stack-facts.md ("stack-facts §n"), dra-facts.md
// ("dra-facts §n"), gpu-access-facts.md ("access §n") and
// kubelet-facts.md ("kubelet-facts §n"); docs/facts/README.md lists them.
package fakegpu
