// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"

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
}

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
	e.up = &Cluster{
		Name:       name,
		Kubeconfig: e.Kubeconfig,
		REST:       rc,
		Components: map[string]string{"kubernetes": version, "provider": "existing cluster (" + rc.Host + ")"},
	}
	return e.up, nil
}

// Down implements Provider: the cluster is not gpupool's to remove.
func (e *Existing) Down(context.Context) error { return nil }

// Detach implements harness.Provider: nothing to keep.
func (e *Existing) Detach() {}

// Remove implements harness.Provider: gpupool made no clusters of this
// kind; its objects there go by RemoveOwned.
func (e *Existing) Remove(context.Context, Removal) (Removed, error) { return Removed{}, nil }
