// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package input

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadFileRefusesWhatIsNotABoundedRegularFile(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(ok, []byte("kind: Fleet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFile(ok, 1024); err != nil || string(data) != "kind: Fleet\n" {
		t.Errorf("a small regular file: %q, %v", data, err)
	}
	for path, want := range map[string]string{
		big:  "big.yaml is 2.0 KiB: an input file is at most 1.0 KiB",
		fifo: "fifo.yaml is a named pipe (FIFO)",
		zero: "zero.yaml is a device",
		dir:  "is a directory",
	} {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(path, 1024); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("ReadFile(%s) = %v, want an error containing %q", path, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadFile(%s) still blocked after 5s: it opened what it should have refused", path)
		}
	}
}
