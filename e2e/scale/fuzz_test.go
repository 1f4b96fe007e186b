// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"testing"

	"github.com/gpupool/gpupool/e2e/fuzzseed"
)

// FuzzParseWorkload: no workload file makes ParseWorkload panic, and one
// it accepts validates. Seeds: the built-in workloads.
func FuzzParseWorkload(f *testing.F) {
	fuzzseed.Add(f, "../../manifests/workloads/*.yaml", nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := ParseWorkload(data)
		if err != nil {
			return
		}
		if err := w.Validate(); err != nil {
			t.Fatalf("ParseWorkload accepted a workload Validate refuses: %v", err)
		}
	})
}
