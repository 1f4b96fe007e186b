// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package checks

import "testing"

// Every check the AI Conformance mapping names exists: a renamed check
// must not silently drop evidence from a certification bundle.
func TestAIRequirementsNameKnownChecks(t *testing.T) {
	for _, r := range AIRequirements {
		if len(r.Checks) == 0 {
			t.Errorf("%s: no checks", r.ID)
		}
		for _, id := range r.Checks {
			if _, ok := Lookup(id); !ok {
				t.Errorf("%s names unknown check %q", r.ID, id)
			}
		}
	}
}
