// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/gpupool/gpupool/fakegpu/nvidiaruntime"
)

// runcPaths are where a node keeps runc when it is not on the shim's PATH
// (kind's image: /usr/local/sbin; Debian's package: /usr/sbin).
var runcPaths = []string{"/usr/local/sbin/runc", "/usr/sbin/runc", "/usr/bin/runc"}

// runtimeMain is the program started as nvidia-container-runtime by
// containerd's runc shim (the node's nvidia runtime handler): on a command
// that creates a container it applies the toolkit's device selection to
// the bundle's spec (nvidiaruntime.Apply), and in every case it runs runc
// with the same arguments, as the real runtime does.
func runtimeMain(args []string) {
	if err := runtimeRun(args); err != nil {
		fmt.Fprintf(os.Stderr, "%s (fakegpu): %v\n", nvidiaruntime.Binary, err)
		os.Exit(1)
	}
}

func runtimeRun(args []string) error {
	bundle, creates, err := nvidiaruntime.Bundle(args)
	if err != nil {
		return err
	}
	if creates {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		cfg, err := nvidiaruntime.ReadConfig(filepath.Dir(self))
		if err != nil {
			return err
		}
		if _, err := nvidiaruntime.Apply(bundle, cfg); err != nil {
			return fmt.Errorf("bundle %s: %w", bundle, err)
		}
	}
	runc, err := findRunc()
	if err != nil {
		return err
	}
	return syscall.Exec(runc, append([]string{"runc"}, args...), os.Environ())
}

func findRunc() (string, error) {
	if p, err := exec.LookPath("runc"); err == nil {
		return p, nil
	}
	for _, p := range runcPaths {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("runc is neither on PATH nor in " + fmt.Sprint(runcPaths))
}
