// Package health checks the health part of the GPU pool contract.
package health

import (
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/gpupool/gpupool/e2e/harness"
)

var testenv env.Environment

func TestMain(m *testing.M) { harness.RunSuite(m, &testenv) }
