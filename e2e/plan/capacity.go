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

// machineShare is the part of the machine's memory a run may plan to use:
// the rest is the OS's, the build cache's and other work's.
const machineShare = 0.75

// checkFitsMachine refuses a fleet the machine cannot hold before a node
// of it is built: found by the kernel instead, it takes the machine's other
// work down with it. memTotal is the machine's memory in bytes (0: unknown,
// no check).
func checkFitsMachine(fl *fleet.Fleet, memTotal uint64) error {
	if memTotal == 0 {
		return nil
	}
	nodes := uint64(fl.TotalNodes())
	need, limit := nodes*bytesPerNode, uint64(float64(memTotal)*machineShare)
	if need <= limit {
		return nil
	}
	return fmt.Errorf("fleet %s: %d nodes need about %s here (%s a node, measured at 10,000 nodes), more than the %s a run may use on this machine (%.0f%% of its %s); at most %d nodes fit",
		fl.File, nodes, gib(need), mib(bytesPerNode), gib(limit), machineShare*100, gib(memTotal), limit/bytesPerNode)
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
