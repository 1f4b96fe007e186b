// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpupool/gpupool/e2e/explain"
)

// placer binds pods itself, for phases that bypass the scheduler: first
// fit over the nodes the pod's selector and tolerations admit, counting
// each node's GPUs and pod slots against what its pods already hold. It
// reaches the state a burst would, without the scheduler's time, so memory
// can be measured at a pod count the scheduler would take too long to
// place on two cores. The contract check after the phase holds its
// placements to the same rules as the scheduler's.
type placer struct {
	nodes    []*corev1.Node
	free     map[string]map[string]int64 // node → GPU resource → units left
	slots    map[string]int64            // node → pods it may still take
	feasible map[*corev1.Pod][]*corev1.Node
	cursor   map[*corev1.Pod]int
}

func newPlacer(nodes []*corev1.Node, pods []*corev1.Pod) *placer {
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	pl := &placer{nodes: nodes, free: map[string]map[string]int64{}, slots: map[string]int64{},
		feasible: map[*corev1.Pod][]*corev1.Node{}, cursor: map[*corev1.Pod]int{}}
	for _, n := range nodes {
		pl.slots[n.Name] = n.Status.Allocatable.Pods().Value()
		free := map[string]int64{}
		for name, q := range n.Status.Allocatable {
			free[string(name)] = q.Value()
		}
		pl.free[n.Name] = free
	}
	for _, p := range pods {
		if !explain.HoldsResources(p) {
			continue
		}
		// A claim pod takes a pod slot here; its GPU is a DRA device, not
		// allocatable, and a fill never places on a DRA pool (CheckPools).
		pl.take(p.Spec.NodeName, explain.GPURequests(p))
	}
	return pl
}

func (pl *placer) take(node string, req map[string]int64) {
	pl.slots[node]--
	for r, q := range req {
		pl.free[node][r] -= q
	}
}

// place picks a node for a copy of template and takes its room.
func (pl *placer) place(template *corev1.Pod) (string, error) {
	nodes, ok := pl.feasible[template]
	if !ok {
		for _, n := range pl.nodes {
			if explain.Admits(template, n) {
				nodes = append(nodes, n)
			}
		}
		pl.feasible[template] = nodes
	}
	req := explain.GPURequests(template)
	for i := pl.cursor[template]; i < len(nodes); i++ {
		n := nodes[i].Name
		if pl.slots[n] < 1 || !pl.fits(n, req) {
			continue
		}
		pl.cursor[template] = i
		pl.take(n, req)
		return n, nil
	}
	pl.cursor[template] = len(nodes)
	return "", fmt.Errorf("no room left: %d nodes admit the pod, all full", len(nodes))
}

func (pl *placer) fits(node string, req map[string]int64) bool {
	for r, q := range req {
		if pl.free[node][r] < q {
			return false
		}
	}
	return true
}
