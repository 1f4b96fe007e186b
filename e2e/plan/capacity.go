// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package plan

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gpupool/gpupool/e2e/fleet"
)

// bytesPerNode is what one simulated node costs a run, its share of five
// pods included: a 10,000-node, 50,000-pod scale run here peaked at 6.81 GiB
// in the control plane and 2.1 GiB in gpupool (docs/history.md, scale), about
// 0.9 MiB a node; rounded up.
const bytesPerNode = 1 << 20

// autoscalerBytesPerNode is what Karpenter, which runs for a fleet with
// autoscaled pools, holds per node of the cluster it watches: it peaked at
// 2,187 MiB beside 5,000 fixed nodes and the 88 it made for 960 pods
// (docs/measurements.md, 2026-12-07, make bench-scale's autoscale run),
// about 0.43 MiB a node; rounded up.
const autoscalerBytesPerNode = 1 << 19

// machineShare is the part of the machine's memory a run may plan to use:
// the rest is the OS's, the build cache's and other work's.
const machineShare = 0.75

// checkFitsMachine refuses a fleet the machine cannot hold before a node
// of it is built: found by the kernel instead, it takes the machine's other
// work down with it. memTotal is the machine's memory in bytes (0: unknown,
// no check).
//
// The nodes counted are the fixed pools' and as many as the autoscaled
// pools may grow to; with autoscaled pools, Karpenter's share is counted
// too.
func checkFitsMachine(fl *fleet.Fleet, memTotal uint64) error {
	if memTotal == 0 {
		return nil
	}
	nodes, grown := uint64(fl.TotalNodes()), uint64(0)
	for _, p := range fl.Autoscaled() {
		grown += uint64(p.MaxNodes)
	}
	perNode, what := uint64(bytesPerNode), fmt.Sprintf("%s a node, measured at 10,000 nodes", mib(bytesPerNode))
	if grown > 0 {
		perNode += autoscalerBytesPerNode
		what += fmt.Sprintf(", and %s a node for Karpenter, measured at 5,000", mib(autoscalerBytesPerNode))
	}
	nodes += grown
	need, limit := nodes*perNode, uint64(float64(memTotal)*machineShare)
	if need <= limit {
		return nil
	}
	counted := fmt.Sprintf("%d nodes", nodes)
	if grown > 0 {
		counted = fmt.Sprintf("%d nodes (%d fixed, %d the autoscaled pools may grow to)", nodes, nodes-grown, grown)
	}
	return fmt.Errorf("fleet %s: %s need about %s here (%s), more than the %s a run may use on this machine (%.0f%% of its %s); at most %d nodes fit",
		fl.File, counted, gib(need), what, gib(limit), machineShare*100, gib(memTotal), limit/perNode)
}

// memTotal reads MemTotal from /proc/meminfo (0 when it cannot).
func memTotal() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}

func gib(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
func mib(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
