// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/gpupool/gpupool/fakegpu/nvidiaruntime"
)

// Probe modes: the first argument of a workload container running this
// image.
const (
	// modeProbe prints the variables and idles until stopped: an app
	// container or a sidecar, which must keep running.
	modeProbe = "probe"
	// modeProbeOnce prints them and exits 0: an init container, which must
	// finish before the app containers start.
	modeProbeOnce = "probe-once"
)

// probe is what a GPU workload container runs in the kind-only checks
// ("fake-device-plugin probe FAKEGPU_DEVICE_IDS"): it prints NAME=value
// for each variable, as the kubelet and containerd set them, and the GPUs
// the NVIDIA runtime gave it, to its log, and then idles until stopped
// (once: returns). One image serves both the plugin and its workloads: nothing
// else can be pulled.
func probe(names []string, once bool) {
	printEnv(os.Stdout, names, os.LookupEnv)
	printSight(os.Stdout, os.ReadFile)
	if once {
		return
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}

// printEnv writes NAME=value per variable, "<unset>" for one the
// container does not have.
func printEnv(w io.Writer, names []string, lookup func(string) (string, bool)) {
	for _, n := range names {
		v, ok := lookup(n)
		if !ok {
			v = "<unset>"
		}
		fmt.Fprintf(w, "%s=%s\n", n, v)
	}
}

// printSight writes the GPUs the NVIDIA runtime gave the container
// (nvidiaruntime.SightPath) as one line.
func printSight(w io.Writer, read func(string) ([]byte, error)) {
	data, err := read(nvidiaruntime.SightPath)
	v := strings.Join(strings.Fields(string(data)), ",")
	if err != nil {
		v = nvidiaruntime.NoRuntime
	}
	fmt.Fprintf(w, "%s=%s\n", nvidiaruntime.SeesLine, v)
}
