// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gpupool/gpupool/e2e/wait"
)

// Existing is a cluster someone else runs, reached through a kubeconfig.
// gpupool neither creates nor removes it: Down is a no-op, and what a run
// creates in it is the run's to remove.
type Existing struct {
	Kubeconfig string
	// Context is the kubeconfig context to use ("" for its current one).
	Context string
	// up is the cluster as Up found it, until Release: a run reads the
	// cluster's config, then attaches, with one check that it answers.
	up *Cluster
	// dir holds the run's own kubeconfig (see Up) until Release; lock,
	// held while it does, tells a sweep the run is alive.
	dir  string
	lock *os.File
}

// kubeconfigPrefix starts the name of the temporary directory of a run's
// own kubeconfig; the process's id follows. A run killed with SIGKILL
// leaves one, which the next finds unlocked and removes.
const kubeconfigPrefix = "gpupool-kubeconfig-"

// Kind implements Provider.
func (e *Existing) Kind() string { return "kubeconfig" }

// Up implements Provider: it checks the apiserver answers, names the
// cluster after the kubeconfig context, and writes the run's private
// kubeconfig of that context (until Release). The context is fixed by the
// first Up: a later one, after Release, reads the same context again even
// if the file's current one has changed.
func (e *Existing) Up(ctx context.Context) (*Cluster, error) {
	if e.up != nil {
		return e.up, nil
	}
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: e.Kubeconfig}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: e.Context})
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", e.Kubeconfig, err)
	}
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", e.Kubeconfig, err)
	}
	rc.QPS, rc.Burst = 200, 400
	name := e.Context
	if name == "" {
		name = raw.CurrentContext
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, err
	}
	var version string
	err = wait.For(ctx, "the apiserver at "+rc.Host+" to answer", 30*time.Second, func(context.Context) (bool, string, error) {
		v, err := dc.ServerVersion()
		if err != nil {
			return false, err.Error(), nil
		}
		version = v.GitVersion
		return true, "", nil
	})
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s (context %q): %w", e.Kubeconfig, name, err)
	}
	// Everything the run starts that reads a kubeconfig file (the suites,
	// kwok, Karpenter) gets one of this context alone, credentials
	// inlined, written once: the user's file names its current context,
	// which may be another cluster (--context) or change during the run.
	own, dir, lock, err := writeOwnKubeconfig(raw, name)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s (context %q): %w", e.Kubeconfig, name, err)
	}
	e.dir, e.lock, e.Context = dir, lock, name
	e.up = &Cluster{
		Name:       name,
		Kubeconfig: own,
		REST:       rc,
		Components: map[string]string{"kubernetes": version, "provider": "existing cluster (" + rc.Host + ")"},
	}
	return e.up, nil
}

// Down implements Provider: the cluster is not gpupool's to remove.
func (e *Existing) Down(context.Context) error { return nil }

// Release removes the run's own kubeconfig; a later Up writes it again.
func (e *Existing) Release() error {
	if e.dir == "" {
		return nil
	}
	err := os.RemoveAll(e.dir)
	e.lock.Close()
	e.dir, e.lock, e.up = "", nil, nil
	return err
}

// writeOwnKubeconfig writes raw reduced to context name, its files' contents
// inlined, into a new private directory (0700, the file 0600) whose lock
// file it holds, after removing those that runs no longer alive left.
func writeOwnKubeconfig(raw clientcmdapi.Config, name string) (path, dir string, lock *os.File, err error) {
	_, _ = RemoveStaleKubeconfigs()
	raw.CurrentContext = name
	if err := clientcmdapi.MinifyConfig(&raw); err != nil {
		return "", "", nil, err
	}
	if err := clientcmdapi.FlattenConfig(&raw); err != nil {
		return "", "", nil, err
	}
	dir, err = os.MkdirTemp("", kubeconfigPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", "", nil, err
	}
	// Held until Release or the process's end, however it ends: a flock
	// says the run is alive where a pid cannot (another pid namespace
	// sharing TMPDIR, a pid reused).
	lock, err = os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err != nil {
		lock.Close()
		os.RemoveAll(dir)
		return "", "", nil, err
	}
	path = filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(raw, path); err != nil {
		lock.Close()
		os.RemoveAll(dir)
		return "", "", nil, err
	}
	return path, dir, lock, nil
}

// RemoveStaleKubeconfigs removes this user's kubeconfig directories of runs
// that are gone (killed with SIGKILL) and returns how many it removed.
func RemoveStaleKubeconfigs() (int, error) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), kubeconfigPrefix+"*"))
	n := 0
	var errs []error
	for _, d := range dirs {
		if !staleKubeconfigDir(d) {
			continue
		}
		if err := errors.Join(removeAlso(d), os.RemoveAll(d)); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// alsoRemoveFile, in a run's kubeconfig directory, lists more temporary
// directories of the run's (AlsoRemove), removed with it by a sweep.
const alsoRemoveFile = "also-remove"

// AlsoRemove records dir, a temporary directory of a run attached through
// the private kubeconfig at kubeconfig, for the sweep that removes that
// kubeconfig's directory once the run is gone (a run killed with SIGKILL
// cannot remove its own). A kubeconfig not written by Up is left alone.
func AlsoRemove(kubeconfig, dir string) error {
	own := filepath.Dir(kubeconfig)
	if !strings.HasPrefix(filepath.Base(own), kubeconfigPrefix) {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(own, alsoRemoveFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, dir)
	return errors.Join(err, f.Close())
}

// removeAlso removes the directories d's list names that are this user's
// temporary directories of gpupool's.
func removeAlso(d string) error {
	b, err := os.ReadFile(filepath.Join(d, alsoRemoveFile))
	if err != nil {
		return nil
	}
	var errs []error
	for _, p := range strings.Fields(string(b)) {
		if filepath.Dir(p) != filepath.Clean(os.TempDir()) || !strings.HasPrefix(filepath.Base(p), "gpupool-") {
			continue
		}
		if st, err := os.Lstat(p); err != nil || !st.IsDir() {
			continue
		} else if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != os.Getuid() {
			continue
		}
		errs = append(errs, os.RemoveAll(p))
	}
	return errors.Join(errs...)
}

// staleKubeconfigDir: d is a directory of this user's named as a run's,
// and no live process holds its lock (without a lock file: its pid is
// gone). Anything else is left alone.
func staleKubeconfigDir(d string) bool {
	st, err := os.Lstat(d)
	if err != nil || !st.IsDir() {
		return false
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != os.Getuid() {
		return false
	}
	pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), kubeconfigPrefix), "-", 2)[0])
	if err != nil || pid <= 0 {
		return false // not named as a run's
	}
	lock, err := os.Open(filepath.Join(d, "lock"))
	if err != nil {
		err := syscall.Kill(pid, 0)
		return err != nil && !errors.Is(err, syscall.EPERM)
	}
	defer lock.Close()
	return syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

// Detach implements harness.Provider: nothing to keep.
func (e *Existing) Detach() {}

// Remove implements harness.Provider: gpupool made no clusters of this
// kind; its objects there go by RemoveOwned.
func (e *Existing) Remove(context.Context, Removal) (Removed, error) { return Removed{}, nil }
