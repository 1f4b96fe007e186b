// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/plan"
	"github.com/gpupool/gpupool/e2e/settings"
)

// The suites check what the run loaded, written into the run directory:
// a candidate edited after the run loaded it changes nothing they read.
func TestAnEditDuringARunChangesNothingItChecks(t *testing.T) {
	ref, err := filepath.Abs(filepath.Join("..", "..", "manifests", "candidates", "reference"))
	require.NoError(t, err)
	fleetFile, err := filepath.Abs(filepath.Join("..", "..", "manifests", "fleets", "reference.yaml"))
	require.NoError(t, err)
	src := t.TempDir()
	meta := "apiVersion: gpupool.dev/v1alpha1\nkind: Candidate\nmetadata: {name: edited}\nspec:\n  base: " + ref + "\n  fleet: " + fleetFile + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(src, "candidate.yaml"), []byte(meta), 0o644))
	pl, err := plan.Prepare("", src)
	require.NoError(t, err)

	loaded, err := writeLoaded(Spec{ID: "gpupool-x", Out: t.TempDir()}, &harness.Run{Plan: pl})
	require.NoError(t, err)

	// The team edits its candidate while the run goes on.
	rc := "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: runc\n"
	require.NoError(t, os.WriteFile(filepath.Join(src, "99-runtimeclass.yaml"), []byte(rc), 0o644))
	edited, err := plan.Prepare("", src)
	require.NoError(t, err)
	require.NotEqual(t, pl.Candidate.Fingerprint(), edited.Candidate.Fingerprint(), "the edit changes the source")

	// What a suite reads (the settings file runSuite passes names the
	// copies) is what was loaded.
	set, err := settings.ReadFile(loaded.settings)
	require.NoError(t, err)
	seen, err := plan.Prepare(set.Fleet, set.Candidate)
	require.NoError(t, err)
	assert.Equal(t, pl.Candidate.Fingerprint(), seen.Candidate.Fingerprint())
	assert.Equal(t, "edited", seen.Candidate.Name)
	assert.Equal(t, pl.Fleet.Spec, seen.Fleet.Spec)
	assert.True(t, strings.HasPrefix(loaded.candidate, filepath.Dir(loaded.fleet)))
}
