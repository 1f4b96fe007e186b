// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// EndpointStopGracePeriod is how long a kubelet keeps a device plugin's
// resource in capacity after the plugin left (kubelet-facts §3.2:
// endpointStopGracePeriod, pkg/kubelet/cm/devicemanager/types.go).
const EndpointStopGracePeriod = 5 * time.Minute

// AnnotationPluginStopped records, per resource a device plugin had
// registered and no longer serves, when it stopped (JSON, resource to
// RFC 3339 time): the simulated kubelet's memory of kubelet-facts §3, kept
// on the node between passes as a kubelet keeps it between status updates.
const AnnotationPluginStopped = "fakegpu.gpupool.dev/device-plugin-stopped"

// KubeletResources is what a kubelet publishes for device-plugin
// resources (kubelet-facts §3): what the plugin serves now, as served;
// a resource registered before (in the node's capacity) that is no longer
// served keeps its capacity with allocatable 0 for EndpointStopGracePeriod,
// then capacity 0, and its key stays; a resource never registered is
// absent. stopped is the memory (AnnotationPluginStopped) before this
// pass; the one after it is returned, with how long until a kept capacity
// drops (0: none pending).
func KubeletResources(served, registered map[string]int64, stopped map[string]time.Time, now time.Time) (capacity, allocatable map[string]int64, after map[string]time.Time, requeue time.Duration) {
	capacity, allocatable = maps.Clone(served), maps.Clone(served)
	if capacity == nil {
		capacity, allocatable = map[string]int64{}, map[string]int64{}
	}
	after = map[string]time.Time{}
	for _, name := range slices.Sorted(maps.Keys(registered)) {
		if _, ok := served[name]; ok {
			continue
		}
		since, ok := stopped[name]
		if !ok {
			since = now
		}
		after[name] = since
		allocatable[name] = 0
		if left := EndpointStopGracePeriod - now.Sub(since); left > 0 {
			capacity[name] = registered[name]
			if requeue == 0 || left < requeue {
				requeue = left
			}
		} else {
			capacity[name] = 0
		}
	}
	return capacity, allocatable, after, requeue
}

// DecodePluginStopped reads AnnotationPluginStopped; a value it cannot read
// is taken as empty (the memory starts again, as after a kubelet restart).
func DecodePluginStopped(v string) map[string]time.Time {
	out := map[string]time.Time{}
	if v == "" {
		return out
	}
	var raw map[string]string
	if json.Unmarshal([]byte(v), &raw) != nil {
		return out
	}
	for k, s := range raw {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			out[k] = t
		}
	}
	return out
}

// EncodePluginStopped writes AnnotationPluginStopped ("" for none).
func EncodePluginStopped(m map[string]time.Time) string {
	if len(m) == 0 {
		return ""
	}
	raw := map[string]string{}
	for k, t := range m {
		raw[k] = t.UTC().Format(time.RFC3339Nano)
	}
	b, _ := json.Marshal(raw)
	return string(b)
}
