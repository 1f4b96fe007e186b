// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/dirs"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/input"
	"github.com/gpupool/gpupool/e2e/plan"
	"github.com/gpupool/gpupool/e2e/runner"
	"github.com/gpupool/gpupool/e2e/scale"
)

// Built-in defaults, relative to the manifests directory.
const (
	defaultScaleFleet = "fleets/scale-1k.yaml"
	defaultWorkload   = "workloads/gpu-burst.yaml"
)

func scaleCommand() *cobra.Command {
	c := &cobra.Command{Use: "scale", Short: "put fleets of thousands of GPU nodes under scheduler pressure; measure, check the contract in bulk", Args: cobra.NoArgs}
	fs := c.Flags()
	fleets := fs.String("fleets", "", "comma-separated fleet files, run one after another, each on a fresh cluster (default: the built-in "+defaultScaleFleet+"; "+builtinNote+")")
	pods := fs.String("pods", "", "comma-separated sizes of the scheduler bursts, one per fleet (default: the workload's; fill phases size themselves)")
	workloadPath := fs.String("workload", "", "workload file, gpupool.dev/v1alpha1 Workload (default: the built-in "+defaultWorkload+")")
	candidateDir := fs.String("candidate", "", "candidate directory (default: the built-in "+plan.DefaultCandidate+")")
	out := fs.String("out", "", "report directory (default scale-<run-id> in reports/out of a gpupool checkout, else in ./gpupool-reports)")
	memLimit := fs.String("apiserver-memory-limit", cluster.ScaleTuning().APIServerMemoryLimit, "kube-apiserver's GOMEMLIMIT: lower holds the control plane's memory down at the cost of apiserver CPU (docs/scale.md)")
	var target targetFlags
	fs.StringVar(&target.kubeconfig, "kubeconfig", "", "run on this existing cluster (a real, multi-node control plane) instead of an embedded one: each fleet joins it as simulated nodes, with its GPU pool config as configured unless --candidate is given; all removed after")
	fs.StringVar(&target.context, "context", "", "the kubeconfig context to use (default its current one)")
	target.registerStackImages(fs)
	inprocess := fs.String("inprocess", "", "scheduler_perf's data items from an in-process run on this machine today (hack/bench-inprocess.sh writes them): each burst's throughput is set beside it, as a ratio")
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
		// Read first: a run of minutes must not end in a bad file.
		var ip *scale.InProcess
		if *inprocess != "" {
			data, err := input.ReadFile(*inprocess, input.MaxFileBytes)
			if err != nil {
				return fmt.Errorf("--inprocess: %w", err)
			}
			if ip, err = scale.ParseInProcess(data, *inprocess); err != nil {
				return fmt.Errorf("--inprocess: %w", err)
			}
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
		if existing != nil {
			defer existing.Release()
		}
		stack, err := target.stackImages()
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
			if err := scale.CheckPools(w, runner.PoolInfos(pl)); err != nil {
				return err
			}
			if i := slices.IndexFunc(w.Spec.Phases, scale.Phase.Autoscale); i >= 0 && existing != nil {
				// The phase measures the Karpenter gpupool runs beside a
				// cluster it makes; a scale run starts none beside
				// someone else's (harness.AttachOptions.Autoscale).
				return fmt.Errorf("workload %s: spec.phases[%d] (%s): an autoscale phase needs the autoscaler gpupool runs beside a cluster it makes, and --kubeconfig names one it did not", w.File, i, w.Spec.Phases[i].Name)
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
			snap, err := runner.SnapshotCluster(ctx, existing, filepath.Join(dir, "cluster-config"), logf)
			if err != nil {
				return err
			}
			for i := range jobs {
				if jobs[i].plan, err = plan.Prepare(jobs[i].plan.Fleet.File, snap); err != nil {
					return err
				}
			}
		}
		var runs []runner.ScaleRun
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
			res, err := runner.Scale(ctx, runner.ScaleSpec{Name: name, Plan: j.plan, Workload: j.w,
				Existing: existing, InstallCandidate: candidate != "", StackImages: stack, Tuning: tuning, ProfileDir: profileDir, ReportDir: dir, Output: output})
			run := runner.ScaleRun{Label: label, Fleet: j.plan.Fleet.File, Result: res}
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
		figures, err := runner.WriteScaleReport(dir, runs, ip)
		if err != nil {
			logf("writing the scale report: %v", err)
		}
		setPhase("")
		runner.PrintScaleFigures(os.Stdout, figures)
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

// goMemLimit is the form the Go runtime takes for GOMEMLIMIT.
var goMemLimit = regexp.MustCompile(`^([0-9]+(B|KiB|MiB|GiB|TiB)?|off)$`)
