// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package cluster brings Kubernetes clusters up and down for a run. Each
// provider (the embedded kwokctl cluster, kind, an existing cluster by
// kubeconfig) hides how; the rest of the harness sees a kubeconfig and a
// rest.Config. It also runs the processes a run keeps beside a cluster it
// did not make (a kwok controller for simulated pools).
package cluster

import (
	"context"

	"k8s.io/client-go/rest"
)

// Cluster is a running cluster a run can talk to.
type Cluster struct {
	Name       string
	Kubeconfig string // path to a kubeconfig file for kubectl and suites
	REST       *rest.Config
	// Components names what runs the control plane and at which version,
	// for reports.
	Components map[string]string
	// RealNodes are the nodes with a real kubelet (none on the embedded
	// cluster, whose nodes are all KWOK's).
	RealNodes []string
	// Images are local images the provider loaded into the real nodes, by
	// role ("device-plugin").
	Images map[string]string
}

// Provider creates and destroys clusters of one kind.
type Provider interface {
	// Kind names the provider ("embedded", "kind", "kubeconfig").
	Kind() string
	// Up creates the cluster (or attaches to it) and returns once the
	// apiserver answers.
	Up(ctx context.Context) (*Cluster, error)
	// Down removes everything Up started. It is safe to call twice and
	// after a failed Up.
	Down(ctx context.Context) error
}
