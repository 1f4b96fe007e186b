// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Command fake-device-plugin serves the fake GPUs of one node to its real
// kubelet through the device-plugin API: run as a DaemonSet on kind nodes
// annotated with a fakegpu inventory (fakegpu.gpupool.dev/sku,
// fakegpu.gpupool.dev/gpus), it advertises what the simulated NVIDIA stack
// publishes for that node from the cluster's ClusterPolicy and ConfigMaps,
// the same model the KWOK GPU nodes follow. It watches its Node, the
// ClusterPolicy and the ConfigMaps of the GPU Operator namespace, and
// serves again whenever they change. The MIG manager is not its part: on
// a MIG node it serves the layout the fakegpu controller recorded as
// applied (fakegpu.gpupool.dev/mig-applied), nothing while a change is
// pending.
//
// It needs the kubelet's device-plugin directory (hostPath
// /var/lib/kubelet/device-plugins) and read access (list, watch) to nodes,
// clusterpolicies.nvidia.com, and configmaps in --namespace.
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

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpupool/gpupool/fakegpu"
	"github.com/gpupool/gpupool/fakegpu/kubeletplugin"
	"github.com/gpupool/gpupool/fakegpu/nodestack"
	"github.com/gpupool/gpupool/fakegpu/nvidiaruntime"
)

// retryAfter is the wait before serving again after a server failed to
// start (its socket could not be created).
const retryAfter = 5 * time.Second

type options struct {
	nodeName, kubeletDir, namespace, kubeconfig, defaultMIGConfig, toolkitDir string
}

func main() {
	if filepath.Base(os.Args[0]) == nvidiaruntime.Binary {
		runtimeMain(os.Args[1:])
		return
	}
	if len(os.Args) > 1 && (os.Args[1] == modeProbe || os.Args[1] == modeProbeOnce) {
		probe(os.Args[2:], os.Args[1] == modeProbeOnce)
		return
	}
	var o options
	flag.StringVar(&o.nodeName, "node-name", os.Getenv("NODE_NAME"), "the node this plugin serves (default $NODE_NAME, set it from spec.nodeName)")
	flag.StringVar(&o.kubeletDir, "kubelet-dir", filepath.Clean(pluginapi.DevicePluginPath), "the kubelet's device-plugin directory, holding kubelet.sock")
	flag.StringVar(&o.namespace, "namespace", "gpu-operator", "the GPU Operator namespace, holding the ConfigMaps the ClusterPolicy names")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (empty: the in-cluster config)")
	flag.StringVar(&o.defaultMIGConfig, "default-mig-config", "", "optional file holding the Operator's default mig-parted ConfigMap, used when the ClusterPolicy names default-mig-parted-config and the namespace does not have it")
	flag.StringVar(&o.toolkitDir, "toolkit-dir", "", "where to install the fake NVIDIA container runtime and its settings, as the GPU Operator's toolkit does on the host ("+nvidiaruntime.InstallDir+"); empty: none")
	flag.Parse()

	if err := run(o); err != nil {
		nodestack.Logf("fake-device-plugin: %v", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.nodeName == "" {
		return errors.New("--node-name (or $NODE_NAME) is required")
	}
	var defaultMIG *fakegpu.MIGPartedConfig
	if o.defaultMIGConfig != "" {
		var err error
		if defaultMIG, err = fakegpu.LoadMIGPartedConfigMap(o.defaultMIGConfig); err != nil {
			return fmt.Errorf("--default-mig-config: %w", err)
		}
	}
	cs, dyn, host, err := nodestack.Clients(o.kubeconfig)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	nodestack.Logf("fake-device-plugin: node %s, kubelet dir %s, GPU Operator namespace %s, cluster %s", o.nodeName, o.kubeletDir, o.namespace, host)
	return serve(ctx, o, cs, dyn, defaultMIG)
}

// serve runs the plugin for o.nodeName until ctx ends, then removes its
// sockets.
func serve(ctx context.Context, o options, cs kubernetes.Interface, dyn dynamic.Interface, defaultMIG *fakegpu.MIGPartedConfig) error {
	plugin, err := kubeletplugin.New(kubeletplugin.Options{NodeName: o.nodeName, Dir: o.kubeletDir, Log: nodestack.Logf})
	if err != nil {
		return err
	}
	if err := plugin.Start(ctx); err != nil {
		return err
	}
	defer plugin.Stop()
	if o.toolkitDir != "" {
		// The toolkit's part on a real node: the runtime the nvidia handler
		// runs. It stays when the plugin stops, as an installed toolkit
		// outlives a device plugin restart.
		if err := nvidiaruntime.Install(o.toolkitDir); err != nil {
			return fmt.Errorf("installing the fake NVIDIA runtime in %s: %w", o.toolkitDir, err)
		}
		nodestack.Logf("fake-device-plugin: NVIDIA runtime installed as %s", filepath.Join(o.toolkitDir, nvidiaruntime.Binary))
	}
	s := syncer{plugin: plugin, toolkitDir: o.toolkitDir}
	nodestack.Watch(ctx, cs, dyn, nodestack.Options{Node: o.nodeName, Namespace: o.namespace, DefaultMIG: defaultMIG, Name: "fake-device-plugin", Log: nodestack.Logf}, s.sync)
	nodestack.Logf("fake-device-plugin: stopping, removing the plugin sockets")
	return nil
}

// syncer updates the plugin from the node's view, logging only what
// changed.
type syncer struct {
	plugin     *kubeletplugin.Plugin
	lastServed string
	toolkitDir string
}

func (s *syncer) sync(v nodestack.View) time.Duration {
	var retry time.Duration
	plan, err := s.plugin.Update(v.Stack, v.Labels, v.Annotations)
	if err != nil {
		nodestack.Logf("fake-device-plugin: %v (retrying in %s)", err, retryAfter)
		retry = retryAfter
	}
	if s.toolkitDir != "" && v.Found {
		cfg := nvidiaruntime.NodeConfig{Runtime: plan.Runtime, GPUs: plan.GPUs}
		if changed, err := nvidiaruntime.WriteConfig(s.toolkitDir, cfg); err != nil {
			nodestack.Logf("fake-device-plugin: writing the NVIDIA runtime's settings: %v (retrying in %s)", err, retryAfter)
			retry = retryAfter
		} else if changed {
			nodestack.Logf("fake-device-plugin: NVIDIA runtime settings: %+v, %d GPUs", cfg.Runtime, len(cfg.GPUs.GPUs))
		}
	}
	served := describe(plan)
	if v.ConfigErr != "" {
		served = "nothing (" + v.ConfigErr + ")"
	}
	if served != s.lastServed {
		nodestack.Logf("fake-device-plugin: serving %s", served)
		s.lastServed = served
	}
	return retry
}

// describe summarises a plan for the log: resources and device counts, or
// why nothing is served.
func describe(p kubeletplugin.Plan) string {
	switch {
	case p.Down != "":
		return "nothing (" + p.Down + ")"
	case len(p.Resources) == 0:
		return "nothing (the node advertises no GPU resources)"
	}
	parts := make([]string, 0, len(p.Resources))
	for _, name := range p.ResourceNames() {
		parts = append(parts, fmt.Sprintf("%s: %d", name, len(p.Resources[name].DeviceIDs)))
	}
	return strings.Join(parts, ", ")
}
