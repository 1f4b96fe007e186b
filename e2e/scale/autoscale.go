// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/gpupool/gpupool/e2e/fleet"
)

// PoolDomain is where an autoscaled pool's pods go: the pool, or one of
// its trust domains, each scaled by a NodePool of its own.
type PoolDomain struct {
	// Name is the trust domain's ("" for a pool without domains).
	Name     string
	NodePool string
	// MaxNodes is the most nodes the fleet designs it to grow to.
	MaxNodes int
}

// AutoscaleResult is what an autoscale phase measured.
type AutoscaleResult struct {
	// FirstNodeSeconds: from the phase's first create to the first node
	// the autoscaler made for its pools, as the harness saw it appear
	// (0 with NodesCreated 0: none came).
	FirstNodeSeconds float64 `json:"firstNodeSeconds"`
	// AllScheduledSeconds: from the first create until the last of the
	// phase's pods was bound; with Unscheduled > 0, until the wait ended.
	AllScheduledSeconds float64 `json:"allScheduledSeconds"`
	// Unscheduled counts the phase's pods never bound.
	Unscheduled  int `json:"unscheduled"`
	NodesCreated int `json:"nodesCreated"`
	NodesNeeded  int `json:"nodesNeeded"`
	// NodesOverNeeded adds up, per NodePool, the nodes made beyond those
	// its pods need: one pool's surplus is not offset by another's lack.
	NodesOverNeeded int `json:"nodesOverNeeded"`
	// Pools says the same per NodePool.
	Pools []AutoscaledPoolResult `json:"pools"`
}

// AutoscaledPoolResult is one NodePool's part of an autoscale phase.
type AutoscaledPoolResult struct {
	NodePool     string `json:"nodePool"`
	Pool         string `json:"pool"`
	TrustDomain  string `json:"trustDomain,omitempty"`
	Pods         int    `json:"pods"`
	NodesNeeded  int    `json:"nodesNeeded"`
	NodesCreated int    `json:"nodesCreated"`
}

// cycleOf is the order in which a phase draws the mix entries in selects:
// interleaved by weight (smooth weighted round robin over one cycle of
// their total weight), so every stretch of a phase has the mix's
// proportions. The runner computes it once per kind of phase.
func cycleOf(mix []MixEntry, in func(int) bool) []int {
	total := 0
	for i, m := range mix {
		if in(i) {
			total += m.Weight
		}
	}
	counts := make([]int, len(mix))
	var out []int
	for s := 0; s < total; s++ {
		best, bestGap := -1, -1.0
		for j, m := range mix {
			if !in(j) {
				continue
			}
			if gap := float64(m.Weight)*float64(s+1)/float64(total) - float64(counts[j]); gap > bestGap {
				best, bestGap = j, gap
			}
		}
		counts[best]++
		out = append(out, best)
	}
	return out
}

// autoscaleNeeds works out, for each autoscale phase (by index into
// spec.phases), how many pods each NodePool gets and how many new nodes
// they need: each pool's nodes filled to its design (perNode pods of one
// GPU each), on top of what earlier autoscale phases' pods, still running,
// hold. Pods go to an entry's trust domains in turn, from where the
// previous autoscale phase left off. A phase after which a pool's pods
// would need more nodes than its maxNodes is refused: they could never
// all be scheduled, whatever the autoscaler did.
func autoscaleNeeds(w *Workload, pools map[string]PoolInfo) (map[int][]AutoscaledPoolResult, error) {
	cycle := cycleOf(w.Spec.Mix, func(i int) bool { return pools[w.Spec.Mix[i].Pool].Autoscaled })
	type key struct {
		pool   string
		domain int
	}
	out := map[int][]AutoscaledPoolResult{}
	next := map[int]int{}   // an entry's next trust domain
	before := map[key]int{} // pods of earlier autoscale phases
	nodes := func(pods int, perNode int64) int { return int((int64(pods) + perNode - 1) / perNode) }
	for pi, ph := range w.Spec.Phases {
		if !ph.Autoscale() || len(cycle) == 0 {
			continue
		}
		pods := map[key]int{}
		for i := 0; i < ph.Pods; i++ {
			e := cycle[i%len(cycle)]
			info := pools[w.Spec.Mix[e].Pool]
			pods[key{w.Spec.Mix[e].Pool, next[e] % len(info.Domains)}]++
			next[e]++
		}
		keys := slices.SortedFunc(maps.Keys(pods), func(a, b key) int {
			return cmp.Or(cmp.Compare(a.pool, b.pool), cmp.Compare(a.domain, b.domain))
		})
		for _, k := range keys {
			info := pools[k.pool]
			d := info.Domains[k.domain]
			if info.PerNode < 1 {
				why := "advertises nothing a pod could ask for"
				if info.DesignErr != "" {
					why = "cannot be worked out: " + info.DesignErr
				}
				return nil, fmt.Errorf("workload %s: spec.phases[%d] (%s): what a node of autoscaled pool %s holds %s", w.File, pi, ph.Name, k.pool, why)
			}
			total := before[k] + pods[k]
			if n := nodes(total, info.PerNode); n > d.MaxNodes {
				where := "pool " + k.pool
				if d.Name != "" {
					where += " (trust domain " + d.Name + ")"
				}
				earlier := ""
				if before[k] > 0 {
					earlier = fmt.Sprintf(" (%d of them from earlier autoscale phases)", before[k])
				}
				return nil, fmt.Errorf("workload %s: spec.phases[%d] (%s): %d pods%s for %s need %d nodes of %d pods each, and the fleet designs it to grow to maxNodes %d: lower pods or raise maxNodes",
					w.File, pi, ph.Name, total, earlier, where, n, info.PerNode, d.MaxNodes)
			}
			out[pi] = append(out[pi], AutoscaledPoolResult{NodePool: d.NodePool, Pool: k.pool, TrustDomain: d.Name, Pods: pods[k],
				NodesNeeded: nodes(total, info.PerNode) - nodes(before[k], info.PerNode)})
			before[k] = total
		}
	}
	return out, nil
}

// madeNodes records when the harness first saw each node an autoscaler
// made, by NodePool.
type madeNodes struct {
	mu    sync.Mutex
	first map[string]madeNode // by node name
}

type madeNode struct {
	nodePool string
	at       time.Time
}

func (m *madeNodes) seen(node, nodePool string, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.first == nil {
		m.first = map[string]madeNode{}
	}
	if _, ok := m.first[node]; !ok {
		m.first[node] = madeNode{nodePool, at}
	}
}

// count is how many nodes were first seen at or after start.
func (m *madeNodes) count(start time.Time) int {
	made, _ := m.since(start)
	n := 0
	for _, c := range made {
		n += c
	}
	return n
}

// since returns, per NodePool, the nodes first seen at or after start, and
// the earliest such time (zero: none).
func (m *madeNodes) since(start time.Time) (map[string]int, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int{}
	var first time.Time
	for _, n := range m.first {
		if n.at.Before(start) {
			continue
		}
		out[n.nodePool]++
		if first.IsZero() || n.at.Before(first) {
			first = n.at
		}
	}
	return out, first
}

// PoolInfos describes the fleet's pools, fixed and autoscaled, for a
// workload's checks.
func PoolInfos(fl *fleet.Fleet, design interface {
	Intended(fleet.Pool) (string, int64, error)
}) map[string]PoolInfo {
	out := map[string]PoolInfo{}
	for _, p := range fl.Spec.Pools {
		info := PoolInfo{GPU: p.GPU(), DRA: p.GPU() && p.DRA != nil}
		if p.GPU() {
			info.Resource, _, _ = design.Intended(p)
		}
		out[p.Name] = info
	}
	for _, ap := range fl.Spec.AutoscaledPools {
		info := PoolInfo{Autoscaled: true, GPU: ap.GPU(), DRA: ap.GPU() && ap.DRA != nil}
		if ap.GPU() {
			var err error
			if info.Resource, info.PerNode, err = design.Intended(ap.Pool); err != nil {
				info.DesignErr = err.Error()
			}
		}
		if len(ap.TrustDomains) == 0 {
			info.Domains = []PoolDomain{{NodePool: ap.NodePool, MaxNodes: ap.MaxNodes}}
		}
		for _, d := range ap.TrustDomains {
			info.Domains = append(info.Domains, PoolDomain{Name: d.Name, NodePool: d.NodePool, MaxNodes: d.MaxNodes})
		}
		out[ap.Name] = info
	}
	return out
}
