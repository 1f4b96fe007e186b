// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package kubelet checks what only a real kubelet enforces: the fake
// device plugin registered over the kubelet's device-plugin API decides
// allocations, the kubelet admits or rejects pods by them, and a plugin
// that goes away takes its GPUs with it; on a DRA pool the fake DRA
// kubelet plugin prepares the claims the kubelet hands it. Its checks run on the kind
// provider; elsewhere they are skipped.
package kubelet

import (
	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/gpupool/gpupool/e2e/suite"
)

var testenv env.Environment

// Suite is this package's checks; main_test.go runs it under go test, and
// the gpupool binary links it.
var Suite = suite.New(&testenv, suite.Funcs{},
	TestKubeletSimulatorAgrees,
	TestKubeletRejectsSharedRequestOverOne,
	TestKubeletAllocatesDistinctGPUs,
	TestKubeletPluginLossWithdrawsGPUs,
	TestKubeletPreparesDRAClaims,
)
