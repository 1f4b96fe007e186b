// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaling

import (
	"testing"

	"github.com/gpupool/gpupool/e2e/suite"
)

func TestMain(m *testing.M) { suite.GoTest(m, Suite) }
