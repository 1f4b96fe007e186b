// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// KwokProcess is a kwok controller this machine runs against a cluster it
// did not make, looking after only the nodes a label selector picks: the
// simulated pools a run joins to someone else's cluster. It gets kwok's
// default Stages (as kwokctl gives its own clusters), serves nothing, and
// dies with the process that started it.
type KwokProcess struct {
	cmd  *exec.Cmd
	log  *tailBuffer
	done chan error
}

// StartKwok runs binary against the cluster kubeconfig names, managing the
// nodes labelSelector picks. Its Stages come on stdin and its log stays in
// memory: a kwok killed with its run leaves no file behind.
func StartKwok(binary, kubeconfig, labelSelector string) (*KwokProcess, error) {
	if st, err := os.Stat(binary); err != nil || st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("%w: kwok (%s)", ErrMissingBinaries, binary)
	}
	cmd := exec.Command(binary,
		"--config", "/dev/stdin",
		"--kubeconfig", kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-label-selector", labelSelector,
		"--node-lease-duration-seconds", "40",
	)
	cmd.Stdin = strings.NewReader(strings.Join(kwokDefaultStages, "\n---\n"))
	log := &tailBuffer{max: 4096}
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group (a terminal's Ctrl-C is gpupool's to handle),
	// and killed if gpupool dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting kwok: %w", err)
	}
	k := &KwokProcess{cmd: cmd, log: log, done: make(chan error, 1)}
	go func() { k.done <- cmd.Wait() }()
	return k, nil
}

// Err returns kwok's exit and the tail of its log if it has exited, else nil.
func (k *KwokProcess) Err() error {
	select {
	case err := <-k.done:
		k.done <- err
		return fmt.Errorf("kwok exited (%v): %s", err, k.log.String())
	default:
		return nil
	}
}

// Stop ends kwok and waits for it.
func (k *KwokProcess) Stop(ctx context.Context) error {
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case err = <-k.done:
	case <-time.After(10 * time.Second):
		_ = k.cmd.Process.Kill()
		err = <-k.done
	case <-ctx.Done():
		_ = k.cmd.Process.Kill()
		err = <-k.done
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil // stopped by us
	}
	return err
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
