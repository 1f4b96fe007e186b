// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build tools

// Package karpenter pins the autoscaler hack/build-control-plane.sh builds:
// Karpenter's KWOK cloud provider (sigs.k8s.io/karpenter/kwok), a real
// Karpenter whose "cloud" creates KWOK nodes. It has its own module
// because Karpenter v1.13.0 pins k8s.io v0.35; the replace directives move
// it onto the control plane's v0.37.2 (and controller-runtime v0.24.1, as
// gpupool links), so the k8s.io packages it shares with them come from
// Go's build cache instead of being compiled again.
package karpenter

import (
	_ "sigs.k8s.io/karpenter/kwok"
)
