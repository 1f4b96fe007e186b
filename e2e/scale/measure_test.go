// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestPercentilesNearestRank(t *testing.T) {
	var s []float64
	for i := 1; i <= 100; i++ {
		s = append(s, float64(i))
	}
	p := percentiles(s)
	assert.Equal(t, Percentiles{Average: 50.5, Perc50: 50, Perc90: 90, Perc99: 99, Samples: 100}, p)
	assert.Equal(t, Percentiles{Average: 7, Perc50: 7, Perc90: 7, Perc99: 7, Samples: 1}, percentiles([]float64{7}))
	assert.Equal(t, Percentiles{}, percentiles(nil))
}

// A claim's latency runs from first seen to first seen allocated, and
// counts only for the pods asked about; an unallocated claim has none.
func TestClaimAllocationLatency(t *testing.T) {
	c := newClaimTimes()
	t0 := time.Unix(100, 0)
	c.observe("ns/a-gpu-x", "ns/a", false, t0)
	c.observe("ns/a-gpu-x", "ns/a", true, t0.Add(300*time.Millisecond))
	c.observe("ns/a-gpu-x", "ns/a", true, t0.Add(900*time.Millisecond)) // a later update: not a new allocation
	c.observe("ns/b-gpu-y", "ns/b", true, t0.Add(time.Second))          // seen allocated at once
	c.observe("ns/c-gpu-z", "ns/c", false, t0)
	if got := c.latencies([]string{"ns/a", "ns/b", "ns/c"}); len(got) != 2 || !slices.Contains(got, 300*time.Millisecond) || !slices.Contains(got, 0) {
		t.Errorf("latencies = %v, want 300ms and 0", got)
	}
	if got := c.latencies([]string{"ns/a"}); len(got) != 1 || got[0] != 300*time.Millisecond {
		t.Errorf("latencies of ns/a = %v, want [300ms]", got)
	}
}
