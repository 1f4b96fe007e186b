// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package candidate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFingerprintFollowsContentNotPlace(t *testing.T) {
	write := func(dir, body string) *Candidate {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "10-rc.yaml"), []byte(body), 0o644))
		c, err := Load(dir)
		require.NoError(t, err)
		return c
	}
	rc := "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n"
	a, b := write(t.TempDir(), rc), write(t.TempDir(), rc)
	assert.True(t, strings.HasPrefix(a.Fingerprint(), "sha256:"))
	assert.Equal(t, a.Fingerprint(), b.Fingerprint(), "the same manifests elsewhere")
	c := write(t.TempDir(), strings.Replace(rc, "handler: nvidia", "handler: runc", 1))
	assert.NotEqual(t, a.Fingerprint(), c.Fingerprint(), "one field changed")
}

// What a run writes of the candidate it loaded loads back as the same
// candidate: a broken one (base, omissions, patches, fleet patches)
// becomes plain files with the same objects in the same order.
func TestWriteLoadedLoadsBackTheSameCandidate(t *testing.T) {
	for _, name := range []string{"reference", "broken-trust-policy-limits-only", "broken-timeslice-replicas-2"} {
		c, err := Load(filepath.Join("..", "..", "manifests", "candidates", name))
		require.NoError(t, err, name)
		dir := t.TempDir()
		require.NoError(t, c.WriteLoaded(dir), name)
		back, err := Load(dir)
		require.NoError(t, err, name)
		assert.Equal(t, c.Fingerprint(), back.Fingerprint(), name)
		assert.Equal(t, c.Name, back.Name, name)
		assert.Equal(t, c.Meta.Spec.Breaks, back.Meta.Spec.Breaks, name)
		assert.Empty(t, back.Meta.Spec.Base, name)
		assert.Empty(t, back.Meta.Spec.FleetPatches, name)
	}
}
