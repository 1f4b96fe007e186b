// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build tools

// Package tools pins the commands hack/build-control-plane.sh builds: the
// embedded cluster's control plane and kwok, and the node binaries of the
// kind node image (hack/build-kind-node-image.sh). kwok is built here, not
// from its own go.mod, so it links the control plane's k8s.io modules and
// their compiled packages are shared (3.5 min less on a cold machine; kwok
// v0.8.0 pins v0.36.1, and builds and runs with v0.37.2).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubeadm"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "sigs.k8s.io/kwok/cmd/kwok"
	_ "sigs.k8s.io/kwok/cmd/kwokctl"
)
