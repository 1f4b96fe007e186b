// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package controller

import (
	nodev1 "k8s.io/api/node/v1"
)

func handlerOf(obj any) string {
	if rc, ok := obj.(*nodev1.RuntimeClass); ok {
		return rc.Handler
	}
	return ""
}
