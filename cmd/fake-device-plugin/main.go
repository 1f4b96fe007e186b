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
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpupool/gpupool/fakegpu"
	"github.com/gpupool/gpupool/fakegpu/kubeletplugin"
)

// clusterPolicies is the GPU Operator's ClusterPolicy resource. (The
// fakegpu controller exports the same; importing it would pull its
// workqueues into this binary.)
var clusterPolicies = schema.GroupVersionResource{Group: "nvidia.com", Version: "v1", Resource: "clusterpolicies"}

// retryAfter is the wait before serving again after a server failed to
// start (its socket could not be created).
const retryAfter = 5 * time.Second

type options struct {
	nodeName, kubeletDir, namespace, kubeconfig, defaultMIGConfig string
}

func main() {
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
	flag.Parse()

	if err := run(o); err != nil {
		logf("fake-device-plugin: %v", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
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
	rc, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logf("fake-device-plugin: node %s, kubelet dir %s, GPU Operator namespace %s, cluster %s", o.nodeName, o.kubeletDir, o.namespace, rc.Host)
	return serve(ctx, o, cs, dyn, defaultMIG)
}

// serve runs the plugin for o.nodeName until ctx ends, then removes its
// sockets.
func serve(ctx context.Context, o options, cs kubernetes.Interface, dyn dynamic.Interface, defaultMIG *fakegpu.MIGPartedConfig) error {
	plugin, err := kubeletplugin.New(kubeletplugin.Options{NodeName: o.nodeName, Dir: o.kubeletDir, Log: logf})
	if err != nil {
		return err
	}
	if err := plugin.Start(ctx); err != nil {
		return err
	}
	defer plugin.Stop()

	// Only this node: a DaemonSet pod per node must not watch the fleet.
	nodeFactory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", o.nodeName).String()
	}))
	nsFactory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(o.namespace))
	dynFactory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	nodes := nodeFactory.Core().V1().Nodes().Informer()
	configMaps := nsFactory.Core().V1().ConfigMaps().Informer()
	policies := dynFactory.ForResource(clusterPolicies).Informer()

	// Events only wake the sync loop; one pending wake is enough, as each
	// sync reads the caches afresh.
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
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
	}
	nodeFactory.Start(ctx.Done())
	nsFactory.Start(ctx.Done())
	dynFactory.Start(ctx.Done())
	defer nodeFactory.Shutdown()
	defer nsFactory.Shutdown()
	defer dynFactory.Shutdown()

	logf("fake-device-plugin: waiting for the Node, ConfigMap and ClusterPolicy caches (the ClusterPolicy CRD must exist)")
	if !cache.WaitForCacheSync(ctx.Done(), nodes.HasSynced, configMaps.HasSynced, policies.HasSynced) {
		logf("fake-device-plugin: stopped before the caches synced")
		return nil
	}
	logf("fake-device-plugin: caches synced")
	notify()

	s := syncer{node: o.nodeName, plugin: plugin, defaultMIG: defaultMIG, nodes: nodes, configMaps: configMaps, policies: policies, retry: notify}
	for {
		select {
		case <-ctx.Done():
			logf("fake-device-plugin: stopping, removing the plugin sockets")
			plugin.Stop()
			return nil
		case <-wake:
			s.sync()
		}
	}
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster config (pass --kubeconfig outside a pod): %w", err)
		}
		return rc, nil
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	return rc, nil
}

// syncer rebuilds the stack from the caches and updates the plugin,
// logging only what changed.
type syncer struct {
	node       string
	plugin     *kubeletplugin.Plugin
	defaultMIG *fakegpu.MIGPartedConfig
	nodes      cache.SharedIndexInformer
	configMaps cache.SharedIndexInformer
	policies   cache.SharedIndexInformer
	// retry wakes the sync loop again; used when a server failed to start.
	retry func()

	lastConfigErr string
	lastNodeState string
	lastServed    string
}

func (s *syncer) sync() {
	var objs []*unstructured.Unstructured
	for _, o := range s.policies.GetStore().List() {
		objs = append(objs, o.(*unstructured.Unstructured))
	}
	for _, o := range s.configMaps.GetStore().List() {
		u, err := fakegpu.AsStackInput(o.(*corev1.ConfigMap), "ConfigMap")
		if err != nil {
			logf("fake-device-plugin: ConfigMap %s: %v", o.(*corev1.ConfigMap).Name, err)
			continue
		}
		objs = append(objs, u)
	}
	stack, err := fakegpu.StackFromObjects(objs, s.defaultMIG)
	configErr := ""
	if err != nil {
		// As the fakegpu controller does: an invalid config serves nothing.
		stack, configErr = nil, "the GPU Operator config is invalid: "+err.Error()
	}
	if configErr != s.lastConfigErr {
		if configErr != "" {
			logf("fake-device-plugin: %s", configErr)
		} else {
			logf("fake-device-plugin: the GPU Operator config is valid again")
		}
		s.lastConfigErr = configErr
	}

	var labels, annotations map[string]string
	nodeState := "found"
	if o, ok, _ := s.nodes.GetStore().GetByKey(s.node); ok {
		n := o.(*corev1.Node)
		labels, annotations = n.Labels, n.Annotations
	} else {
		nodeState = "not found"
	}
	if nodeState != s.lastNodeState {
		logf("fake-device-plugin: node %s %s", s.node, nodeState)
		s.lastNodeState = nodeState
	}

	plan, err := s.plugin.Update(stack, labels, annotations)
	if err != nil {
		logf("fake-device-plugin: %v (retrying in %s)", err, retryAfter)
		time.AfterFunc(retryAfter, s.retry)
	}
	served := describe(plan)
	if configErr != "" {
		served = "nothing (" + configErr + ")"
	}
	if served != s.lastServed {
		logf("fake-device-plugin: serving %s", served)
		s.lastServed = served
	}
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
