// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package explore tries each rule of the pool contract against pods drawn
// over everything a tenant controls (e2e/explore), after the corpus of
// counterexamples found before.
package explore

import (
	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/gpupool/gpupool/e2e/suite"
)

var testenv env.Environment

// Suite is this package's checks; main_test.go runs it under go test, and
// the gpupool binary links it. Its env funcs create the objects every rule
// draws from: a namespace with no labels, a RuntimeClass that is not
// nvidia, and, on each time-sliced node split by trust, a well-formed pod
// of the node's own tenant for a stray pod to land beside.
var Suite = suite.New(&testenv, suite.Funcs{Setup: createTenantObjects, Finish: removeTenantObjects, Parallel: true},
	TestExplore,
)
