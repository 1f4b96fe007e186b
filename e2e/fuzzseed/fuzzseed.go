// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package fuzzseed gives the fuzz targets of the packages that parse user
// input their seed corpus: the built-in manifests, as users write them.
package fuzzseed

import (
	"os"
	"path/filepath"
	"testing"
)

// Add adds every file matching pattern (relative to the fuzzing package's
// directory), passed through each, as a seed. each may return nil to skip
// a file.
func Add(f *testing.F, pattern string, each func([]byte) []byte) {
	f.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed files match %s", pattern)
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if each != nil {
			data = each(data)
		}
		if data != nil {
			f.Add(data)
		}
	}
}
