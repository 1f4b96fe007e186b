package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
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
// ("fake-device-plugin probe NVIDIA_VISIBLE_DEVICES"): it prints NAME=value
// for each variable, as the kubelet set them from the device plugin's
// Allocate response, to its log, and then idles until stopped (once:
// returns). One image serves both the plugin and its workloads: nothing
// else can be pulled.
func probe(names []string, once bool) {
	printEnv(os.Stdout, names, os.LookupEnv)
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
