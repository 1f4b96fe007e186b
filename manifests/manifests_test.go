// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"bytes"
	"io/fs"
	"os"
	"strings"
	"testing"
)

// Every data file in this directory is embedded as it is: a new directory
// needs its name in the go:embed line.
func TestEverythingIsEmbedded(t *testing.T) {
	onDisk := map[string]bool{}
	err := fs.WalkDir(os.DirFS("."), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(p, "/") {
			return err // the files at the top are this package's Go files
		}
		onDisk[p] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	embedded := 0
	err = fs.WalkDir(FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		embedded++
		got, err := fs.ReadFile(FS(), p)
		if err != nil {
			return err
		}
		want, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: embedded copy is not the file (%v)", p, err)
		}
		delete(onDisk, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range onDisk {
		t.Errorf("%s is not embedded: add its directory to the go:embed line (or rename it if it starts with . or _)", p)
	}
	for _, p := range []string{"candidates/reference/candidate.yaml", "fleets/reference.yaml", "workloads/gpu-burst.yaml", "explore/corpus", "differential"} {
		if _, err := fs.Stat(FS(), p); err != nil {
			t.Errorf("built-in %s: %v", p, err)
		}
	}
	if embedded == 0 {
		t.Error("nothing embedded")
	}
}
