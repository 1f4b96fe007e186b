// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package reports

import (
	"os"
	"path/filepath"
	"testing"

	junit "github.com/joshdk/go-junit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func certSummary() *Summary {
	s := &Summary{RunID: "r1", Candidate: Ref{Name: "cand", Fingerprint: "sha256:abc"}, Fleet: Ref{Name: "f"}, Provider: "embedded",
		Checks: []CheckResult{
			{ID: "a.one", Area: "a", Rule: "rule one", Result: "pass", Duration: 1},
			{ID: "a.two", Area: "a", Rule: "rule two", Result: "fail", Message: "expected x but y",
				Assessments: []AssessmentResult{{Name: "step", Result: "fail", Message: "expected x but y"}}},
			{ID: "b.three", Area: "b", Rule: "rule three", Result: "pass"},
		}}
	s.Finish()
	return s
}

var certInfo = Certification{
	Product:          Product{VendorName: "V", PlatformName: "P", PlatformVersion: "1", KubernetesVersion: "v1.37"},
	Versions:         map[string]string{"gpupool": "v0.1.0", "kubernetes": "v1.37.2"},
	ChecklistVersion: "v1.37",
	Requirements: []Requirement{
		{ID: "secure_accelerator_access", Level: "MUST", Checks: []string{"a.one", "b.three", "kubelet.only"}, Procedures: []Procedure{
			{Procedure: "held", Checks: []string{"b.three"}, Shapes: "s1"},
			{Procedure: "failed", Checks: []string{"a.two", "b.three"}, Shapes: "s2"},
			{Procedure: "not run", Checks: []string{"kubelet.only", "a.one"}, Shapes: "s3"},
		}},
		{ID: "gpu_sharing", Level: "SHOULD", Checks: []string{"a.two"}},
	},
}

// The bundle's JUnit imports cleanly into a JUnit parser (joshdk/go-junit,
// what many report tools build on): every check a case of its own
// classname, failures kept, versions and fingerprint as properties.
func TestCertificationJUnitParses(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, certSummary().WriteCertification(dir, certInfo))
	suites, err := junit.IngestFile(filepath.Join(dir, CertJUnitFile))
	require.NoError(t, err)
	require.Len(t, suites, 1)
	s := suites[0]
	assert.Equal(t, 3, s.Totals.Tests)
	assert.Equal(t, 1, s.Totals.Failed)
	classnames := map[string]bool{}
	for _, tc := range s.Tests {
		classnames[tc.Classname] = true
	}
	assert.Len(t, classnames, 3, "one classname per check")
	assert.Equal(t, "sha256:abc", s.Properties["candidate.fingerprint"])
	assert.Equal(t, "v1.37.2", s.Properties["version.kubernetes"])
}

func TestCertificationProductAndLog(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, certSummary().WriteCertification(dir, certInfo))
	b, err := os.ReadFile(filepath.Join(dir, CertProductFile))
	require.NoError(t, err)
	var product struct {
		Metadata Product
		Spec     struct{ Gpupool []requirementResult }
	}
	require.NoError(t, yaml.Unmarshal(b, &product))
	assert.Equal(t, "V", product.Metadata.VendorName)
	require.Len(t, product.Spec.Gpupool, 2)
	access, sharing := product.Spec.Gpupool[0], product.Spec.Gpupool[1]
	assert.Equal(t, "Implemented", access.Status)
	assert.Contains(t, access.Notes, "not run here: kubelet.only")
	assert.Contains(t, access.Evidence, "junit_01.xml#a.one")
	assert.Empty(t, sharing.Status, "a requirement with a failed check is not claimed")
	assert.Contains(t, sharing.Notes, "a.two")
	// A run that got to no check claims nothing.
	empty := &Summary{Candidate: Ref{Name: "cand"}, Errors: []string{"setup: refused"}}
	empty.Finish()
	dir2 := t.TempDir()
	require.NoError(t, empty.WriteCertification(dir2, certInfo))
	b, err = os.ReadFile(filepath.Join(dir2, CertProductFile))
	require.NoError(t, err)
	assert.NotContains(t, string(b), "Implemented")

	log, err := os.ReadFile(filepath.Join(dir, CertLogFile))
	require.NoError(t, err)
	assert.Contains(t, string(log), "[FAIL] a.two")
	assert.Contains(t, string(log), "expected x but y")
	assert.Contains(t, string(log), "version gpupool v0.1.0")
}

// Each test procedure of a requirement says whether it ran and held, with
// the shapes its checks tried.
func TestCertificationMappingSaysWhichProceduresRan(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, certSummary().WriteCertification(dir, certInfo))
	b, err := os.ReadFile(filepath.Join(dir, CertMappingFile))
	require.NoError(t, err)
	var m struct {
		Requirements []struct {
			ID         string `json:"id"`
			Procedures []struct {
				Procedure, Status, Shapes string
			} `json:"procedures"`
		} `json:"requirements"`
	}
	require.NoError(t, yaml.Unmarshal(b, &m))
	require.NotEmpty(t, m.Requirements)
	require.Len(t, m.Requirements[0].Procedures, 3)
	for _, p := range m.Requirements[0].Procedures {
		assert.Equal(t, p.Procedure, p.Status, "procedure %s", p.Procedure)
		assert.NotEmpty(t, p.Shapes)
	}
}
