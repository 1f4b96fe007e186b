// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Command fake-dra-plugin is NVIDIA's DRA kubelet plugin for the fake GPUs
// of one node with a real kubelet, the DRA sibling of fake-device-plugin:
// run as a DaemonSet on kind nodes, it registers driver gpu.nvidia.com with
// the kubelet, publishes for a node annotated fakegpu.gpupool.dev/dra the
// ResourceSlices the simulated driver publishes for a KWOK node with the
// same labels and annotations (nothing for any other node), and prepares
// and unprepares the claims the kubelet hands it (fakegpu/draplugin). It
// watches its Node, the ClusterPolicy and the ConfigMaps of the GPU
// Operator namespace, and publishes again whenever they change.
//
// It needs the kubelet's plugin directories (hostPath /var/lib/kubelet/plugins
// and /var/lib/kubelet/plugins_registry), the CDI directory (/var/run/cdi),
// read access to nodes, clusterpolicies.nvidia.com, configmaps in
// --namespace and resourceclaims, write access to resourceslices, and
// patch on pods (it records the CDI devices on the pods it prepared for).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/gpupool/gpupool/fakegpu"
	"github.com/gpupool/gpupool/fakegpu/draplugin"
	"github.com/gpupool/gpupool/fakegpu/nodestack"
)

type options struct {
	nodeName, namespace, kubeconfig, pluginsDir, registryDir, cdiDir string
}

func main() {
	var o options
	flag.StringVar(&o.nodeName, "node-name", os.Getenv("NODE_NAME"), "the node this plugin serves (default $NODE_NAME, set it from spec.nodeName)")
	flag.StringVar(&o.namespace, "namespace", "gpu-operator", "the GPU Operator namespace, holding the ConfigMaps the ClusterPolicy names")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (empty: the in-cluster config)")
	flag.StringVar(&o.pluginsDir, "plugins-dir", kubeletplugin.KubeletPluginsDir, "the kubelet's plugin directory; the driver's socket and state go in <dir>/"+fakegpu.DRADriver)
	flag.StringVar(&o.registryDir, "registry-dir", kubeletplugin.KubeletRegistryDir, "the kubelet's plugin registration directory")
	flag.StringVar(&o.cdiDir, "cdi-dir", "/var/run/cdi", "where the CDI specs of prepared claims are written")
	flag.Parse()
	if err := run(o); err != nil {
		nodestack.Logf("fake-dra-plugin: %v", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.nodeName == "" {
		return errors.New("--node-name (or $NODE_NAME) is required")
	}
	cs, dyn, host, err := nodestack.Clients(o.kubeconfig)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	nodestack.Logf("fake-dra-plugin: node %s, driver %s, plugins %s, CDI specs %s, GPU Operator namespace %s, cluster %s", o.nodeName, fakegpu.DRADriver, o.pluginsDir, o.cdiDir, o.namespace, host)
	return serve(ctx, o, cs, dyn)
}

// serve registers the driver with the kubelet and publishes the node's
// devices until ctx ends.
func serve(ctx context.Context, o options, cs kubernetes.Interface, dyn dynamic.Interface) error {
	dataDir := filepath.Join(o.pluginsDir, fakegpu.DRADriver)
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return err
	}
	ctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	driver, err := draplugin.New(draplugin.Options{Node: o.nodeName, Client: cs, StateFile: filepath.Join(dataDir, "prepared.json"), CDIDir: o.cdiDir, Log: nodestack.Logf, Fatal: fail})
	if err != nil {
		return err
	}
	helper, err := kubeletplugin.Start(ctx, driver,
		kubeletplugin.DriverName(fakegpu.DRADriver),
		kubeletplugin.NodeName(o.nodeName),
		kubeletplugin.KubeClient(cs),
		kubeletplugin.PluginDataDirectoryPath(dataDir),
		kubeletplugin.RegistrarDirectoryPath(o.registryDir),
		// Health reaches the scheduler as device taints in the slices.
		kubeletplugin.HealthService(false),
	)
	if err != nil {
		return fmt.Errorf("starting the kubelet plugin: %w", err)
	}
	defer helper.Stop()
	s := syncer{node: o.nodeName, driver: driver, helper: helper}
	nodestack.Watch(ctx, cs, dyn, nodestack.Options{Node: o.nodeName, Namespace: o.namespace, Name: "fake-dra-plugin", Log: nodestack.Logf}, func(v nodestack.View) time.Duration {
		return s.sync(ctx, v)
	})
	nodestack.Logf("fake-dra-plugin: stopping")
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err // exits non-zero: the DaemonSet restarts the plugin
	}
	return nil
}

// syncer publishes the node's devices from its view, logging only what
// changed.
type syncer struct {
	node       string
	driver     *draplugin.Driver
	helper     *kubeletplugin.Helper
	lastServed string
}

func (s *syncer) sync(ctx context.Context, v nodestack.View) time.Duration {
	var specs []resourcev1.ResourceSliceSpec
	down := v.ConfigErr
	if down == "" {
		specs, down = draplugin.SlicesFor(s.node, v.Stack, v.Labels, v.Annotations)
	}
	// The driver knows the devices before the scheduler can see them.
	s.driver.SetPublished(specs)
	if err := s.helper.PublishResources(ctx, draplugin.Resources(s.node, specs)); err != nil {
		nodestack.Logf("fake-dra-plugin: publishing: %v (retrying in 5s)", err)
		return 5 * time.Second
	}
	served := describe(specs)
	if down != "" {
		served = "nothing (" + down + ")"
	}
	if served != s.lastServed {
		nodestack.Logf("fake-dra-plugin: publishing %s", served)
		s.lastServed = served
	}
	return 0
}

// describe summarises specs for the log: devices per type.
func describe(specs []resourcev1.ResourceSliceSpec) string {
	n, counters := 0, 0
	types := map[string]int{}
	for _, s := range specs {
		n += len(s.Devices)
		counters += len(s.SharedCounters)
		for _, d := range s.Devices {
			if t := d.Attributes["type"].StringValue; t != nil {
				types[*t]++
			}
		}
	}
	if n == 0 && counters == 0 {
		return "no devices"
	}
	var parts []string
	for _, t := range []string{"gpu", "mig"} {
		if types[t] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", types[t], t))
		}
	}
	if counters > 0 {
		parts = append(parts, fmt.Sprintf("%d counter sets", counters))
	}
	return fmt.Sprintf("%d devices in %d slices (%s)", n, len(specs), strings.Join(parts, ", "))
}
