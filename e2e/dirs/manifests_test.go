// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package dirs

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gpupool/gpupool/manifests"
)

// Manifests() unpacks into CacheDir(): the package's tests get a cache of
// their own, not the user's.
func TestMain(m *testing.M) {
	cache, err := os.MkdirTemp("", "gpupool-dirs-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("GPUPOOL_CACHE", cache)
	os.Unsetenv(ManifestsEnv)
	code := m.Run()
	os.RemoveAll(cache)
	os.Exit(code)
}

// sameTree fails unless dir holds exactly fsys's files, byte for byte.
func sameTree(t *testing.T, fsys fs.FS, dir string) {
	t.Helper()
	want := map[string][]byte{}
	if err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		want[p], err = fs.ReadFile(fsys, p)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	got := 0
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		got++
		if w, ok := want[filepath.ToSlash(rel)]; !ok || !bytes.Equal(data, w) {
			t.Errorf("%s: not the embedded file", rel)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got != len(want) {
		t.Errorf("%s holds %d files, %d embedded", dir, got, len(want))
	}
}

func TestManifestsUnpackTheBuiltInOnes(t *testing.T) {
	dir, err := Manifests()
	if err != nil {
		t.Fatal(err)
	}
	if base := filepath.Join(CacheDir(), "manifests"); filepath.Dir(dir) != base || len(filepath.Base(dir)) != 16 {
		t.Errorf("Manifests() = %s, want %s/<16 hex digits>", dir, base)
	}
	sameTree(t, manifests.FS(), dir)
	for _, rel := range []string{"candidates/reference", "fleets/reference.yaml", "explore/corpus", "differential", "workloads", "candidates/broken-no-runtimeclass/candidate.yaml"} {
		p, err := ManifestPath(rel)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("built-in %s: %v", rel, err)
		}
	}
	again, err := Manifests()
	if err != nil || again != dir {
		t.Errorf("second Manifests() = %s, %v; want %s (memoised)", again, err, dir)
	}
}

// Processes unpacking at once all end up with one complete copy, and leave
// no temporary directory behind.
func TestUnpackManifestsConcurrently(t *testing.T) {
	base := t.TempDir()
	const n = 8
	dirs, errs := make([]string, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { dirs[i], errs[i] = unpackManifests(manifests.FS(), base) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || dirs[i] != dirs[0] {
			t.Fatalf("unpack %d: %s, %v; want %s", i, dirs[i], errs[i], dirs[0])
		}
	}
	sameTree(t, manifests.FS(), dirs[0])
	entries, _ := os.ReadDir(base)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %v, want only the unpacked copy", base, names)
	}
	// An existing copy is used as it is.
	marker := filepath.Join(dirs[0], "marker")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if d, err := unpackManifests(manifests.FS(), base); err != nil || d != dirs[0] {
		t.Errorf("unpack over a copy: %s, %v", d, err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the existing copy was replaced: %v", err)
	}
}

func TestTreeHashFollowsTheContents(t *testing.T) {
	a, err := treeHash(manifests.FS())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, manifests.FS()); err != nil {
		t.Fatal(err)
	}
	if b, _ := treeHash(os.DirFS(dir)); b != a {
		t.Errorf("a copy hashes to %s, the original to %s", b, a)
	}
	if err := os.WriteFile(filepath.Join(dir, "fleets/reference.yaml"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := treeHash(os.DirFS(dir)); b == a {
		t.Error("a changed file leaves the hash as it was")
	}
}

func TestManifestsEnvOverrides(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(ManifestsEnv, dir)
	if got, err := findManifests(); err != nil || got != dir {
		t.Errorf("%s=%s: %s, %v", ManifestsEnv, dir, got, err)
	}
	t.Setenv(ManifestsEnv, filepath.Join(dir, "missing"))
	if _, err := findManifests(); err == nil || !strings.Contains(err.Error(), ManifestsEnv) {
		t.Errorf("%s naming no directory: %v, want an error naming it", ManifestsEnv, err)
	}
}

func TestReportsDir(t *testing.T) {
	t.Setenv("GPUPOOL_ROOT", "")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if got := ReportsDir(); got != filepath.Join(root, "reports", "out") {
		t.Errorf("in the checkout: ReportsDir() = %s, want %s/reports/out", got, root)
	}
	t.Chdir(t.TempDir())
	wd, _ := os.Getwd()
	if got := ReportsDir(); got != filepath.Join(wd, "gpupool-reports") {
		t.Errorf("outside a checkout: ReportsDir() = %s, want %s/gpupool-reports", got, wd)
	}
}
