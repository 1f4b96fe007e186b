// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// AnnotationXid on a node injects Xid errors, as NVML would report them to
// the device plugin: "GPU=XID[,GPU=XID...]" with the GPU's index, e.g.
// "0=79". A fleet or a test writes it; removing it does not heal the GPU
// before the plugin restarts (stack-facts §2), which the simulator models by
// keeping what the annotation says now: removing it is the restart.
const AnnotationXid = "fakegpu.gpupool.dev/xid"

// AnnotationUnhealthyDevices is the controller's record on the node of the
// device IDs the plugin reports unhealthy; the simulated kubelet allocates
// none of them.
const AnnotationUnhealthyDevices = "fakegpu.gpupool.dev/unhealthy-devices"

// AnnotationXidError is the controller's record of why AnnotationXid could
// not be read ("" when it could).
const AnnotationXidError = "fakegpu.gpupool.dev/xid-error"

// ignoredXids are the Xids the plugin does not count as critical
// (stack-facts §2, DP@1b826acc internal/rm/health.go
// getDisabledHealthCheckXids): exactly six.
var ignoredXids = []int{13, 31, 43, 45, 68, 109}

// CriticalXid reports whether the device plugin, run with env (the
// ClusterPolicy's spec.devicePlugin.env), marks a device unhealthy on this
// Xid (stack-facts §2, internal/rm/health.go checkHealth,
// getDisabledHealthCheckXids): DP_DISABLE_HEALTHCHECKS=all (or xids)
// turns checks off, and then only DP_ENABLE_HEALTHCHECKS=all brings them
// back; otherwise a comma list there skips more Xids, and one in
// DP_ENABLE_HEALTHCHECKS re-enables them, even the six skipped by default.
func CriticalXid(env map[string]string, xid int) bool {
	disabled, enabled := xidList(env["DP_DISABLE_HEALTHCHECKS"]), xidList(env["DP_ENABLE_HEALTHCHECKS"])
	switch {
	case enabled["all"]:
		return true
	case disabled["all"] || disabled["xids"]:
		return false
	case enabled[strconv.Itoa(xid)]:
		return true
	}
	return !slices.Contains(ignoredXids, xid) && !disabled[strconv.Itoa(xid)]
}

func xidList(v string) map[string]bool {
	out := map[string]bool{}
	for _, f := range strings.Split(v, ",") {
		if f = strings.ToLower(strings.TrimSpace(f)); f != "" {
			out[f] = true
		}
	}
	return out
}

// ParseXids reads AnnotationXid for a node with gpus GPUs: GPU index to Xid.
func ParseXids(v string, gpus int) (map[int]int, error) {
	out := map[int]int{}
	if strings.TrimSpace(v) == "" {
		return out, nil
	}
	for _, part := range strings.Split(v, ",") {
		gpu, xid, ok := strings.Cut(strings.TrimSpace(part), "=")
		i, err1 := strconv.Atoi(gpu)
		x, err2 := strconv.Atoi(xid)
		if !ok || err1 != nil || err2 != nil || x <= 0 {
			return nil, fmt.Errorf("annotation %s: %q: want GPU=XID, e.g. 0=79", AnnotationXid, part)
		}
		if i < 0 || i >= gpus {
			return nil, fmt.Errorf("annotation %s: %q: the node has GPUs 0..%d", AnnotationXid, part, gpus-1)
		}
		out[i] = x
	}
	return out, nil
}

// UnhealthyDevices lists, per advertised resource, the device IDs the device
// plugin reports unhealthy after the Xids (GPU index to Xid) on a node with
// inv under state. As at DP v0.20.0 (stack-facts §2, internal/rm/health.go
// checkHealth): the plugin keeps one device per physical GPU, so an Xid
// marks ONE replica of a shared GPU (the last) and one MIG device of a
// MIG-enabled GPU (here its first, in profile order; upstream's pick is map
// order), never all of them. Xids the plugin ignores mark nothing.
func UnhealthyDevices(node string, inv NodeInventory, state StackState, xids map[int]int, env map[string]string) map[string][]string {
	out := map[string][]string{}
	if len(xids) == 0 {
		return out
	}
	strategy := effectiveMIGStrategy(state)
	next := map[string]int64{} // per resource before sharing: the next device's index
	mark := func(gpu int, res string) {
		replicas, advertised := state.DevicePlugin.Replicas(res)
		u := next[res]
		if x, ok := xids[gpu]; ok && CriticalXid(env, x) {
			k := u
			if replicas > 1 {
				k = u*int64(replicas) + int64(replicas) - 1
			}
			out[advertised] = append(out[advertised], deviceID(node, advertised, k, replicas))
		}
	}
	for i := 0; i < inv.Count; i++ {
		var st GPUState
		if i < len(state.MIG) {
			st = state.MIG[i]
		}
		if !st.MIGEnabled || strategy == MIGStrategyNone {
			mark(i, ResourceGPU)
			next[ResourceGPU]++
			continue
		}
		first := true
		for _, name := range sortedKeys(st.Devices) {
			res := ResourceGPU
			if strategy == MIGStrategyMixed {
				res = ResourceMIGPrefix + migDeviceName(name)
			}
			for n := 0; n < st.Devices[name]; n++ {
				if first {
					mark(i, res)
					first = false
				}
				next[res]++
			}
		}
	}
	for k := range out {
		sort.Strings(out[k])
	}
	return out
}
