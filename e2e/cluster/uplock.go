// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gpupool/gpupool/e2e/wait"
)

// upLockFile serializes cluster creation across gpupool processes on the
// machine: kwokctl gives each component a port it finds free, and two
// processes creating clusters at once (a run beside CI's mutants) picked
// the same one, so a run talked to another run's apiserver ("certificate
// signed by unknown authority"). Ports are the machine's, so the lock is
// too: it lives in the user's cache, not in a state or temp dir a test or
// a run may set for itself.
var upLockFile = func() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "gpupool", "cluster-up.lock")
}()

// lockUp takes the machine-wide creation lock, waiting for another process
// to finish its creation; the returned func releases it. The kernel drops
// the lock with a process that dies holding it.
func lockUp(ctx context.Context, timeout time.Duration) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(upLockFile), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(upLockFile, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	err = wait.For(ctx, "another gpupool process to finish creating its cluster (lock "+upLockFile+")", timeout, func(context.Context) (bool, string, error) {
		switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err {
		case nil:
			return true, "", nil
		case syscall.EWOULDBLOCK:
			return false, "held", nil
		default:
			return false, "", fmt.Errorf("locking %s: %w", upLockFile, err)
		}
	})
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
