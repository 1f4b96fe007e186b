// Package pending checks that every Pending GPU pod is explained by the
// pool contract.
package pending

import (
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/gpupool/gpupool/e2e/harness"
)

var testenv env.Environment

func TestMain(m *testing.M) { harness.RunSuite(m, &testenv) }
