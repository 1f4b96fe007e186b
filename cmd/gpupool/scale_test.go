// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/e2e/dirs"
)

// The built-in manifests of this checkout stand for the unpacked ones
// (e2e/dirs tests the unpacking), so no test writes to the user's cache.
func builtinManifests(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(dirs.ManifestsEnv, dir)
	got, err := dirs.Manifests()
	if err != nil || got != dir {
		t.Fatalf("dirs.Manifests() = %s, %v; want %s", got, err, dir)
	}
	return dir
}

func TestDefaultsAreBuiltIn(t *testing.T) {
	dir := builtinManifests(t)
	t.Chdir(t.TempDir())
	for def, want := range map[string]int{defaultScaleFleet: 1, defaultWorkload: 1, builtinBroken: 20} {
		got, err := userPaths("", def)
		if err != nil {
			t.Fatalf("default %s: %v", def, err)
		}
		if len(got) < want {
			t.Errorf("default %s: %v, want at least %d", def, got, want)
		}
		for _, p := range got {
			if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
				t.Errorf("default %s: %s is not built in", def, p)
			}
		}
	}
	broken, _ := userPaths("", builtinBroken)
	for _, d := range broken {
		if _, err := os.Stat(filepath.Join(d, "candidate.yaml")); err != nil {
			t.Errorf("built-in broken candidate %s: %v", d, err)
		}
	}
}

// A relative path is the working directory's when it is there, else a
// built-in one; an absolute one is only itself.
func TestUserPathsResolveAgainstTheWorkingDirectoryFirst(t *testing.T) {
	dir := builtinManifests(t)
	wd := t.TempDir()
	t.Chdir(wd)
	builtin := filepath.Join(dir, "fleets", "scale-5k.yaml")
	if got, err := userPath("fleets/scale-5k.yaml", ""); err != nil || got != builtin {
		t.Errorf("not in the working directory: %s, %v; want the built-in %s", got, err, builtin)
	}
	mine := filepath.Join(wd, "fleets", "scale-5k.yaml")
	if err := os.MkdirAll(filepath.Dir(mine), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mine, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := userPath("fleets/scale-5k.yaml", ""); err != nil || got != mine {
		t.Errorf("in the working directory: %s, %v; want %s", got, err, mine)
	}
	if got, err := userPaths("fleets/scale-5k.yaml, candidates/broken-l4-*", ""); err != nil || len(got) != 2 || got[0] != mine || got[1] != filepath.Join(dir, "candidates", "broken-l4-untainted") {
		t.Errorf("a list: %v, %v", got, err)
	}
	for _, p := range []string{"no-such.yaml", filepath.Join(wd, "fleets", "scale-1k.yaml"), "candidates/broken-*", ""} {
		// (candidates/broken-* names many: userPath wants one)
		if got, err := userPath(p, ""); err == nil {
			t.Errorf("userPath(%q) = %s, want an error", p, got)
		}
	}
}
