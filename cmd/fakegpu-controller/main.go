// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Command fakegpu-controller runs the simulated NVIDIA GPU Operator stack
// (device plugin, GPU Feature Discovery, MIG manager, and the kubelet's
// part for GPU pods) against any cluster: every node annotated with a
// fakegpu inventory (fakegpu.gpupool.dev/sku, fakegpu.gpupool.dev/gpus)
// advertises what the real stack would publish from the cluster's
// ClusterPolicy and ConfigMaps. gpupool runs the same code in-process.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpupool/gpupool/fakegpu"
	"github.com/gpupool/gpupool/fakegpu/controller"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (default $KUBECONFIG)")
	namespace := flag.String("namespace", "gpu-operator", "namespace of the GPU Operator's ConfigMaps")
	migDefault := flag.String("default-mig-config", "", "file holding the Operator's default mig-parted ConfigMap (e.g. the gpu-operator module's assets/state-mig-manager/0400_configmap.yaml)")
	delay := flag.Duration("mig-reconfigure-delay", 500*time.Millisecond, "how long a node stays in mig.config.state=pending")
	nodeSelector := flag.String("node-selector", "", "label selector of the nodes to simulate the stack for (default every node)")
	flag.Parse()

	if err := run(*kubeconfig, *namespace, *migDefault, *nodeSelector, *delay); err != nil {
		fmt.Fprintln(os.Stderr, "fakegpu-controller:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, namespace, migDefault, nodeSelector string, delay time.Duration) error {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	opt := controller.Options{
		Namespace:           namespace,
		MIGReconfigureDelay: delay,
		NodeSelector:        nodeSelector,
		Log: func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
		},
	}
	if migDefault != "" {
		if opt.DefaultMIGParted, err = fakegpu.LoadMIGPartedConfigMap(migDefault); err != nil {
			return err
		}
	}
	c, err := controller.New(rc, opt)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := c.Start(ctx); err != nil {
		return err
	}
	opt.Log("fakegpu-controller: running against %s", rc.Host)
	<-ctx.Done()
	return nil
}
