// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package hack

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every Go file and script the project wrote names its license (LICENSE,
// Apache-2.0) in its first lines, as the ecosystem's projects do. Upstream
// files kept unmodified (e2e/upstream) carry their own.
func TestEveryFileNamesItsLicense(t *testing.T) {
	root := ".."
	skip := []string{".git", "bin", "reports/out", "e2e/upstream", "node_modules"}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if slices.Contains(skip, filepath.ToSlash(rel)) || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".sh" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		head := string(data[:min(len(data), 300)])
		if !strings.Contains(head, "SPDX-License-Identifier: Apache-2.0") {
			t.Errorf("%s: no \"SPDX-License-Identifier: Apache-2.0\" in its first lines (copy the header of any other file)", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
