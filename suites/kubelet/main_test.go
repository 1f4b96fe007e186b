// Package kubelet checks what only a real kubelet enforces: the fake
// device plugin registered over the kubelet's device-plugin API decides
// allocations, the kubelet admits or rejects pods by them, and a plugin
// that goes away takes its GPUs with it. Its checks run on the kind
// provider; elsewhere they are skipped.
package kubelet

import (
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/gpupool/gpupool/e2e/harness"
)

var testenv env.Environment

func TestMain(m *testing.M) { harness.RunSuite(m, &testenv) }
