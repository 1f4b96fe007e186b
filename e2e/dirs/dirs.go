// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package dirs says where gpupool keeps things on this machine: built
// binaries and live clusters' files (CacheDir, StateDir), run reports
// (ReportsDir), and the built-in manifests, unpacked from the binary
// (Manifests).
package dirs

import (
	"errors"
	"os"
	"path/filepath"
)

// CacheDir is where hack/build-control-plane.sh puts built binaries.
func CacheDir() string {
	if d := os.Getenv("GPUPOOL_CACHE"); d != "" {
		return d
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "gpupool")
}

// StateDir holds live clusters' working files.
func StateDir() string {
	if d := os.Getenv("GPUPOOL_STATE"); d != "" {
		return d
	}
	return filepath.Join(CacheDir(), "state")
}

// ReportsDir is the base directory of a run's reports: reports/out of the
// gpupool checkout the working directory is in, else ./gpupool-reports.
func ReportsDir() string {
	if root, err := RepoRoot(); err == nil {
		return filepath.Join(root, "reports", "out")
	}
	dir, err := filepath.Abs("gpupool-reports")
	if err != nil {
		return "gpupool-reports"
	}
	return dir
}

// RepoRoot finds the root of the gpupool checkout the working directory is
// in ($GPUPOOL_ROOT overrides), for ReportsDir. Nothing else depends on a
// checkout: the default manifests are built in (Manifests).
func RepoRoot() (string, error) {
	if r := os.Getenv("GPUPOOL_ROOT"); r != "" {
		return r, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && isGPUPoolModule(data) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the gpupool repository root (go.mod of github.com/gpupool/gpupool) above the working directory; set GPUPOOL_ROOT")
		}
		dir = parent
	}
}

func isGPUPoolModule(gomod []byte) bool {
	const want = "module github.com/gpupool/gpupool\n"
	return len(gomod) >= len(want) && string(gomod[:len(want)]) == want
}
