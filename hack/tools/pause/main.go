// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Command pause is the pod sandbox's process for the kind node image: it
// holds the pod's namespaces, reaps orphans when it is the pod's PID 1,
// and exits on SIGINT or SIGTERM, which is all the kubelet asks of it.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 8)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
