// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package plan

import (
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
}
