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

func (p *podTimes) bound(key string, at time.Time) {
	p.mu.Lock()
	if _, seen := p.scheduled[key]; !seen {
		p.scheduled[key] = at
	}
	p.mu.Unlock()
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
