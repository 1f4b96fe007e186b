// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package input reads the files a user hands gpupool (fleets, candidate
// manifests, workloads) within bounds: only regular files, each of a size
// the machine holds many times over. A FIFO would block the open forever
// and /dev/zero would be read until memory runs out, before any cleanup is
// armed; both are refused with the path named, before anything is read.
package input

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Bounds of the inputs: far beyond any real fleet, candidate or workload
// (the built-in ones are under 20 KiB), far below what the machine holds.
const (
	MaxFileBytes = 4 << 20 // one file
	MaxDirFiles  = 512     // manifests in one candidate directory
)

// ReadFile reads path if it is a regular file (after symlinks) of at most
// max bytes.
func ReadFile(path string, max int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := Regular(path, fi, max); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The file may grow after the Stat: read one byte past the bound.
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: more than %s: an input file must be smaller", path, bytes(max))
	}
	return data, nil
}

// Regular is nil when fi (path's, after symlinks) is a regular file of at
// most max bytes, else an error naming path and what it is.
func Regular(path string, fi fs.FileInfo, max int64) error {
	m := fi.Mode()
	switch {
	case m.IsRegular():
	case m.IsDir():
		return fmt.Errorf("%s is a directory, not a file", path)
	case m&fs.ModeNamedPipe != 0:
		return fmt.Errorf("%s is a named pipe (FIFO): an input must be a regular file", path)
	case m&fs.ModeDevice != 0 || m&fs.ModeCharDevice != 0:
		return fmt.Errorf("%s is a device: an input must be a regular file", path)
	case m&fs.ModeSocket != 0:
		return fmt.Errorf("%s is a socket: an input must be a regular file", path)
	default:
		return fmt.Errorf("%s is not a regular file (mode %s)", path, m)
	}
	if fi.Size() > max {
		return fmt.Errorf("%s is %s: an input file is at most %s", path, bytes(fi.Size()), bytes(max))
	}
	return nil
}

func bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
