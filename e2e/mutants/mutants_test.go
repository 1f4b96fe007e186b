// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package mutants

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gpupool/gpupool/reports"
)

func TestJudgeMutantWithAndWithoutExploration(t *testing.T) {
	summary := func(failed ...string) *reports.Summary {
		s := &reports.Summary{}
		for _, id := range []string{"admission.requires-runtimeclass", "explore.gpu-pods-run-under-nvidia", "security.gpu-images-pinned"} {
			r := "pass"
			for _, f := range failed {
				if f == id {
					r = "fail"
				}
			}
			s.Checks = append(s.Checks, reports.CheckResult{ID: id, Result: r})
		}
		return s
	}
	all := func(string) bool { return true }
	fixed := func(id string) bool { return !IsExploration(id) }

	// An exploration-only mutant: killed with exploration, survives without.
	want := map[string]bool{"explore.gpu-pods-run-under-nvidia": true}
	s := summary("explore.gpu-pods-run-under-nvidia")
	r, _ := Judge(s, want, all)
	assert.Equal(t, "KILLED", r)
	r, _ = Judge(s, want, fixed)
	assert.Equal(t, "SURVIVED", r)

	// A mutant exploration also catches is killed either way.
	want = map[string]bool{"admission.requires-runtimeclass": true, "explore.gpu-pods-run-under-nvidia": true}
	s = summary("admission.requires-runtimeclass", "explore.gpu-pods-run-under-nvidia")
	r, _ = Judge(s, want, all)
	assert.Equal(t, "KILLED", r)
	r, _ = Judge(s, want, fixed)
	assert.Equal(t, "KILLED", r)

	// An unlisted failure is the wrong reason, and says which.
	r, detail := Judge(summary("admission.requires-runtimeclass", "security.gpu-images-pinned"), map[string]bool{"admission.requires-runtimeclass": true}, all)
	assert.Equal(t, "WRONG REASON", r)
	assert.Contains(t, detail, "security.gpu-images-pinned")
	s = summary("admission.requires-runtimeclass", "security.gpu-images-pinned")
	s.Checks[2].Message = "expected pod p to be denied, but it was admitted"
	_, detail = Judge(s, map[string]bool{"admission.requires-runtimeclass": true}, all)
	assert.Contains(t, detail, "security.gpu-images-pinned said: expected pod p to be denied, but it was admitted.", "with what it said")

	// A listed check the run did not make (another suite set) is not expected.
	s = &reports.Summary{Checks: []reports.CheckResult{{ID: "admission.requires-runtimeclass", Result: "fail"}}}
	r, _ = Judge(s, map[string]bool{"admission.requires-runtimeclass": true, "explore.gpu-pods-run-under-nvidia": true}, all)
	assert.Equal(t, "KILLED", r)
}
