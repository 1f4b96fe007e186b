// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package nodestack watches what the simulated NVIDIA stack of one real
// node depends on (its Node, the GPU Operator's ClusterPolicies and the
// ConfigMaps of the Operator's namespace) and hands the node's view to a
// plugin running on that node whenever any of them changes. The device
// plugin (cmd/fake-device-plugin) and the DRA kubelet plugin
// (cmd/fake-dra-plugin) both serve from it, so a real node follows the same
// config as the simulated KWOK nodes.
package nodestack

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpupool/gpupool/fakegpu"
)

// ClusterPolicies is the GPU Operator's ClusterPolicy resource. (The
// fakegpu controller exports the same; importing it would pull its
// workqueues into the plugins.)
var ClusterPolicies = schema.GroupVersionResource{Group: "nvidia.com", Version: "v1", Resource: "clusterpolicies"}

// Clients are a plugin's clients: from kubeconfig, or in-cluster when it
// is empty. host names the cluster for the log.
func Clients(kubeconfig string) (cs kubernetes.Interface, dyn dynamic.Interface, host string, err error) {
	var rc *rest.Config
	if kubeconfig == "" {
		if rc, err = rest.InClusterConfig(); err != nil {
			return nil, nil, "", fmt.Errorf("in-cluster config (pass --kubeconfig outside a pod): %w", err)
		}
	} else if rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return nil, nil, "", fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	if cs, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, nil, "", err
	}
	if dyn, err = dynamic.NewForConfig(rc); err != nil {
		return nil, nil, "", err
	}
	return cs, dyn, rc.Host, nil
}

// Logf is the plugins' log line: a time, then the message, on stderr.
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

// View is the node as its plugin sees it.
type View struct {
	// Stack is the GPU Operator config; nil when ConfigErr says it is
	// invalid (as the fakegpu controller does, an invalid config serves
	// nothing).
	Stack     *fakegpu.Stack
	ConfigErr string
	// Labels and Annotations are the node's; Found is false while the
	// node is not in the cache.
	Labels, Annotations map[string]string
	Found               bool
}

// Options say which node to watch and where.
type Options struct {
	Node string
	// Namespace holds the ConfigMaps the ClusterPolicy names.
	Namespace string
	// DefaultMIG stands in for the Operator's default mig-parted
	// ConfigMap when the namespace lacks it (nil: none).
	DefaultMIG *fakegpu.MIGPartedConfig
	// Name prefixes the log lines; Log writes them.
	Name string
	Log  func(format string, args ...any)
}

// Watch calls sync with the node's view once the caches hold it, and again
// after every change, until ctx ends. A sync that returns retry > 0 is
// called again after that long even if nothing changed (a server that
// failed to start). Changes between two syncs are coalesced: each sync
// reads the caches afresh.
func Watch(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, o Options, sync func(View) (retry time.Duration)) {
	// Only this node: a DaemonSet pod per node must not watch the fleet.
	nodeFactory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", o.Node).String()
	}))
	nsFactory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(o.Namespace))
	dynFactory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	nodes := nodeFactory.Core().V1().Nodes().Informer()
	configMaps := nsFactory.Core().V1().ConfigMaps().Informer()
	policies := dynFactory.ForResource(ClusterPolicies).Informer()

	// Events only wake the loop; one pending wake is enough.
	wake := make(chan struct{}, 1)
	notify := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}
	for _, inf := range []cache.SharedIndexInformer{nodes, configMaps, policies} {
		// Registering before Start cannot fail.
		_, _ = inf.AddEventHandler(handler)
	}
	nodeFactory.Start(ctx.Done())
	nsFactory.Start(ctx.Done())
	dynFactory.Start(ctx.Done())
	defer nodeFactory.Shutdown()
	defer nsFactory.Shutdown()
	defer dynFactory.Shutdown()

	o.Log("%s: waiting for the Node, ConfigMap and ClusterPolicy caches (the ClusterPolicy CRD must exist)", o.Name)
	if !cache.WaitForCacheSync(ctx.Done(), nodes.HasSynced, configMaps.HasSynced, policies.HasSynced) {
		o.Log("%s: stopped before the caches synced", o.Name)
		return
	}
	o.Log("%s: caches synced", o.Name)
	notify()

	r := reader{o: o, nodes: nodes, configMaps: configMaps, policies: policies}
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
			if after := sync(r.view()); after > 0 {
				time.AfterFunc(after, notify)
			}
		}
	}
}

// reader builds views from the caches, logging only what changed.
type reader struct {
	o                           Options
	nodes, configMaps, policies cache.SharedIndexInformer

	lastConfigErr string
	lastFound     *bool
}

func (r *reader) view() View {
	var objs []*unstructured.Unstructured
	for _, o := range r.policies.GetStore().List() {
		objs = append(objs, o.(*unstructured.Unstructured))
	}
	for _, o := range r.configMaps.GetStore().List() {
		u, err := fakegpu.AsStackInput(o.(*corev1.ConfigMap), "ConfigMap")
		if err != nil {
			r.o.Log("%s: ConfigMap %s: %v", r.o.Name, o.(*corev1.ConfigMap).Name, err)
			continue
		}
		objs = append(objs, u)
	}
	var v View
	stack, err := fakegpu.StackFromObjects(objs, r.o.DefaultMIG)
	if err != nil {
		v.ConfigErr = "the GPU Operator config is invalid: " + err.Error()
	} else {
		v.Stack = stack
	}
	if v.ConfigErr != r.lastConfigErr {
		if v.ConfigErr != "" {
			r.o.Log("%s: %s", r.o.Name, v.ConfigErr)
		} else {
			r.o.Log("%s: the GPU Operator config is valid again", r.o.Name)
		}
		r.lastConfigErr = v.ConfigErr
	}
	if o, ok, _ := r.nodes.GetStore().GetByKey(r.o.Node); ok {
		n := o.(*corev1.Node)
		v.Labels, v.Annotations, v.Found = n.Labels, n.Annotations, true
	}
	if r.lastFound == nil || *r.lastFound != v.Found {
		state := "found"
		if !v.Found {
			state = "not found"
		}
		r.o.Log("%s: node %s %s", r.o.Name, r.o.Node, state)
		r.lastFound = &v.Found
	}
	return v
}
