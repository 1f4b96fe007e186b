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
	// up is the cluster as the first Up found it: a run reads the
	// cluster's config, then attaches, with one check that it answers.
	up *Cluster
	// dir holds the run's own kubeconfig (see Up) until Release.
	dir string
}

// kubeconfigPrefix starts the name of the temporary directory of a run's
// own kubeconfig; the process's id follows, so a run killed with SIGKILL
// leaves one that the next finds dead and removes.
const kubeconfigPrefix = "gpupool-kubeconfig-"

// Kind implements Provider.
func (e *Existing) Kind() string { return "kubeconfig" }

// Up implements Provider: it checks the apiserver answers and names the
// cluster after the kubeconfig context.
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
	own, dir, err := writeOwnKubeconfig(raw, name)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s (context %q): %w", e.Kubeconfig, name, err)
	}
	e.dir = dir
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
	e.dir, e.up = "", nil
	return err
}

// writeOwnKubeconfig writes raw reduced to context name, its files' contents
// inlined, into a new private directory (0700, the file 0600), after
// removing those that runs no longer alive left.
func writeOwnKubeconfig(raw clientcmdapi.Config, name string) (path, dir string, err error) {
	_, _ = RemoveStaleKubeconfigs()
	raw.CurrentContext = name
	if err := clientcmdapi.MinifyConfig(&raw); err != nil {
		return "", "", err
	}
	if err := clientcmdapi.FlattenConfig(&raw); err != nil {
		return "", "", err
	}
	dir, err = os.MkdirTemp("", kubeconfigPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", "", err
	}
	path = filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(raw, path); err != nil {
		os.RemoveAll(dir)
		return "", "", err
	}
	return path, dir, nil
}

// RemoveStaleKubeconfigs removes the kubeconfig directories of runs whose
// process is gone (killed with SIGKILL) and returns how many it removed.
func RemoveStaleKubeconfigs() (int, error) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), kubeconfigPrefix+"*"))
	n := 0
	var errs []error
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), kubeconfigPrefix), "-", 2)[0])
		if err != nil || pid <= 0 {
			continue // not one of ours
		}
		if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
			continue // its run is alive
		}
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// Detach implements harness.Provider: nothing to keep.
func (e *Existing) Detach() {}

// Remove implements harness.Provider: gpupool made no clusters of this
// kind; its objects there go by RemoveOwned.
func (e *Existing) Remove(context.Context, Removal) (Removed, error) { return Removed{}, nil }
