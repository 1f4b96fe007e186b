package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/dirs"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/plan"
	"github.com/gpupool/gpupool/e2e/scale"
	"github.com/gpupool/gpupool/reports"
)

// Built-in defaults, relative to the manifests directory.
const (
	defaultScaleFleet = "fleets/scale-1k.yaml"
	defaultWorkload   = "workloads/gpu-burst.yaml"
)

// scaleRun is one fleet size of a scale benchmark.
type scaleRun struct {
	Label  string        `json:"label"`
	Fleet  string        `json:"fleetFile"`
	Result *scale.Result `json:"result"`
	Error  string        `json:"error,omitempty"`
}

func scaleCommand() *cobra.Command {
	c := &cobra.Command{Use: "scale", Short: "put fleets of thousands of GPU nodes under scheduler pressure; measure, check the contract in bulk", Args: cobra.NoArgs}
	fs := c.Flags()
	fleets := fs.String("fleets", "", "comma-separated fleet files, run one after another, each on a fresh cluster (default: the built-in "+defaultScaleFleet+"; "+builtinNote+")")
	pods := fs.String("pods", "", "comma-separated sizes of the scheduler bursts, one per fleet (default: the workload's; fill phases size themselves)")
	workloadPath := fs.String("workload", "", "workload file, gpupool.dev/v1alpha1 Workload (default: the built-in "+defaultWorkload+")")
	candidateDir := fs.String("candidate", "", "candidate directory (default: the built-in "+plan.DefaultCandidate+")")
	out := fs.String("out", "", "report directory (default scale-<run-id> in reports/out of a gpupool checkout, else in ./gpupool-reports)")
	memLimit := fs.String("apiserver-memory-limit", cluster.ScaleTuning().APIServerMemoryLimit, "kube-apiserver's GOMEMLIMIT: lower holds the control plane's memory down at the cost of apiserver CPU (README: Scale)")
	var target targetFlags
	fs.StringVar(&target.kubeconfig, "kubeconfig", "", "run on this existing cluster (a real, multi-node control plane) instead of an embedded one: each fleet joins it as simulated nodes, with its GPU pool config as configured unless --candidate is given; all removed after")
	fs.StringVar(&target.context, "context", "", "the kubeconfig context to use (default its current one)")
	profile := fs.Bool("profile", false, "write CPU profiles of kube-apiserver and kube-scheduler during each burst, and their heap profiles at the end, into the report directory (go tool pprof reads them)")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		if !goMemLimit.MatchString(*memLimit) {
			return fmt.Errorf("--apiserver-memory-limit %q: want a Go GOMEMLIMIT such as 2600MiB or 3GiB, or off", *memLimit)
		}
		fleetFiles, err := userPaths(*fleets, defaultScaleFleet)
		if err != nil {
			return err
		}
		workloadFile, err := userPath(*workloadPath, defaultWorkload)
		if err != nil {
			return err
		}
		candidate := ""
		if *candidateDir != "" {
			if candidate, err = userPath(*candidateDir, ""); err != nil {
				return err
			}
		}
		target.simulate = target.kubeconfig != ""
		existing, err := target.existing("")
		if err != nil {
			return err
		}
		if existing != nil && *profile {
			return errors.New("--profile reads the embedded control plane's own ports; with --kubeconfig the control plane is not gpupool's")
		}
		var sizes []int
		if *pods != "" {
			for _, s := range strings.Split(*pods, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil || n < 1 {
					return fmt.Errorf("-pods: want positive numbers, got %q", s)
				}
				sizes = append(sizes, n)
			}
			if len(sizes) != len(fleetFiles) {
				return fmt.Errorf("-pods: %d sizes for %d fleets", len(sizes), len(fleetFiles))
			}
		}

		// Everything that can be checked without a cluster, for every fleet.
		type job struct {
			plan *plan.Plan
			w    *scale.Workload
		}
		var jobs []job
		for i, f := range fleetFiles {
			pl, err := plan.Prepare(f, candidate)
			if err != nil {
				return err
			}
			// Loaded per fleet: -pods changes each copy.
			w, err := scale.LoadWorkload(workloadFile)
			if err != nil {
				return err
			}
			if err := w.CheckPools(poolInfos(pl)); err != nil {
				return err
			}
			if sizes != nil {
				for j := range w.Spec.Phases {
					if ph := w.Spec.Phases[j]; ph.Kind() == scale.KindBurst && ph.LivePodsPerNode == 0 {
						w.Spec.Phases[j].Pods = sizes[i]
					}
				}
			}
			jobs = append(jobs, job{pl, w})
		}

		runID := harness.NewRunName()
		dir := *out
		if dir == "" {
			dir = filepath.Join(dirs.ReportsDir(), "scale-"+runID)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if existing != nil && candidate == "" {
			// As configured: the cluster's config, read once, for every fleet.
			snap, err := snapshotCluster(ctx, existing, filepath.Join(dir, "cluster-config"))
			if err != nil {
				return err
			}
			for i := range jobs {
				if jobs[i].plan, err = plan.Prepare(jobs[i].plan.Fleet.File, snap); err != nil {
					return err
				}
			}
		}
		var runs []scaleRun
		failed := false
		tuning := cluster.ScaleTuning()
		tuning.APIServerMemoryLimit = *memLimit
		profileDir := ""
		if *profile {
			tuning.Profiling, profileDir = true, dir
		}
		for i, j := range jobs {
			label := fmt.Sprintf("%s (%d nodes)", j.plan.Fleet.Metadata.Name, j.plan.Fleet.TotalNodes())
			name := fmt.Sprintf("%s-%d", runID, i)
			var res *scale.Result
			if existing != nil {
				res, err = scaleAttached(ctx, name, j.plan, j.w, existing, candidate != "")
			} else {
				res, err = scaleOne(ctx, name, j.plan, j.w, tuning, profileDir)
			}
			run := scaleRun{Label: label, Fleet: j.plan.Fleet.File, Result: res}
			if err != nil {
				run.Error = err.Error()
				logf("%s: %v", label, err)
				failed = true
			}
			runs = append(runs, run)
			if ctx.Err() != nil {
				break
			}
		}
		figures := writeScaleReport(dir, runs)
		printFigures(figures)
		for _, r := range runs {
			if r.Result == nil {
				continue
			}
			for _, ph := range r.Result.Phases {
				if ph.Contract.Violations > 0 || ph.TimedOut != "" {
					failed = true
					fmt.Printf("\nCONTRACT %s, phase %s: %d violations %v\n", r.Label, ph.Name, ph.Contract.Violations, ph.Contract.ByRule)
					for _, e := range ph.Contract.Examples {
						fmt.Println("  " + e)
					}
					if ph.TimedOut != "" {
						fmt.Println("  timed out: " + ph.TimedOut)
					}
				}
			}
		}
		fmt.Printf("\nreports: %s\n", dir)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if failed {
			return exitError{1}
		}
		return nil
	}
	return c
}

// builtinNote says how userPaths resolves a relative path, for flag help.
const builtinNote = "a relative path that is not in the working directory names a built-in one, such as fleets/scale-5k.yaml"

// userPaths expands a comma-separated list of paths or globs a user gave,
// each to at least one existing path (userGlob), in order; an empty list
// is the built-in def.
func userPaths(list, def string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return userGlob(def, true)
	}
	var out []string
	for _, g := range strings.Split(list, ",") {
		m, err := userGlob(strings.TrimSpace(g), false)
		if err != nil {
			return nil, err
		}
		out = append(out, m...)
	}
	return out, nil
}

// userPath is userPaths of one path that must name one file or directory.
func userPath(p, def string) (string, error) {
	m, err := userPaths(p, def)
	if err != nil {
		return "", err
	}
	if len(m) != 1 {
		return "", fmt.Errorf("%s names %d files, want one: %s", p, len(m), strings.Join(m, ", "))
	}
	return m[0], nil
}

// userGlob expands a path or glob to absolute paths. A built-in one is
// relative to the manifests directory. Otherwise a relative one resolves
// against the working directory or, when nothing there matches, against
// the manifests directory: "fleets/scale-5k.yaml" names a built-in fleet
// from anywhere.
func userGlob(g string, builtin bool) ([]string, error) {
	if g == "" {
		return nil, fmt.Errorf("empty path")
	}
	var m []string
	var err error
	if !builtin {
		if m, err = filepath.Glob(absOrEmpty(g)); err != nil || len(m) > 0 || filepath.IsAbs(g) {
			return nonEmpty(g, m, err)
		}
	}
	dir, err := dirs.Manifests()
	if err != nil {
		return nil, err
	}
	m, err = filepath.Glob(filepath.Join(dir, filepath.FromSlash(g)))
	return nonEmpty(g, m, err)
}

func nonEmpty(g string, m []string, err error) ([]string, error) {
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", g, err)
	case len(m) == 0:
		return nil, fmt.Errorf("%s: no such file, in the working directory or the built-in manifests", g)
	}
	return m, nil
}

// poolInfos describes the fleet's pools for workload validation.
func poolInfos(plan *plan.Plan) map[string]scale.PoolInfo {
	r := &harness.Run{Plan: plan}
	out := map[string]scale.PoolInfo{}
	for _, p := range plan.Fleet.Spec.Pools {
		info := scale.PoolInfo{GPU: p.GPU()}
		if p.GPU() {
			info.Resource, _ = r.IntendedResource(p)
		}
		out[p.Name] = info
	}
	return out
}

// goMemLimit is the form the Go runtime takes for GOMEMLIMIT.
var goMemLimit = regexp.MustCompile(`^([0-9]+(B|KiB|MiB|GiB|TiB)?|off)$`)

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
func scaleAttached(ctx context.Context, name string, plan *plan.Plan, w *scale.Workload, e *cluster.Existing, installCandidate bool) (*scale.Result, error) {
	logf("scale run %s: fleet %s (%d nodes) joining %s, workload %s", name, plan.Fleet.Metadata.Name, plan.Fleet.TotalNodes(), e.Kubeconfig, w.Metadata.Name)
	setPhase("scale: fleet %s (%d nodes) joining %s, workload %s", plan.Fleet.Metadata.Name, plan.Fleet.TotalNodes(), e.Kubeconfig, w.Metadata.Name)
	harness.SetRunID(name)
	var snapshot scale.APISnapshot
	up := scaleUp
	r, err := harness.AttachTo(ctx, plan, e, harness.AttachOptions{InstallCandidate: installCandidate, SimulatePools: true, Up: up})
	if r != nil && r.Cluster != nil {
		defer func() {
			defer r.Stop()
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			n, err := harness.RemoveOwned(dctx, r.Cluster.REST, name, 4*time.Minute)
			if err != nil {
				logf("removing what scale run %s made in %s: %v (retry with 'gpupool down --kubeconfig %s')", name, r.Cluster.Name, err, e.Kubeconfig)
				return
			}
			logf("removed the %d objects scale run %s made in %s", n, name, r.Cluster.Name)
		}()
	}
	if err != nil {
		return nil, err
	}
	// The apiserver's counters before the workload (bring-up is in the
	// joined fleet's figures, not the API totals, on a shared cluster).
	if snapshot, err = scale.Snapshot(ctx, r.Client); err != nil {
		return nil, err
	}
	runner, err := scale.NewRunner(ctx, r.Client, plan.Fleet, w, r, name, scale.Options{Log: logf,
		Labels: map[string]string{harness.LabelRun: name}, NodeSelector: map[string]string{harness.LabelRun: name}})
	if err != nil {
		return nil, err
	}
	res, err := runner.Run(ctx, r.FleetStats, snapshot)
	if res != nil {
		res.Candidate = plan.Candidate.Name
	}
	return res, err
}

// scaleOne brings up a tuned cluster for one fleet, runs the workload and
// removes the cluster, whatever happens.
func scaleOne(ctx context.Context, name string, plan *plan.Plan, w *scale.Workload, tuning cluster.Tuning, profileDir string) (*scale.Result, error) {
	logf("scale run %s: fleet %s (%d nodes), workload %s", name, plan.Fleet.Metadata.Name, plan.Fleet.TotalNodes(), w.Metadata.Name)
	setPhase("scale: fleet %s (%d nodes), workload %s", plan.Fleet.Metadata.Name, plan.Fleet.TotalNodes(), w.Metadata.Name)
	provider, err := harness.TunedProvider(name, tuning)
	if err != nil {
		return nil, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := provider.Down(dctx); err != nil {
			logf("tearing down %s: %v", name, err)
		} else {
			logf("cluster %s removed", name)
		}
	}()
	var snapshot scale.APISnapshot
	up := scaleUp
	up.BeforeProvision = func(r *harness.Run) error {
		s, err := scale.Snapshot(ctx, r.Client)
		snapshot = s
		return err
	}
	r, err := harness.UpWith(ctx, plan, provider, up)
	if err != nil {
		return nil, err
	}
	defer r.Stop()
	runner, err := scale.NewRunner(ctx, r.Client, plan.Fleet, w, r, name, scale.Options{ClusterDir: provider.Dir(), ProfileDir: profileDir, Log: logf})
	if err != nil {
		return nil, err
	}
	res, err := runner.Run(ctx, r.FleetStats, snapshot)
	if res != nil {
		res.Candidate = plan.Candidate.Name
	}
	return res, err
}

func printFigures(figs []scale.Figure) {
	setPhase("")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
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

// writeScaleReport writes scale.json and scale.html (tables and plots in
// one file) and returns the figures.
func writeScaleReport(dir string, runs []scaleRun) []scale.Figure {
	var figs []scale.Figure
	var throughput []reports.Series
	var groups []string
	lat := map[string]*reports.Series{}
	latOrder := []string{}
	for _, r := range runs {
		if r.Result == nil {
			continue
		}
		figs = append(figs, scale.Figures(r.Label, r.Result)...)
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
	if err := os.WriteFile(filepath.Join(dir, "scale.json"), b, 0o644); err != nil {
		logf("writing scale.json: %v", err)
	}
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
			fmt.Fprintf(&contract, "<tr><td>%s</td><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td></tr>", html.EscapeString(r.Label), ph.Name, ph.Contract.Pods, ph.Contract.Scheduled, ph.Contract.Violations, html.EscapeString(fmt.Sprint(ph.Contract.Pending)))
		}
	}
	contract.WriteString("</table>")
	page := reports.HTMLPage("gpupool scale benchmark",
		table.String(),
		"<h2>SchedulingThroughput over time</h2>"+reports.LineChart("pods bound per second (burst)", "seconds since the first create", "pods/s", throughput),
		"<h2>Create→scheduled latency</h2>"+reports.BarChart("create→scheduled percentiles per fleet", "seconds", groups, latSeries),
		contract.String())
	if err := os.WriteFile(filepath.Join(dir, "scale.html"), []byte(page), 0o644); err != nil {
		logf("writing scale.html: %v", err)
	}
	return figs
}
