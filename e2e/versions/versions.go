// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package versions pins the versions of the components a run is built
// from: the control plane, etcd, kwok, kind and the autoscaler.
package versions

// hack/lib.sh pins the same values for the build; a unit test keeps the
// two in step.
const (
	Kube = "v1.37.2"
	Etcd = "v3.7.0"
	Kwok = "v0.8.0"
	Kind = "v0.33.0"
	// Karpenter is sigs.k8s.io/karpenter, whose KWOK cloud provider
	// autoscales simulated pools.
	Karpenter = "v1.14.1"
)
