// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/e2e/fleet"
)

func TestCheckFitsMachine(t *testing.T) {
	const gi = 1 << 30
	fl := func(nodes int) *fleet.Fleet {
		f := &fleet.Fleet{File: "big.yaml"}
		f.Spec.Pools = []fleet.Pool{{Name: "p", Nodes: nodes}}
		return f
	}
	if err := checkFitsMachine(fl(10_000), 24*gi); err != nil {
		t.Errorf("10,000 nodes on 24 GiB: %v, want it to fit (measured)", err)
	}
	err := checkFitsMachine(fl(100_000_000), 24*gi)
	if err == nil || !strings.Contains(err.Error(), "big.yaml: 100000000 nodes need about 97656.2 GiB") || !strings.Contains(err.Error(), "18.0 GiB") || !strings.Contains(err.Error(), "at most 18432 nodes fit") {
		t.Errorf("100,000,000 nodes on 24 GiB: %v, want a refusal with the figure and the limit", err)
	}
	if err := checkFitsMachine(fl(100_000_000), 0); err != nil {
		t.Errorf("unknown memory: %v, want no check", err)
	}

	// Autoscaled pools count as many nodes as they may grow to, and
	// Karpenter, which runs for them, its share of every node.
	scaled := func(fixed int, maxNodes ...int) *fleet.Fleet {
		f := fl(fixed)
		for i, m := range maxNodes {
			f.Spec.AutoscaledPools = append(f.Spec.AutoscaledPools, fleet.AutoscaledPool{Pool: fleet.Pool{Name: fmt.Sprintf("burst-%d", i)}, MaxNodes: m})
		}
		return f
	}
	if err := checkFitsMachine(scaled(5_000, 50, 10, 36), 24*gi); err != nil {
		t.Errorf("scale-5k-autoscale on 24 GiB: %v, want it to fit (measured)", err)
	}
	if err := checkFitsMachine(fl(13_000), 24*gi); err != nil {
		t.Errorf("13,000 fixed nodes on 24 GiB: %v, want it to fit", err)
	}
	err = checkFitsMachine(scaled(12_000, 1000), 24*gi)
	if err == nil || !strings.Contains(err.Error(), "13000 nodes (12000 fixed, 1000 the autoscaled pools may grow to)") || !strings.Contains(err.Error(), "for Karpenter") || !strings.Contains(err.Error(), "at most 12288 nodes fit") {
		t.Errorf("12,000 fixed nodes and 1,000 autoscaled on 24 GiB: %v, want a refusal counting Karpenter", err)
	}
}
