package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	dir  string
	done chan error
}

// StartKwok runs binary against the cluster kubeconfig names, managing the
// nodes labelSelector picks.
func StartKwok(binary, kubeconfig, labelSelector string) (*KwokProcess, error) {
	if st, err := os.Stat(binary); err != nil || st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("%w: kwok (%s)", ErrMissingBinaries, binary)
	}
	dir, err := os.MkdirTemp("", "gpupool-kwok-")
	if err != nil {
		return nil, err
	}
	stages := filepath.Join(dir, "stages.yaml")
	if err := os.WriteFile(stages, []byte(strings.Join(kwokDefaultStages, "\n---\n")), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "kwok.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(binary,
		"--config", stages,
		"--kubeconfig", kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-label-selector", labelSelector,
		"--node-lease-duration-seconds", "40",
	)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group (a terminal's Ctrl-C is gpupool's to handle),
	// and killed if gpupool dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting kwok: %w", err)
	}
	k := &KwokProcess{cmd: cmd, dir: dir, done: make(chan error, 1)}
	go func() { k.done <- cmd.Wait() }()
	return k, nil
}

// Err returns kwok's exit and the tail of its log if it has exited, else nil.
func (k *KwokProcess) Err() error {
	select {
	case err := <-k.done:
		k.done <- err
		b, _ := os.ReadFile(filepath.Join(k.dir, "kwok.log"))
		if len(b) > 2000 {
			b = b[len(b)-2000:]
		}
		return fmt.Errorf("kwok exited (%v): %s", err, b)
	default:
		return nil
	}
}

// Stop ends kwok and waits for it, then removes its files.
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
		err = nil // stopped by us
	}
	return errors.Join(err, os.RemoveAll(k.dir))
}
