// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/gpupool/gpupool/e2e/wait"
)

// CreateOptions tunes node creation.
type CreateOptions struct {
	// Workers is how many creates run at once (default 16).
	Workers int
	// ReadyTimeout bounds the wait for every node to be Ready.
	ReadyTimeout time.Duration
	// Prepare, when set, edits each node before it is created (scale runs
	// fill in what the GPU stack would publish, so a node joins in one
	// write instead of three).
	Prepare func(*corev1.Node) error
	// Selector picks the fleet's nodes among the cluster's when waiting
	// for them to be Ready (default: every node gpupool manages), for a
	// fleet joined to a cluster that has nodes of gpupool's already.
	Selector string
}

// CreateStats says how node bring-up went.
type CreateStats struct {
	Nodes       int
	CreateTime  time.Duration // all Create calls answered
	ReadyTime   time.Duration // every node Ready, from the first create
	NodesPerSec float64
}

// Create makes every node of the fleet and waits until all are Ready.
func Create(ctx context.Context, f *Fleet, cs kubernetes.Interface, opt CreateOptions) (CreateStats, error) {
	if opt.Workers == 0 {
		opt.Workers = 16
	}
	if opt.ReadyTimeout == 0 {
		opt.ReadyTimeout = 2 * time.Minute
	}
	specs := NodeSpecs(f)
	nodes := make([]*corev1.Node, len(specs))
	for i, s := range specs {
		n, err := s.Node()
		if err != nil {
			return CreateStats{}, err
		}
		if opt.Prepare != nil {
			if err := opt.Prepare(n); err != nil {
				return CreateStats{}, fmt.Errorf("node %s: %w", n.Name, err)
			}
		}
		nodes[i] = n
	}

	start := time.Now()
	work := make(chan *corev1.Node)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for w := 0; w < opt.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				if _, err := createNode(ctx, cs, n); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("node %s: %w", n.Name, err))
					mu.Unlock()
				}
			}
		}()
	}
	for _, n := range nodes {
		work <- n
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return CreateStats{}, err
	}
	stats := CreateStats{Nodes: len(nodes), CreateTime: time.Since(start)}

	want := len(nodes)
	if opt.Selector == "" {
		opt.Selector = LabelManagedBy + "=" + ManagedBy
	}
	ready, err := waitReady(ctx, cs, opt.Selector, want, opt.ReadyTimeout)
	stats.ReadyTime = time.Since(start)
	if stats.ReadyTime > 0 {
		stats.NodesPerSec = float64(ready) / stats.ReadyTime.Seconds()
	}
	return stats, err
}

// waitReady watches the fleet's nodes until want of them are Ready and
// untainted. A watch, not a poll: listing 10,000 nodes ten times a second
// would be most of the apiserver's work.
func waitReady(ctx context.Context, cs kubernetes.Interface, selector string, want int, timeout time.Duration) (int, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = selector
	}))
	inf := factory.Core().V1().Nodes().Informer()
	var mu sync.Mutex
	ready := map[string]bool{}
	track := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if NodeReady(n) && !lifecycleTainted(n) {
			ready[n.Name] = true
		} else {
			delete(ready, n.Name)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: track, UpdateFunc: func(_, o any) { track(o) }}); err != nil {
		return 0, err
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(ready)
	}
	// A fixed interval: count reads what the watch saw, and the interval
	// is what the reported time to Ready is accurate to.
	err := wait.Every(ctx, fmt.Sprintf("%d fleet nodes Ready", want), timeout, wait.Interval, func(ctx context.Context) (bool, string, error) {
		n := count()
		return n >= want, fmt.Sprintf("%d of %d Ready and untainted by the node lifecycle controller", n, want), nil
	})
	return count(), err
}

// createNode creates the node with its status: the apiserver keeps the
// status of a new Node, and kwok's node-initialize stage keeps a preset
// capacity and allocatable, so the GPUs are there from the first watch event.
func createNode(ctx context.Context, cs kubernetes.Interface, n *corev1.Node) (*corev1.Node, error) {
	return cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{FieldManager: ManagedBy})
}

// lifecycleTainted reports whether the node still carries the taints the
// apiserver's TaintNodesByCondition admission puts on every new node, which
// keep all pods off it until the node lifecycle controller lifts them.
func lifecycleTainted(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return true
		}
	}
	return false
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
