// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaler

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/gpupool/gpupool/e2e/fleet"
)

// Labels Karpenter puts on the nodes it makes (autoscaler-facts §4.3).
const (
	LabelNodePool     = "karpenter.sh/nodepool"
	LabelInstanceType = corev1.LabelInstanceTypeStable
	// A node whose resources Karpenter has seen registered; from then on
	// its own capacity counts against its NodePool's limits (§12.2).
	LabelInitialized = "karpenter.sh/initialized"
	// Where it was bought: its offering's capacity type and zone (§3.2).
	LabelCapacityType = "karpenter.sh/capacity-type"
	LabelZone         = corev1.LabelTopologyZone
)

// AnnotationDoNotDisrupt "true" on a pod keeps Karpenter from disrupting
// its node while the pod is active (autoscaler-facts §7.1, §7.3).
const AnnotationDoNotDisrupt = "karpenter.sh/do-not-disrupt"

// Cloud is the simulated cloud of a fleet: the instance types it sells,
// one per autoscaled pool's hardware, and the hardware behind each.
type Cloud struct {
	fleet *fleet.Fleet
	types []InstanceType
	// hardware is what each instance type is: a pool's SKU and GPUs.
	hardware map[string]fleet.Pool
	// Selector, when set, narrows the nodes Run takes over (in a cluster
	// others' Karpenter nodes may share, the run's own).
	Selector string

	mu   sync.Mutex
	made map[string]bool // every node of the cloud's Run has seen
}

// Made names every node of the cloud's that Run has seen, gone or not:
// in a cluster with DaemonSets, pods bound to them outlive them until
// the pod garbage collector finds them orphaned.
func (c *Cloud) Made() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.made))
	for n := range c.made {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// NewCloud derives the cloud from the fleet's autoscaled pools.
func NewCloud(f *fleet.Fleet) (*Cloud, error) {
	c := &Cloud{fleet: f, hardware: map[string]fleet.Pool{}, made: map[string]bool{}}
	for _, p := range f.Autoscaled() {
		it, err := InstanceTypeFor(p.Pool)
		if err != nil {
			return nil, err
		}
		if _, dup := c.hardware[it.Name]; dup {
			continue // two pools of the same hardware: one instance type
		}
		c.hardware[it.Name] = p.Pool
		c.types = append(c.types, it)
	}
	sort.Slice(c.types, func(i, j int) bool { return c.types[i].Name < c.types[j].Name })
	return c, nil
}

// InstanceTypes are what the cloud sells.
func (c *Cloud) InstanceTypes() []InstanceType { return c.types }

// TakeOver is what the run adds to a node the autoscaler made, so the
// simulated NVIDIA stack looks after it as it does a fleet node: the
// hardware of its instance type as fakegpu's inventory annotations (a
// fleet node is created with them), and the fleet's pool label when its
// NodePool scales an autoscaled pool. The hardware follows the instance
// type, whatever NodePool asked for it: a NodePool allowed the wrong
// instance type gets that machine. Everything else (the pool's labels and
// taints, its MIG and device-plugin config labels) is the NodePool's to
// give. ok is false for a node that is not one of the cloud's machines,
// or that carries all of it already. An error is a pool the fleet's
// validation let through that makes no node: a bug, said, not a node
// silently left without GPUs.
func (c *Cloud) TakeOver(n *corev1.Node) (labels, annotations map[string]string, ok bool, err error) {
	hw, known := c.hardware[n.Labels[LabelInstanceType]]
	if !known || n.Labels[LabelNodePool] == "" {
		return nil, nil, false, nil
	}
	pool := hw
	ap, scaled := c.fleet.AutoscaledPoolFor(n.Labels[LabelNodePool])
	if scaled {
		// The pool's DRA driver and declared images, on the machine the
		// instance type is.
		pool = ap.Pool
		pool.SKU, pool.GPUsPerNode = hw.SKU, hw.GPUsPerNode
	}
	spec := fleet.NodeSpec{Pool: pool, Name: n.Name, Images: c.fleet.ImageEnvs()}
	made, err := spec.Node()
	if err != nil {
		return nil, nil, false, fmt.Errorf("the cloud taking over node %s (instance type %s): %w", n.Name, n.Labels[LabelInstanceType], err)
	}
	labels, annotations = map[string]string{fleet.LabelManagedBy: fleet.ManagedBy}, map[string]string{}
	if scaled {
		labels[fleet.LabelPool] = ap.Name
		if len(ap.TrustDomains) == 1 {
			// A domain's NodePool: the domain's node, as a fleet node of
			// the domain is labelled.
			labels[fleet.LabelTrustDomain] = ap.TrustDomains[0].Name
		}
	}
	for k, v := range made.Annotations {
		if k != fleet.AnnotationKwokNode {
			annotations[k] = v
		}
	}
	if has(n.Labels, labels) && has(n.Annotations, annotations) {
		return nil, nil, false, nil
	}
	return labels, annotations, true, nil
}

func has(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// Run takes over every node the autoscaler makes until ctx ends: it
// watches the nodes Karpenter labels with their NodePool and patches in
// what TakeOver says. errs receives patch failures (nil: dropped).
func (c *Cloud) Run(ctx context.Context, cs kubernetes.Interface, errs func(error)) error {
	sel := LabelNodePool
	if c.Selector != "" {
		sel += "," + c.Selector
	}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 10*time.Minute, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = sel
	}))
	inf := f.Core().V1().Nodes().Informer()
	var mu sync.Mutex
	said := map[string]bool{} // nodes whose TakeOver error was reported: once each, not per heartbeat
	take := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		if _, known := c.hardware[n.Labels[LabelInstanceType]]; known {
			c.mu.Lock()
			c.made[n.Name] = true
			c.mu.Unlock()
		}
		labels, annotations, ok, err := c.TakeOver(n)
		if err != nil && errs != nil {
			mu.Lock()
			first := !said[n.Name]
			said[n.Name] = true
			mu.Unlock()
			if first {
				errs(err)
			}
		}
		if !ok {
			return
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels, "annotations": annotations}})
		mu.Lock()
		defer mu.Unlock()
		if _, err := cs.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && errs != nil && ctx.Err() == nil {
			errs(fmt.Errorf("the cloud taking over node %s: %w", n.Name, err))
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    take,
		UpdateFunc: func(_, obj any) { take(obj) },
	}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("the cloud: watching nodes: %w", ctx.Err())
	}
	return nil
}
