// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package dirs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/gpupool/gpupool/manifests"
)

// ManifestsEnv names a directory that replaces the built-in manifests
// (say a checkout's manifests/, to try edits without rebuilding).
const ManifestsEnv = "GPUPOOL_MANIFESTS"

var manifestsDir = sync.OnceValues(findManifests)

// Manifests returns a directory holding the built-in manifests (package
// manifests): candidates/, fleets/, workloads/, explore/, differential/.
// On first use they are unpacked from the binary into
// CacheDir()/manifests/<hash of their contents>, so every binary with the
// same manifests shares one copy and a changed one gets its own. $ManifestsEnv
// overrides. Decided once per process.
func Manifests() (string, error) { return manifestsDir() }

// ManifestPath returns a built-in manifest's path: rel is relative to the
// manifests directory, in slash form ("candidates/reference").
func ManifestPath(rel string) (string, error) {
	dir, err := Manifests()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.FromSlash(rel)), nil
}

func findManifests() (string, error) {
	if d := os.Getenv(ManifestsEnv); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			return "", err
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("%s=%s: not a directory of manifests", ManifestsEnv, d)
		}
		return abs, nil
	}
	return unpackManifests(manifests.FS(), filepath.Join(CacheDir(), "manifests"))
}

// unpackManifests writes fsys to base/<hash>, unless it is there already.
// It unpacks into a temporary directory beside it and renames that into
// place, so a reader sees all of it or nothing; when another process
// renamed first, its copy (the same files) is used.
func unpackManifests(fsys fs.FS, base string) (string, error) {
	sum, err := treeHash(fsys)
	if err != nil {
		return "", fmt.Errorf("built-in manifests: %w", err)
	}
	dst := filepath.Join(base, sum)
	if isDir(dst) {
		return dst, nil
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("unpacking the built-in manifests: %w", err)
	}
	tmp, err := os.MkdirTemp(base, "."+sum+"-")
	if err != nil {
		return "", fmt.Errorf("unpacking the built-in manifests: %w", err)
	}
	err = os.CopyFS(tmp, fsys)
	if err == nil {
		err = os.Chmod(tmp, 0o755)
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		if isDir(dst) { // another process won the rename
			return dst, nil
		}
		return "", fmt.Errorf("unpacking the built-in manifests into %s: %w", dst, err)
	}
	return dst, nil
}

// treeHash is the first 16 hex digits of a sha256 over every file's path
// and contents, in lexical order.
func treeHash(fsys fs.FS) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(data))
		h.Write(data)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
