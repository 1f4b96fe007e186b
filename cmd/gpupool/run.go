// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/dirs"
	"github.com/gpupool/gpupool/e2e/explore"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/plan"
	"github.com/gpupool/gpupool/e2e/runner"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/suites"
)

type runFlags struct {
	candidate, fleet, out, suites, provider string
	keep, serverSide                        bool
	suiteParallelism                        int
	explore                                 exploreFlags
	target                                  targetFlags
}

// targetFlags point a run at a cluster gpupool did not make.
type targetFlags struct {
	kubeconfig, context, disruptiveNodes    string
	simulate                                bool
	kwokImage, fakegpuImage, karpenterImage string
}

func (t *targetFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&t.kubeconfig, "kubeconfig", "", "check this existing cluster instead of bringing one up: as configured (nothing installed) unless --candidate is given, then the candidate is installed first and removed after; its nodes must carry gpupool.dev/pool=<pool>")
	fs.StringVar(&t.context, "context", "", "the kubeconfig context to use (default its current one)")
	fs.BoolVar(&t.simulate, "simulate-pools", false, "with --kubeconfig: join the fleet to the cluster as simulated nodes (a kwok and a fakegpu controller run here for them alone, or in the cluster with --kwok-image and --fakegpu-image) instead of checking the nodes it has")
	t.registerStackImages(fs)
	fs.StringVar(&t.disruptiveNodes, "disruptive-nodes", "", "with --kubeconfig: the nodes disruptive checks (device plugin down, Xid, MIG relabel) may change, comma-separated; without it they are skipped")
}

// registerSuiteParallelism adds the flag that caps the suites running side
// by side (runner.Spec.SuiteParallelism).
func registerSuiteParallelism(fs *pflag.FlagSet, p *int) {
	fs.IntVar(p, "suite-parallelism", 0, "at most this many suites side by side, within the phases that allow it (default 0: all a phase holds; 1: one suite at a time, the same verdicts)")
}

// exploreFlags set how the exploration suite draws its pods.
type exploreFlags runner.Exploration

func (e *exploreFlags) register(fs *pflag.FlagSet) {
	seed, _ := strconv.ParseUint(os.Getenv("GPUPOOL_EXPLORE_SEED"), 10, 64)
	fs.Uint64Var(&e.Seed, "explore-seed", seed, "replay an exploration: the seed a run printed (default: a new one; env GPUPOOL_EXPLORE_SEED)")
	fs.StringVar(&e.Budget, "explore-budget", os.Getenv("GPUPOOL_EXPLORE_BUDGET"), "exploration budget per rule: SHAPES, SHAPES/TIME or SHAPES/TIME/SHRINK, 0 turns it off (default 60/20s/20s; env GPUPOOL_EXPLORE_BUDGET)")
}

// settle validates the budget and draws a seed when none was given, so the
// run can print it before anything starts.
func (e *exploreFlags) settle() (explore.Budget, error) {
	b, err := explore.ParseBudget(e.Budget)
	if err != nil {
		return b, err
	}
	if e.Seed == 0 {
		e.Seed = explore.NewSeed()
	}
	return b, nil
}

func (f *runFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.candidate, "candidate", os.Getenv("CANDIDATE"), "candidate directory (default: the built-in "+plan.DefaultCandidate+"; env CANDIDATE)")
	fs.StringVar(&f.fleet, "fleet", os.Getenv("FLEET"), "fleet file (default: the one candidate.yaml names, else the built-in "+plan.DefaultFleet+"; env FLEET)")
	registerProvider(fs, &f.provider)
	fs.BoolVar(&f.serverSide, "server-side", false, "install the candidate as 'kubectl apply --server-side' does, null fields kept (default: as 'kubectl apply' does, nulls pruned)")
}

func registerProvider(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "provider", os.Getenv("GPUPOOL_PROVIDER"), "cluster provider: "+strings.Join(harness.Providers, " or ")+" (default embedded; env GPUPOOL_PROVIDER)")
}

func runCommand() *cobra.Command {
	c := &cobra.Command{Use: "run", Short: "bring up a cluster, install the candidate, run the suites, report, tear down", Args: cobra.NoArgs}
	fs := c.Flags()
	var f runFlags
	f.register(fs)
	fs.StringVar(&f.out, "out", "", "report directory (default <run-id> in reports/out of a gpupool checkout, else in ./gpupool-reports)")
	fs.StringVar(&f.suites, "suites", "", "suites to run, comma-separated (default all: "+suiteNames()+")")
	fs.BoolVar(&f.keep, "keep-cluster", false, "leave the cluster running after the run (remove it with 'gpupool down')")
	registerSuiteParallelism(fs, &f.suiteParallelism)
	f.explore.register(fs)
	f.target.register(fs)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		s, _, out, err := runContract(ctx, f)
		setPhase("")
		if err != nil {
			return err
		}
		s.PrintTable(os.Stdout)
		fmt.Printf("reports: %s\n", out)
		switch {
		case ctx.Err() != nil:
			return exitError{130} // interrupted: the README's exit code for a signal
		case s.Result == "pass":
			return nil
		case s.Result == reports.ResultError:
			return exitError{2} // the cluster was lost: no verdict
		case len(s.Checks) == 0:
			return exitError{2} // setup failed: no suite ran
		}
		return exitError{1}
	}
	return c
}

// runContract validates the inputs, builds the suites, runs them on a
// cluster it brings up and removes, and writes the reports to the out
// directory it returns.
func runContract(ctx context.Context, f runFlags) (*reports.Summary, *plan.Plan, string, error) {
	budget, err := f.explore.settle()
	if err != nil {
		return nil, nil, "", err
	}
	runID := harness.NewRunName()
	out := f.out
	if out == "" {
		out = filepath.Join(dirs.ReportsDir(), runID)
	}
	existing, err := f.target.existing(f.provider)
	if err != nil {
		return nil, nil, "", err
	}
	if existing != nil {
		defer existing.Release()
	}
	stack, err := f.target.stackImages()
	if err != nil {
		return nil, nil, "", err
	}
	candidateDir := absOrEmpty(f.candidate)
	if existing != nil && candidateDir == "" {
		// As configured: the cluster's own config is the candidate.
		if candidateDir, err = runner.SnapshotCluster(ctx, existing, filepath.Join(out, "cluster-config"), logf); err != nil {
			return nil, nil, "", err
		}
	}
	// 1. Everything that can be checked without a cluster.
	pl, err := plan.Prepare(absOrEmpty(f.fleet), candidateDir)
	if err != nil {
		return nil, nil, "", err
	}
	pl.ServerSideApply = f.serverSide
	for _, w := range pl.Stack.Warnings() {
		logf("warning: candidate %s: %s", pl.Candidate.Dir, w)
	}
	// What a reviewer would point out: causes that would otherwise show
	// only as many checks failing.
	for _, n := range plan.Review(pl) {
		logf("review: candidate %s: %s", pl.Candidate.Dir, n)
	}
	// 2. Select the suites before starting anything, so a wrong name
	// costs no cluster.
	suites, err := suites.Select(f.suites)
	if err != nil {
		return nil, nil, "", err
	}
	if budget.Shapes > 0 {
		logf("exploration: seed %d, %d shapes per rule within %s (replay with --explore-seed %d)", f.explore.Seed, budget.Shapes, budget.Time, f.explore.Seed)
	}
	s, err := runner.Execute(ctx, runner.Spec{ID: runID, Plan: pl, Suites: suites, Out: out, Keep: f.keep, Provider: f.provider, Explore: runner.Exploration(f.explore),
		Existing: existing, InstallCandidate: f.candidate != "", SimulatePools: f.target.simulate, StackImages: stack, DisruptiveNodes: f.target.disruptiveNodes,
		SuiteParallelism: f.suiteParallelism, Output: output})
	return s, pl, out, err
}

func absOrEmpty(p string) string {
	if p == "" {
		return ""
	}
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

// output sends a run's progress to stderr and the status line.
var output = runner.Output{Log: logf, Phase: setPhase}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func suiteNames() string {
	var names []string
	for _, s := range suites.All {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

// registerStackImages adds the flags that run simulated pools' stack in
// the cluster.
func (t *targetFlags) registerStackImages(fs *pflag.FlagSet) {
	fs.StringVar(&t.kwokImage, "kwok-image", "", "with --simulate-pools and --fakegpu-image: run the simulated pools' kwok controller in the cluster from this image (gpupool/kwok, built by hack/build-kind-images.sh), pulled by the cluster's nodes")
	fs.StringVar(&t.fakegpuImage, "fakegpu-image", "", "with --simulate-pools and --kwok-image: run the simulated pools' fakegpu controller in the cluster from this image (gpupool/fakegpu-controller)")
	fs.StringVar(&t.karpenterImage, "karpenter-image", "", "with --kwok-image and --fakegpu-image: run the run's Karpenter in the cluster too, from this image (gpupool/karpenter-kwok), to scale the fleet's autoscaled pools")
}

// stackImages returns the images of a simulated stack that runs in the
// cluster, or nil when it runs in this process.
func (t targetFlags) stackImages() (*harness.StackImages, error) {
	if t.kwokImage == "" && t.fakegpuImage == "" {
		if t.karpenterImage != "" {
			return nil, errors.New("--karpenter-image runs Karpenter in the cluster with the simulated stack: it goes with --kwok-image and --fakegpu-image")
		}
		return nil, nil
	}
	if !t.simulate {
		return nil, errors.New("--kwok-image and --fakegpu-image run simulated pools' stack in the cluster --kubeconfig names: they go with --kubeconfig (and, for gpupool run, --simulate-pools)")
	}
	if t.kwokImage == "" || t.fakegpuImage == "" {
		return nil, errors.New("--kwok-image and --fakegpu-image go together: the simulated stack runs in the cluster whole or not at all")
	}
	return &harness.StackImages{Kwok: t.kwokImage, FakeGPU: t.fakegpuImage, Karpenter: t.karpenterImage}, nil
}

// existing returns the cluster --kubeconfig names, or nil.
func (t targetFlags) existing(provider string) (*cluster.Existing, error) {
	if t.kubeconfig == "" {
		if t.context != "" || t.disruptiveNodes != "" || t.simulate {
			return nil, errors.New("--context, --simulate-pools and --disruptive-nodes go with --kubeconfig")
		}
		return nil, nil
	}
	if provider != "" {
		return nil, fmt.Errorf("--kubeconfig checks an existing cluster; --provider %s brings one up: pass one or the other", provider)
	}
	if _, err := os.Stat(t.kubeconfig); err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	return &cluster.Existing{Kubeconfig: absOrEmpty(t.kubeconfig), Context: t.context}, nil
}
