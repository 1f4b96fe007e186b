// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package dra checks the GPU pool contract where GPUs are served by
// Dynamic Resource Allocation: claim pods are GPU pods, no GPU is offered
// both through DRA and a device plugin, and a pool moved from the device
// plugin to DRA keeps its contract.
package dra

import (
	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/gpupool/gpupool/e2e/suite"
)

var testenv env.Environment

// Suite is this package's checks; main_test.go runs it under go test, and
// the gpupool binary links it.
var Suite = suite.New(&testenv, suite.Funcs{},
	TestClaimPodsAreGPUPods,
	TestOneWayPerGPU,
	TestNoCrossTrustSharedDevice,
	TestClassesSelectTheirPools,
	TestMigrationKeepsThePool,
)
