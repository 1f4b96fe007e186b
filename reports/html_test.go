// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteHTMLShowsVerdictEvidenceAndFingerprint(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "counterexamples"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "counterexamples", "r.yaml"), []byte("kind: Pod # <script>"), 0o644))
	s := &Summary{RunID: "r1", Candidate: Ref{Name: "c", Fingerprint: "sha256:abc"}, Fleet: Ref{Name: "f"}, Provider: "embedded",
		Components: map[string]string{"kubernetes": "v1.37.2"},
		Checks: []CheckResult{
			{ID: "a.ok", AreaTitle: "Area A", Rule: "rule a", Result: "pass"},
			{ID: "a.bad", AreaTitle: "Area A", Rule: "rule b", Result: "fail", Message: "x",
				Assessments: []AssessmentResult{{Name: "step", Result: "fail", Message: "expected <denied> but admitted"}}},
		},
		Exploration: &Exploration{Seed: 7, Budget: "60/20s", Counterexamples: []string{"counterexamples/r.yaml"}},
	}
	s.Finish()
	require.NoError(t, s.WriteHTML(dir))
	b, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	require.NoError(t, err)
	page := string(b)
	assert.Contains(t, page, "FAIL: 1 of 2 checks passed, 1 failed")
	assert.Contains(t, page, `id="a.bad" open`, "a failed check is open")
	assert.Contains(t, page, "expected &lt;denied&gt; but admitted", "evidence is escaped")
	assert.Contains(t, page, "sha256:abc")
	assert.Contains(t, page, "kind: Pod # &lt;script&gt;", "counterexamples inlined, escaped")
	for _, external := range []string{"http://", "https://", "<script", "<link"} {
		assert.False(t, strings.Contains(page, external), "self-contained: no %q", external)
	}
}
