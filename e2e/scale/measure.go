// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"math"
	"sort"
	"sync"
	"time"
)

// podTimes records, per pod, when it was created (client side, just before
// the create call) and when the harness first saw it bound.
type podTimes struct {
	mu        sync.Mutex
	created   map[string]time.Time
	scheduled map[string]time.Time
	// gone: deleted before anyone saw them bound (churn outran the
	// scheduler); they have no latency and are not waited for.
	gone map[string]bool
}

func newPodTimes() *podTimes {
	return &podTimes{created: map[string]time.Time{}, scheduled: map[string]time.Time{}, gone: map[string]bool{}}
}

// deleted marks a pod deleted; it reports whether it had been seen bound.
func (p *podTimes) deleted(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, bound := p.scheduled[key]
	if !bound {
		p.gone[key] = true
	}
	return bound
}

// settled counts the keys that are bound or gone.
func (p *podTimes) settled(keys []string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, k := range keys {
		if _, ok := p.scheduled[k]; ok || p.gone[k] {
			n++
		}
	}
	return n
}

func (p *podTimes) create(key string, at time.Time) {
	p.mu.Lock()
	p.created[key] = at
	p.mu.Unlock()
}

// has reports whether the run created the pod.
func (p *podTimes) has(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.created[key]
	return ok
}

func (p *podTimes) bound(key string, at time.Time) {
	p.mu.Lock()
	if _, seen := p.scheduled[key]; !seen {
		p.scheduled[key] = at
	}
	p.mu.Unlock()
}

// lastBound is when the last of keys was seen bound (false: none was).
func (p *podTimes) lastBound(keys []string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var last time.Time
	for _, k := range keys {
		if s, ok := p.scheduled[k]; ok && s.After(last) {
			last = s
		}
	}
	return last, !last.IsZero()
}

func (p *podTimes) scheduledCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.scheduled)
}

// latencies returns create→scheduled for the given pods that were bound.
func (p *podTimes) latencies(keys []string) []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]time.Duration, 0, len(keys))
	for _, k := range keys {
		c, okc := p.created[k]
		s, oks := p.scheduled[k]
		if okc && oks {
			out = append(out, max(s.Sub(c), 0))
		}
	}
	return out
}

// claimTimes records, per ResourceClaim of the run's pods, when the
// harness first saw it and first saw it allocated, and its pod: what
// ClusterLoader2's ResourceClaimAllocationLatency measures (dra-facts §5),
// here from watch events rather than the claim's creationTimestamp,
// which has whole seconds only.
type claimTimes struct {
	mu        sync.Mutex
	seen      map[string]time.Time
	allocated map[string]time.Time
	pod       map[string]string
}

func newClaimTimes() *claimTimes {
	return &claimTimes{seen: map[string]time.Time{}, allocated: map[string]time.Time{}, pod: map[string]string{}}
}

// observe records a claim (key namespace/name) of pod (namespace/name) at
// when; allocated: its status holds an allocation.
func (c *claimTimes) observe(key, pod string, allocated bool, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[key]; !ok {
		c.seen[key] = at
		c.pod[key] = pod
	}
	if _, ok := c.allocated[key]; allocated && !ok {
		c.allocated[key] = at
	}
}

// latencies returns seen→allocated for the allocated claims of the pods.
func (c *claimTimes) latencies(pods []string) []time.Duration {
	want := make(map[string]bool, len(pods))
	for _, p := range pods {
		want[p] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for key, at := range c.allocated {
		if want[c.pod[key]] {
			out = append(out, max(at.Sub(c.seen[key]), 0))
		}
	}
	return out
}

// Percentiles are named as scheduler_perf names them.
type Percentiles struct {
	Average float64 `json:"Average"`
	Perc50  float64 `json:"Perc50"`
	Perc90  float64 `json:"Perc90"`
	Perc99  float64 `json:"Perc99"`
	Samples int     `json:"samples"`
}

// percentiles of the samples, nearest-rank like scheduler_perf.
func percentiles(samples []float64) Percentiles {
	if len(samples) == 0 {
		return Percentiles{}
	}
	s := append([]float64(nil), samples...)
	sort.Float64s(s)
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	rank := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return Percentiles{Average: sum / float64(len(s)), Perc50: rank(0.50), Perc90: rank(0.90), Perc99: rank(0.99), Samples: len(s)}
}

func seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}
