// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Command etcd is upstream etcd's server main, built from the Go module so no
// release tarball or image is needed.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
