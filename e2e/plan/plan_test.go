// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package plan

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/e2e/dirs"
)

// The defaults need no checkout: a run from any directory gets the
// built-in candidate and fleet.
func TestDefaultsOutsideACheckout(t *testing.T) {
	// The manifests unpack into the cache: a test cache, not the user's.
	t.Setenv("GPUPOOL_CACHE", t.TempDir())
	t.Setenv(dirs.ManifestsEnv, "")
	t.Setenv("GPUPOOL_ROOT", "")
	t.Chdir(t.TempDir())
	dir, err := dirs.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Prepare("", "")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, DefaultCandidate); plan.Candidate.Dir != want {
		t.Errorf("candidate %s, want %s", plan.Candidate.Dir, want)
	}
	if !strings.HasPrefix(plan.Fleet.File, dir+string(filepath.Separator)) {
		t.Errorf("fleet %s, want a built-in one under %s", plan.Fleet.File, dir)
	}
}
