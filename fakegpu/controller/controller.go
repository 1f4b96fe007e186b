// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package controller runs the simulated NVIDIA GPU Operator stack against a
// cluster: for every node that carries a fakegpu inventory it keeps the
// GPU resources and GFD labels equal to what the real device plugin, GPU
// Feature Discovery and MIG manager would publish from the cluster's
// ClusterPolicy and ConfigMaps, and it plays the kubelet's part for GPU
// pods bound to those nodes. Reconciliation is level-based and idempotent:
// one node (or pod) per reconcile, from informer caches.
package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/gpupool/gpupool/fakegpu"
)

// ClusterPolicies is the GPU Operator's ClusterPolicy resource.
var ClusterPolicies = schema.GroupVersionResource{Group: "nvidia.com", Version: "v1", Resource: "clusterpolicies"}

// Options configure the controller.
type Options struct {
	// Namespace holds the ConfigMaps the ClusterPolicy names (the GPU
	// Operator's namespace). Default gpu-operator.
	Namespace string
	// DefaultMIGParted is the Operator's built-in mig-parted config.
	DefaultMIGParted *fakegpu.MIGPartedConfig
	// MIGReconfigureDelay is how long the simulated MIG manager keeps a
	// node in state pending. Default 500ms: long enough to observe.
	MIGReconfigureDelay time.Duration
	// NodeWorkers reconcile nodes in parallel (default 2; a fleet of
	// thousands wants more). Pods have one worker: a node's allocations
	// are decided in arrival order.
	NodeWorkers int
	// SkipDeviceRecords: do not annotate pods with the device IDs the
	// simulated kubelet allocated. A real kubelet writes nothing there;
	// the records exist so checks can see allocations, and at fleet scale
	// they are one more write per pod than the cluster would make.
	SkipDeviceRecords bool
	// Log receives what the user of a run should read: the GPU Operator
	// config it holds, and why not (nil: silent).
	Log func(format string, args ...any)
	// Trace receives one line per object the simulated stack judged or
	// published (a pod's outcome on its node, a DRA pool's generation, a
	// reconcile that failed): the record of what the simulator did, for a
	// log file (nil: Log).
	Trace func(format string, args ...any)
	// NodeSelector limits the nodes this controller simulates the stack
	// for (a label selector; "" is every node), so two controllers can
	// share a cluster: each run's nodes get their own.
	NodeSelector string
}

// Controller is the simulated GPU stack for a cluster.
type Controller struct {
	opt    Options
	client kubernetes.Interface
	dyn    dynamic.Interface

	factory informers.SharedInformerFactory
	// nodeFactory holds the node informer, limited to Options.NodeSelector.
	nodeFactory informers.SharedInformerFactory
	nsFactory   informers.SharedInformerFactory
	dynFactory  dynamicinformer.DynamicSharedInformerFactory
	nodes       cache.SharedIndexInformer
	pods        cache.SharedIndexInformer
	configMaps  cache.SharedIndexInformer
	policies    cache.SharedIndexInformer
	rcs         cache.SharedIndexInformer
	// sliceFactory holds the informer of NVIDIA's DRA driver's slices.
	sliceFactory informers.SharedInformerFactory
	slices       cache.SharedIndexInformer
	claims       cache.SharedIndexInformer

	nodeQueue workqueue.TypedRateLimitingInterface[string]
	podQueue  workqueue.TypedRateLimitingInterface[string]
	recorder  record.EventRecorder
	broadcast record.EventBroadcaster

	checkpoint *deviceCheckpoint

	mu        sync.Mutex
	stack     *fakegpu.Stack
	stackErr  error
	configKey string // identity of the inputs the stack was built from
	// published is what this controller last published per node.
	published map[string]publication
}

// New builds a controller for the cluster at rc.
func New(rc *rest.Config, opt Options) (*Controller, error) {
	if opt.Namespace == "" {
		opt.Namespace = "gpu-operator"
	}
	if opt.MIGReconfigureDelay == 0 {
		opt.MIGReconfigureDelay = 500 * time.Millisecond
	}
	if opt.Log == nil {
		opt.Log = func(string, ...any) {}
	}
	if opt.NodeWorkers == 0 {
		opt.NodeWorkers = 2
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	c := &Controller{opt: opt, client: cs, dyn: dyn, checkpoint: newDeviceCheckpoint(), published: map[string]publication{}}
	if _, err := labels.Parse(opt.NodeSelector); err != nil {
		return nil, fmt.Errorf("fakegpu controller: node selector %q: %w", opt.NodeSelector, err)
	}
	c.factory = informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(StripManagedFields))
	c.nodeFactory = informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(StripManagedFields),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = opt.NodeSelector }))
	c.nsFactory = informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(opt.Namespace), informers.WithTransform(StripManagedFields))
	c.dynFactory = dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	// Pods on nodes outside the selector find no node in this cache and
	// are left alone.
	c.nodes = c.nodeFactory.Core().V1().Nodes().Informer()
	c.pods = c.factory.Core().V1().Pods().Informer()
	if err := c.pods.AddIndexers(cache.Indexers{"spec.nodeName": func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, err
	}
	c.rcs = c.factory.Node().V1().RuntimeClasses().Informer()
	c.sliceFactory = informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(StripManagedFields), informers.WithTweakListOptions(sliceListOptions))
	c.slices = c.sliceFactory.Resource().V1().ResourceSlices().Informer()
	if err := c.slices.AddIndexers(cache.Indexers{sliceIndex: indexSliceByNode}); err != nil {
		return nil, err
	}
	c.claims = c.factory.Resource().V1().ResourceClaims().Informer()
	c.configMaps = c.nsFactory.Core().V1().ConfigMaps().Informer()
	c.policies = c.dynFactory.ForResource(ClusterPolicies).Informer()

	c.nodeQueue = workqueue.NewTypedRateLimitingQueueWithConfig(retryLimiter(), workqueue.TypedRateLimitingQueueConfig[string]{Name: "fakegpu-nodes"})
	c.podQueue = workqueue.NewTypedRateLimitingQueueWithConfig(retryLimiter(), workqueue.TypedRateLimitingQueueConfig[string]{Name: "fakegpu-pods"})
	c.broadcast = record.NewBroadcaster()
	c.broadcast.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	c.recorder = c.broadcast.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "fakegpu-device-plugin"})

	enqueueNode := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok {
			c.nodeQueue.Add(n.Name)
			c.enqueueUnstarted(n)
		}
	}
	c.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueNode,
		UpdateFunc: func(_, obj any) { enqueueNode(obj) },
	})
	configChanged := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.configChanged() },
		UpdateFunc: func(any, any) { c.configChanged() },
		DeleteFunc: func(any) { c.configChanged() },
	}
	c.configMaps.AddEventHandler(configChanged)
	c.policies.AddEventHandler(configChanged)
	enqueuePod := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			c.podQueue.Add(p.Namespace + "/" + p.Name)
		}
	}
	// A node's pool changing may take devices from its running claim pods.
	slicesChanged := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		s, ok := obj.(*resourcev1.ResourceSlice)
		if !ok || s.Spec.NodeName == nil {
			return
		}
		pods, _ := c.pods.GetIndexer().ByIndex("spec.nodeName", *s.Spec.NodeName)
		for _, p := range pods {
			if p := p.(*corev1.Pod); len(p.Spec.ResourceClaims) > 0 || p.Status.ExtendedResourceClaimStatus != nil {
				enqueuePod(p)
			}
		}
	}
	c.slices.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    slicesChanged,
		UpdateFunc: func(_, obj any) { slicesChanged(obj) },
		DeleteFunc: slicesChanged,
	})
	c.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueuePod,
		UpdateFunc: func(_, obj any) { enqueuePod(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				c.checkpoint.forget(p.UID)
			}
		},
	})
	return c, nil
}

// enqueueUnstarted requeues the pods bound to a GPU node that the
// simulated kubelet has not started yet (no sight recorded): a pod met
// before its node was in this cache, or was a GPU node, was set aside, and
// a kubelet starts its pods once it runs, whatever order it learnt of them.
func (c *Controller) enqueueUnstarted(n *corev1.Node) {
	if c.opt.SkipDeviceRecords {
		return
	}
	if _, isGPU, _ := fakegpu.Inventory(n.Annotations); !isGPU || fakegpu.RealKubelet(n.Annotations) {
		return
	}
	pods, _ := c.pods.GetIndexer().ByIndex("spec.nodeName", n.Name)
	for _, o := range pods {
		p := o.(*corev1.Pod)
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		if _, started := p.Annotations[fakegpu.AnnotationGPUSight]; !started {
			c.podQueue.Add(p.Namespace + "/" + p.Name)
		}
	}
}

// Start runs the informers and workers until ctx ends, and returns once the
// caches have synced.
func (c *Controller) Start(ctx context.Context) error {
	c.factory.Start(ctx.Done())
	c.nodeFactory.Start(ctx.Done())
	c.nsFactory.Start(ctx.Done())
	c.dynFactory.Start(ctx.Done())
	c.sliceFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.nodes.HasSynced, c.pods.HasSynced, c.configMaps.HasSynced, c.policies.HasSynced, c.rcs.HasSynced, c.slices.HasSynced, c.claims.HasSynced) {
		return fmt.Errorf("fakegpu controller: caches did not sync: %w", ctx.Err())
	}
	c.configChanged()
	go func() {
		<-ctx.Done()
		c.nodeQueue.ShutDown()
		c.podQueue.ShutDown()
		c.broadcast.Shutdown()
	}()
	for range c.opt.NodeWorkers {
		go c.work(ctx, c.nodeQueue, c.reconcileNode)
	}
	go c.work(ctx, c.podQueue, c.reconcilePod)
	return nil
}

func (c *Controller) work(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], reconcile func(context.Context, string) (time.Duration, error)) {
	for {
		key, shutdown := q.Get()
		if shutdown {
			return
		}
		after, err := reconcile(ctx, key)
		switch {
		case err != nil && ctx.Err() == nil:
			// A conflict is optimistic concurrency at work (kwok wrote the
			// pod first): the retry reads the new version. Anything else is
			// worth a line.
			if !apierrors.IsConflict(err) {
				c.trace("fakegpu: %s: %v", key, err)
			}
			q.AddRateLimited(key)
		case after > 0:
			q.Forget(key)
			q.AddAfter(key, after)
		default:
			q.Forget(key)
		}
		q.Done(key)
	}
}

// retryLimiter spaces a key's retries 5 ms apart, doubling to at most 5
// s. A conflict with kwok's status write is the common failure and clears
// as soon as the informer catches up, within the first few retries;
// client-go's default limiter (up to 1000 s, and 10 retries a second in
// all) made a pod wait minutes for the kubelet's word after a run of
// conflicts under load. An error that never clears costs a pass every 5 s.
func retryLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 5*time.Second)
}

// configChanged rebuilds the stack from the ClusterPolicy and ConfigMaps
// and requeues every node, and every bound pod when the config has just
// become valid again.
func (c *Controller) configChanged() {
	objs, key := c.configObjects()
	stack, err := fakegpu.StackFromObjects(objs, c.opt.DefaultMIGParted)
	c.mu.Lock()
	recovered := c.stackErr != nil && err == nil
	c.stack, c.stackErr = stack, err
	c.configKey = key
	c.mu.Unlock()
	if recovered {
		// reconcilePod set aside the pods it met while the config was
		// invalid: they are the kubelet's to start now.
		for _, o := range c.pods.GetStore().List() {
			if p := o.(*corev1.Pod); p.Spec.NodeName != "" {
				c.podQueue.Add(p.Namespace + "/" + p.Name)
			}
		}
	}
	if err != nil {
		c.opt.Log("fakegpu: GPU Operator config is invalid: %v", err)
	} else {
		for _, w := range stack.Warnings() {
			c.opt.Log("fakegpu: GPU Operator config: %s", w)
		}
	}
	for _, n := range c.nodes.GetStore().ListKeys() {
		c.nodeQueue.Add(n)
	}
}

// configObjects returns the GPU Operator objects in the informer caches and
// a key that identifies their versions.
func (c *Controller) configObjects() ([]*unstructured.Unstructured, string) {
	var objs []*unstructured.Unstructured
	policies, configMaps := map[string]string{}, map[string]string{}
	for _, o := range c.policies.GetStore().List() {
		u := o.(*unstructured.Unstructured)
		objs = append(objs, u)
		policies[u.GetName()] = u.GetResourceVersion()
	}
	for _, o := range c.configMaps.GetStore().List() {
		cm := o.(*corev1.ConfigMap)
		u, err := fakegpu.AsStackInput(cm, "ConfigMap")
		if err != nil {
			continue
		}
		objs = append(objs, u)
		configMaps[cm.Name] = cm.ResourceVersion
	}
	return objs, ConfigKey(policies, configMaps)
}

// ConfigKey identifies a GPU Operator config by the resourceVersions of its
// ClusterPolicies and of the ConfigMaps in the Operator's namespace (name →
// resourceVersion). ObservedConfig(ConfigKey(...)) is what a node reconciled
// against that config carries, so a client that lists the same objects can
// tell when a controller in the cluster has caught up.
func ConfigKey(policies, configMaps map[string]string) string {
	keys := []string{}
	for name, rv := range policies {
		keys = append(keys, "cp/"+name+"@"+rv)
	}
	for name, rv := range configMaps {
		keys = append(keys, "cm/"+name+"@"+rv)
	}
	sort.Strings(keys)
	return fmt.Sprint(keys)
}

// ObservedConfig is the value of fakegpu.AnnotationObservedConfig on a node
// reconciled against the config with this key.
func ObservedConfig(key string) string { return configHash(key) }

func (c *Controller) currentStack() (*fakegpu.Stack, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stack, c.configKey, c.stackErr
}

// Synced reports whether every GPU node has been reconciled against the
// current configuration and no MIG reconfiguration is in progress.
// observed names GPU Operator objects (kind/namespace/name → the
// resourceVersion a client wrote) the caches must have caught up with first.
func (c *Controller) Synced(observed map[string]string) (bool, string) {
	for obj, rv := range observed {
		if !c.hasObserved(obj, rv) {
			return false, "the fakegpu controller has not seen " + obj + " yet"
		}
	}
	_, key, _ := c.currentStack()
	if _, cached := c.configObjects(); cached != key {
		return false, "the fakegpu controller is rebuilding its view of the GPU Operator config"
	}
	hash := configHash(key)
	total, behind := 0, 0
	for _, o := range c.nodes.GetStore().List() {
		n := o.(*corev1.Node)
		if _, ok := n.Annotations[fakegpu.AnnotationSKU]; !ok {
			continue
		}
		total++
		if n.Annotations[fakegpu.AnnotationObservedConfig] != hash || n.Labels[fakegpu.LabelMIGConfigState] == fakegpu.MIGStatePending {
			behind++
		}
	}
	return behind == 0, fmt.Sprintf("%d of %d GPU nodes reconciled against the current GPU Operator config", total-behind, total)
}

// ConfigHash is the value of fakegpu.AnnotationObservedConfig on a node
// reconciled against the configuration the controller holds now. A node
// created with it (and with what Desired publishes) needs no write.
func (c *Controller) ConfigHash() string {
	_, key, _ := c.currentStack()
	return configHash(key)
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func mergePatch(ctx context.Context, cs kubernetes.Interface, node string, patch map[string]any, subresources ...string) error {
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, b, metav1.PatchOptions{FieldManager: "fakegpu"}, subresources...)
	return err
}

// hasObserved reports whether the caches hold obj ("ClusterPolicy//name" or
// "ConfigMap/namespace/name") at resourceVersion rv or later. Objects in
// other namespaces than the controller's are not its business: true.
func (c *Controller) hasObserved(obj, rv string) bool {
	parts := strings.SplitN(obj, "/", 3)
	if len(parts) != 3 {
		return true
	}
	var store cache.Store
	key := parts[2]
	switch parts[0] {
	case "ClusterPolicy":
		store = c.policies.GetStore()
	case "ConfigMap":
		if parts[1] != c.opt.Namespace {
			return true
		}
		store, key = c.configMaps.GetStore(), parts[1]+"/"+parts[2]
	default:
		return true
	}
	o, ok, err := store.GetByKey(key)
	if err != nil || !ok {
		return false
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return false
	}
	have, err1 := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
	want, err2 := strconv.ParseUint(rv, 10, 64)
	return err1 != nil || err2 != nil || have >= want
}

// StripManagedFields is an informer transform that keeps server-side
// apply's bookkeeping out of a cache. Nothing here reads it, and at fleet
// scale it is a large share of every cached Pod and Node (the harness's
// peak RSS at 50,000 pods fell 11% without it). An update sent from a
// cached copy still keeps the object's managed fields: the apiserver reads
// nil as "unchanged". Objects already stripped are not written again: a
// relist hands the transform objects other goroutines may be reading.
func StripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// trace records one thing the simulator did (Options.Trace, else Log).
func (c *Controller) trace(format string, args ...any) {
	switch {
	case c.opt.Trace != nil:
		c.opt.Trace(format, args...)
	case c.opt.Log != nil:
		c.opt.Log(format, args...)
	}
}
