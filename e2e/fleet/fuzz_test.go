// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fleet

import (
	"testing"

	"github.com/gpupool/gpupool/e2e/fuzzseed"
)

// FuzzParse: no fleet file makes Parse panic, and one it accepts is
// valid and expands into nodes without error. Seeds: the built-in fleets.
func FuzzParse(f *testing.F) {
	fuzzseed.Add(f, "../../manifests/fleets/*.yaml", nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := Parse(data)
		if err != nil {
			return
		}
		if err := fl.Validate(); err != nil {
			t.Fatalf("Parse accepted a fleet Validate refuses: %v", err)
		}
		if fl.TotalNodes() > 2000 {
			return // valid, and too many nodes to expand on every input
		}
		for _, ns := range NodeSpecs(fl) {
			if _, err := ns.Node(); err != nil {
				t.Fatalf("an accepted fleet's node %s does not build: %v", ns.Name, err)
			}
		}
	})
}
