package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// probe is what a GPU workload container runs in the kind-only checks
// ("fake-device-plugin probe NVIDIA_VISIBLE_DEVICES"): it prints NAME=value
// for each variable, as the kubelet set them from the device plugin's
// Allocate response, to its log, and then idles until stopped. One image
// serves both the plugin and its workloads: nothing else can be pulled.
func probe(names []string) {
	for _, n := range names {
		v, ok := os.LookupEnv(n)
		if !ok {
			v = "<unset>"
		}
		fmt.Printf("%s=%s\n", n, v)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
