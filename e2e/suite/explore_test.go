// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/e2e/dirs"
)

// The exploration defaults need no checkout: the corpus is a built-in
// manifest, and counterexamples go to ./gpupool-reports.
func TestExplorationDefaults(t *testing.T) {
	manifests := t.TempDir() // stands for the unpacked ones
	t.Setenv(dirs.ManifestsEnv, manifests)
	t.Setenv("GPUPOOL_ROOT", "")
	t.Chdir(t.TempDir())
	s, err := Exploration()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(manifests, DefaultCorpus); s.Corpus != want {
		t.Errorf("exploration corpus %s, want %s", s.Corpus, want)
	}
	wd, _ := os.Getwd()
	if !strings.HasPrefix(s.ReportDir, filepath.Join(wd, "gpupool-reports")+string(filepath.Separator)) {
		t.Errorf("exploration report dir %s, want one under ./gpupool-reports", s.ReportDir)
	}
}
