// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"

	"github.com/gpupool/gpupool/e2e/cluster"
)

// requestDurations is the apiserver's request latency histogram, by
// verb and resource: what the API-call latency SLO is measured on.
const requestDurations = "apiserver_request_duration_seconds"

var mutatingVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true}

// histogram is cumulative bucket counts by upper bound.
type histogram struct {
	bounds []float64
	counts []float64 // cumulative, same order as bounds; +Inf last
}

// APISnapshot holds the mutating-call histograms by "VERB resource".
type APISnapshot map[string]*histogram

// scrapeAPIServer reads the apiserver's /metrics.
func scrapeAPIServer(ctx context.Context, cs kubernetes.Interface) (APISnapshot, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("apiserver /metrics: %w", err)
	}
	return parseAPIMetrics(raw)
}

func parseAPIMetrics(raw []byte) (APISnapshot, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("apiserver /metrics: %w", err)
	}
	out := APISnapshot{}
	fam, ok := fams[requestDurations]
	if !ok {
		return out, nil
	}
	for _, m := range fam.GetMetric() {
		verb, resource := label(m, "verb"), label(m, "resource")
		if sub := label(m, "subresource"); sub != "" {
			resource += "/" + sub
		}
		if !mutatingVerbs[verb] || m.GetHistogram() == nil {
			continue
		}
		key := verb + " " + resource
		h := out[key]
		if h == nil {
			h = &histogram{}
			out[key] = h
		}
		h.add(m.GetHistogram())
	}
	return out, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// add sums a histogram (another scope or component label) into h.
func (h *histogram) add(p *dto.Histogram) {
	bs := p.GetBucket()
	if h.bounds == nil {
		for _, b := range bs {
			h.bounds = append(h.bounds, b.GetUpperBound())
		}
		h.bounds = append(h.bounds, math.Inf(1))
		h.counts = make([]float64, len(h.bounds))
	}
	for i, b := range bs {
		if i < len(h.counts)-1 {
			h.counts[i] += float64(b.GetCumulativeCount())
		}
	}
	h.counts[len(h.counts)-1] += float64(p.GetSampleCount())
}

// since returns the calls made between an earlier snapshot and s.
func (s APISnapshot) since(before APISnapshot) APISnapshot {
	out := APISnapshot{}
	for k, h := range s {
		d := &histogram{bounds: h.bounds, counts: append([]float64(nil), h.counts...)}
		if b := before[k]; b != nil && len(b.counts) == len(d.counts) {
			for i := range d.counts {
				d.counts[i] -= b.counts[i]
			}
		}
		if d.total() > 0 {
			out[k] = d
		}
	}
	return out
}

func (h *histogram) total() float64 { return h.counts[len(h.counts)-1] }

// quantile interpolates inside the bucket, as PromQL's histogram_quantile
// does; a quantile in the +Inf bucket reports the last finite bound.
func (h *histogram) quantile(q float64) float64 {
	total := h.total()
	if total == 0 {
		return 0
	}
	rank := q * total
	i := sort.Search(len(h.counts), func(i int) bool { return h.counts[i] >= rank })
	if i >= len(h.bounds)-1 {
		return h.bounds[len(h.bounds)-2]
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = h.bounds[i-1], h.counts[i-1]
	}
	in := h.counts[i] - below
	if in == 0 {
		return h.bounds[i]
	}
	return lower + (h.bounds[i]-lower)*(rank-below)/in
}

// MutatingLatency summarises mutating API calls over an interval.
type MutatingLatency struct {
	Calls float64 `json:"calls"`
	// Perc99 over every mutating call (seconds).
	Perc99 float64 `json:"Perc99"`
	// Worst is the (verb, resource) with the highest p99 among those with
	// at least 100 calls: the SLO is per verb and resource.
	Worst       string  `json:"worst"`
	WorstPerc99 float64 `json:"worstPerc99"`
}

func (s APISnapshot) summary() MutatingLatency {
	var all *histogram
	out := MutatingLatency{}
	for k, h := range s {
		if all == nil {
			all = &histogram{bounds: h.bounds, counts: make([]float64, len(h.counts))}
		}
		if len(h.counts) == len(all.counts) {
			for i := range h.counts {
				all.counts[i] += h.counts[i]
			}
		}
		if h.total() >= 100 {
			if q := h.quantile(0.99); q > out.WorstPerc99 {
				out.Worst, out.WorstPerc99 = k, q
			}
		}
	}
	if all != nil {
		out.Calls = all.total()
		out.Perc99 = all.quantile(0.99)
	}
	return out
}

// ProcessMemory is one process's resident memory and the CPU it used.
type ProcessMemory struct {
	Name    string `json:"name"`
	PID     int    `json:"pid"`
	PeakRSS int64  `json:"peakRSSBytes"` // VmHWM: the most it ever held
	RSS     int64  `json:"rssBytes"`
	// CPUSeconds is user+system time since the process started: on two
	// cores, the figure that says which process is the wall.
	CPUSeconds float64 `json:"cpuSeconds"`
	// Beside: a process that runs beside the control plane (the
	// autoscaler), not counted in its peak RSS.
	Beside bool `json:"beside,omitempty"`
}

// processesUnder returns the processes running from dir (every component
// of a kwokctl binary cluster), those more lists, plus this process.
func processesUnder(dir string, more func() []cluster.Process) []ProcessMemory {
	procs := []cluster.Process{{PID: os.Getpid(), Name: "gpupool (harness and fakegpu controller)"}}
	if dir != "" {
		procs = append(procs, cluster.ProcessesUnder(dir)...)
	}
	fromCluster := len(procs)
	if more != nil {
		procs = append(procs, more()...)
	}
	var out []ProcessMemory
	for i, p := range procs {
		peak, rss := memoryOf(p.PID)
		out = append(out, ProcessMemory{Name: p.Name, PID: p.PID, PeakRSS: peak, RSS: rss, CPUSeconds: cpuOf(p.PID), Beside: i >= fromCluster})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func memoryOf(pid int) (peak, rss int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmHWM:":
			peak = kb * 1024
		case "VmRSS:":
			rss = kb * 1024
		}
	}
	return peak, rss
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

// cpuOf reads utime+stime (fields 14 and 15 of /proc/PID/stat).
func cpuOf(pid int) float64 {
	f := cluster.ProcStat(pid)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	k, _ := strconv.ParseFloat(f[12], 64)
	return (u + k) / clockTicks
}
