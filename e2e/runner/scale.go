// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/explain"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/plan"
	"github.com/gpupool/gpupool/e2e/scale"
	"github.com/gpupool/gpupool/reports"
)

// ScaleSpec is one fleet of a scale run.
type ScaleSpec struct {
	// Name names the run's cluster, or labels what the run makes in
	// Existing.
	Name     string
	Plan     *plan.Plan
	Workload *scale.Workload
	// Existing is a cluster gpupool did not make: the fleet joins it as
	// simulated nodes, after the plan's candidate with InstallCandidate,
	// and all of it is removed after. Without it the run brings up an
	// embedded cluster with Tuning, and profiles it into ProfileDir if set.
	Existing         *cluster.Existing
	InstallCandidate bool
	// StackImages run the simulated pools' stack in Existing.
	StackImages *harness.StackImages
	Tuning      cluster.Tuning
	ProfileDir  string
	// ReportDir receives, for a fleet with autoscaled pools, Karpenter's
	// log as <Name>-karpenter.log ("": none kept).
	ReportDir string
	Output
}

// Scale runs the workload on the fleet and removes the cluster, or what
// the run made in it, whatever happens.
func Scale(ctx context.Context, s ScaleSpec) (*scale.Result, error) {
	if s.Existing != nil {
		return scaleAttached(ctx, s)
	}
	return scaleOne(ctx, s)
}

// ScaleRun is one fleet size of a scale benchmark, as scale.json holds it.
type ScaleRun struct {
	Label  string        `json:"label"`
	Fleet  string        `json:"fleetFile"`
	Result *scale.Result `json:"result"`
	Error  string        `json:"error,omitempty"`
}

// PoolInfos describes the fleet's pools for workload validation.
func PoolInfos(pl *plan.Plan) map[string]scale.PoolInfo {
	return scale.PoolInfos(pl.Fleet, pl)
}

// scaleUp tunes bring-up for fleets of thousands of nodes.
var scaleUp = harness.UpOptions{
	Fleet:                     fleet.CreateOptions{Workers: 64, ReadyTimeout: 5 * time.Minute},
	SyncTimeout:               5 * time.Minute,
	GPUStackWorkers:           8,
	JoinAdvertised:            true,
	GPUStackSkipDeviceRecords: true,
}

// scaleAttached joins one fleet to an existing cluster as simulated nodes,
// runs the workload there and removes everything the run made.
func scaleAttached(ctx context.Context, s ScaleSpec) (*scale.Result, error) {
	name, pl, w, e := s.Name, s.Plan, s.Workload, s.Existing
	s.Logf("scale run %s: fleet %s (%d nodes) joining %s, workload %s", name, pl.Fleet.Metadata.Name, pl.Fleet.TotalNodes(), e.Kubeconfig, w.Metadata.Name)
	s.Phasef("scale: fleet %s (%d nodes) joining %s, workload %s", pl.Fleet.Metadata.Name, pl.Fleet.TotalNodes(), e.Kubeconfig, w.Metadata.Name)
	var snapshot scale.APISnapshot
	sess, err := harness.Open(ctx, pl, harness.SessionOptions{ID: name, Existing: e, Output: s.Output, RemoveTimeout: 4 * time.Minute,
		Attach: harness.AttachOptions{InstallCandidate: s.InstallCandidate, SimulatePools: true, StackImages: s.StackImages, Up: scaleUp}})
	defer sess.Close(ctx)
	if err != nil {
		return nil, err
	}
	r := sess.Run
	// The apiserver's counters before the workload (bring-up is in the
	// joined fleet's figures, not the API totals, on a shared cluster).
	if snapshot, err = scale.Snapshot(ctx, r.Client); err != nil {
		return nil, err
	}
	return drive(ctx, s, r, snapshot, scale.Options{Log: s.Logf, Phase: s.Phasef,
		Labels: map[string]string{harness.LabelRun: name}, NodeSelector: map[string]string{harness.LabelRun: name}})
}

// scaleOne brings up a tuned cluster for one fleet, runs the workload and
// removes the cluster, whatever happens.
func scaleOne(ctx context.Context, s ScaleSpec) (*scale.Result, error) {
	name, pl, w := s.Name, s.Plan, s.Workload
	s.Logf("scale run %s: fleet %s (%d nodes), workload %s", name, pl.Fleet.Metadata.Name, pl.Fleet.TotalNodes(), w.Metadata.Name)
	s.Phasef("scale: fleet %s (%d nodes), workload %s", pl.Fleet.Metadata.Name, pl.Fleet.TotalNodes(), w.Metadata.Name)
	provider, err := harness.TunedProvider(name, s.Tuning)
	if err != nil {
		return nil, err
	}
	var snapshot scale.APISnapshot
	up := scaleUp
	up.BeforeProvision = func(r *harness.Run) error {
		var err error
		snapshot, err = scale.Snapshot(ctx, r.Client)
		return err
	}
	if s.ReportDir != "" && len(pl.Fleet.Autoscaled()) > 0 {
		// Karpenter's decisions at size: which nodes for which pods.
		kpLog, err := os.Create(filepath.Join(s.ReportDir, name+"-"+AutoscalerLogFile))
		if err != nil {
			return nil, err
		}
		defer kpLog.Close()
		up.AutoscalerLog = kpLog
	}
	sess, err := harness.Open(ctx, pl, harness.SessionOptions{ID: name, Provider: provider, Up: up, Output: s.Output, DownTimeout: 2 * time.Minute})
	defer sess.Close(ctx)
	if err != nil {
		return nil, err
	}
	return drive(ctx, s, sess.Run, snapshot, scale.Options{ClusterDir: provider.Dir(), Processes: sess.Run.AutoscalerProcesses, ProfileDir: s.ProfileDir, Log: s.Logf, Phase: s.Phasef})
}

// drive runs the workload on the fleet r brought up, from the apiserver's
// counters in snapshot.
func drive(ctx context.Context, s ScaleSpec, r *harness.Run, snapshot scale.APISnapshot, opt scale.Options) (*scale.Result, error) {
	runner, err := scale.NewRunner(ctx, r.Client, s.Plan.Fleet, s.Workload, r, s.Name, opt)
	if err != nil {
		return nil, err
	}
	res, err := runner.Run(ctx, r.FleetStats, snapshot)
	if res != nil {
		res.Candidate = s.Plan.Candidate.Name
	}
	return res, err
}

// PrintScaleFigures writes the figures as a table, each beside its target.
func PrintScaleFigures(w io.Writer, figs []scale.Figure) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nRUN\tFIGURE\tVALUE\tTARGET\t\tANCHOR")
	for _, f := range figs {
		mark := ""
		if f.Met != nil {
			mark = "MET"
			if !*f.Met {
				mark = "MISSED"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s\t%s\t%s\n", f.Run, f.Name, formatValue(f.Value), f.Unit, f.Target, mark, f.Anchor)
	}
	tw.Flush()
}

func formatValue(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// pendingText is a phase's Pending pods by the contract's explanation, in
// words, most first: one line each ("none" when no pod was Pending).
func pendingText(pending map[string]int) string {
	if len(pending) == 0 {
		return "none"
	}
	cats := make([]string, 0, len(pending))
	for c := range pending {
		cats = append(cats, c)
	}
	sort.Slice(cats, func(i, j int) bool {
		if pending[cats[i]] != pending[cats[j]] {
			return pending[cats[i]] > pending[cats[j]]
		}
		return cats[i] < cats[j]
	})
	lines := make([]string, len(cats))
	for i, c := range cats {
		lines[i] = fmt.Sprintf("%d: %s", pending[c], html.EscapeString(explain.Describe(c)))
	}
	return strings.Join(lines, "<br>")
}

// WriteScaleReport writes scale.json and scale.html (tables and plots in
// one file) into dir and returns the figures, each burst set beside the
// in-process run ip if there is one; an error says what it could not
// write.
func WriteScaleReport(dir string, runs []ScaleRun, ip *scale.InProcess) ([]scale.Figure, error) {
	var figs []scale.Figure
	var throughput []reports.Series
	var groups []string
	lat := map[string]*reports.Series{}
	latOrder := []string{}
	for _, r := range runs {
		if r.Result == nil {
			continue
		}
		figs = append(figs, scale.Beside(scale.Figures(r.Label, r.Result), r.Result.ClaimsOnly, ip)...)
		groups = append(groups, r.Label)
		for _, ph := range r.Result.Phases {
			if ph.Kind == scale.KindFill {
				continue // the harness placed them: no scheduler figures
			}
			if ph.Kind == scale.KindBurst {
				throughput = append(throughput, reports.Series{Name: r.Label + " " + ph.Name, Points: ph.ThroughputSeries})
			}
			for _, q := range []struct {
				n string
				v float64
			}{{"Perc50", ph.CreateToScheduled.Perc50}, {"Perc90", ph.CreateToScheduled.Perc90}, {"Perc99", ph.CreateToScheduled.Perc99}} {
				key := ph.Name + " " + q.n
				if lat[key] == nil {
					lat[key] = &reports.Series{Name: key}
					latOrder = append(latOrder, key)
				}
				lat[key].Points = append(lat[key].Points, q.v)
			}
		}
	}
	var latSeries []reports.Series
	for _, k := range latOrder {
		latSeries = append(latSeries, *lat[k])
	}
	b, _ := json.MarshalIndent(map[string]any{"runs": runs, "figures": figs}, "", "  ")
	errJSON := os.WriteFile(filepath.Join(dir, "scale.json"), b, 0o644)
	var table strings.Builder
	table.WriteString("<h2>Figures</h2><table><tr><th>run</th><th>figure</th><th>value</th><th>target</th><th>anchor</th></tr>")
	for _, f := range figs {
		cls := ""
		if f.Met != nil {
			cls = map[bool]string{true: "met", false: "miss"}[*f.Met]
		}
		fmt.Fprintf(&table, "<tr><td>%s</td><td>%s</td><td class=%q>%s %s</td><td>%s</td><td>%s</td></tr>", html.EscapeString(f.Run), html.EscapeString(f.Name), cls, formatValue(f.Value), f.Unit, html.EscapeString(f.Target), html.EscapeString(f.Anchor))
	}
	table.WriteString("</table>")
	var contract strings.Builder
	contract.WriteString("<h2>Contract under pressure</h2><table><tr><th>run</th><th>phase</th><th>pods checked</th><th>scheduled</th><th>violations</th><th>Pending by contract reason</th></tr>")
	for _, r := range runs {
		if r.Result == nil {
			fmt.Fprintf(&contract, "<tr><td>%s</td><td colspan=5>%s</td></tr>", html.EscapeString(r.Label), html.EscapeString(r.Error))
			continue
		}
		for _, ph := range r.Result.Phases {
			fmt.Fprintf(&contract, "<tr><td>%s</td><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td class=\"pending\">%s</td></tr>", html.EscapeString(r.Label), ph.Name, ph.Contract.Pods, ph.Contract.Scheduled, ph.Contract.Violations, pendingText(ph.Contract.Pending))
		}
	}
	contract.WriteString("</table>")
	page := reports.HTMLPage("gpupool scale benchmark",
		table.String(),
		"<h2>SchedulingThroughput over time</h2>"+reports.LineChart("pods bound per second (burst)", "seconds since the first create", "pods/s", throughput),
		"<h2>Create→scheduled latency</h2>"+reports.BarChart("create→scheduled percentiles per fleet", "seconds", groups, latSeries),
		contract.String())
	errHTML := os.WriteFile(filepath.Join(dir, "scale.html"), []byte(page), 0o644)
	return figs, errors.Join(errJSON, errHTML)
}
