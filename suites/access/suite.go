// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package access checks what a container can see: the GPUs the NVIDIA
// runtime puts in it, which it takes from the container's own environment
// and mounts, not from what the pod asked for (gpu-access-facts).
package access

import (
	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/gpupool/gpupool/e2e/suite"
)

var testenv env.Environment

// Suite is this package's checks; main_test.go runs it under go test, and
// the gpupool binary links it.
var Suite = suite.New(&testenv, suite.Funcs{},
	TestNoGPUWithoutAllocation,
	TestAllocationBoundsSight,
	TestGPUPodsSeeTheirGPU,
	TestToolkitMeetsCVEFloor,
)
