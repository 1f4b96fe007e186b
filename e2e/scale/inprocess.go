// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"encoding/json"
	"fmt"
	"strings"
)

// InProcess is upstream scheduler_perf's SchedulingThroughput from an
// in-process run on this machine (hack/bench-inprocess.sh): the same-day
// figure a burst is set beside, since machines of this kind differ 2×
// from day to day (docs/scale.md#anchors).
type InProcess struct {
	// Average is SchedulingThroughput's Average bucket, pods/s.
	Average float64
	// Name is the workload the data items name (their "Name" label).
	Name string
	// Source is the file it was read from.
	Source string
}

// RatioTarget is issue #27's aim for a burst against the in-process run
// of the extended-resource workload.
const RatioTarget = 1.5

// ParseInProcess reads scheduler_perf's data items (the JSON it writes to
// -data-items-dir) and takes the SchedulingThroughput item.
func ParseInProcess(data []byte, source string) (*InProcess, error) {
	var items struct {
		DataItems []struct {
			Data   map[string]float64 `json:"data"`
			Unit   string             `json:"unit"`
			Labels map[string]string  `json:"labels"`
		} `json:"dataItems"`
	}
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, fmt.Errorf("%s: not scheduler_perf data items: %w", source, err)
	}
	for _, it := range items.DataItems {
		if it.Labels["Metric"] != "SchedulingThroughput" {
			continue
		}
		avg, ok := it.Data["Average"]
		if !ok || it.Unit != "pods/s" || avg <= 0 {
			return nil, fmt.Errorf("%s: SchedulingThroughput has no positive Average in pods/s (data %v, unit %q)", source, it.Data, it.Unit)
		}
		return &InProcess{Average: avg, Name: it.Labels["Name"], Source: source}, nil
	}
	return nil, fmt.Errorf("%s: no data item with label Metric=SchedulingThroughput (is it scheduler_perf's -data-items-dir output?)", source)
}

// Beside sets a run's burst SchedulingThroughput Average beside ip: its
// anchor names the in-process figure, and a ratio figure follows it, held
// to RatioTarget. A claims-only run is upstream's other workload, and a
// nil ip changes nothing.
func Beside(figs []Figure, claimsOnly bool, ip *InProcess) []Figure {
	if ip == nil || claimsOnly {
		return figs
	}
	var out []Figure
	for _, f := range figs {
		if !strings.HasSuffix(f.Name, " SchedulingThroughput Average") {
			out = append(out, f)
			continue
		}
		f.Anchor = fmt.Sprintf("upstream scheduler_perf in-process on this machine, same day: %s, %.1f pods/s (%s)", ip.Name, ip.Average, ip.Source)
		ratio := f.Value / ip.Average
		met := ratio >= RatioTarget
		out = append(out, f, Figure{Run: f.Run, Name: strings.TrimSuffix(f.Name, " Average") + " ÷ in-process", Value: ratio, Unit: "×",
			Target: fmt.Sprintf("≥ %.1f×", RatioTarget), Met: &met, Anchor: "issue #27: the contract's own cost per pod, against upstream's scheduler alone"})
	}
	return out
}
