// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/dirs"
	"github.com/gpupool/gpupool/e2e/explore"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/mutants"
	"github.com/gpupool/gpupool/e2e/plan"
	"github.com/gpupool/gpupool/e2e/runner"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/suites"
)

// builtinBroken are the built-in broken candidates, relative to the
// manifests directory.
const builtinBroken = "candidates/broken-*"

// mutantsCommand proves every check can fail: it runs the suites on each
// broken candidate and requires exactly the checks the candidate's
// spec.breaks lists to fail, and all others to pass.
func mutantsCommand() *cobra.Command {
	c := &cobra.Command{Use: "mutants", Short: "run every broken candidate; pass only if each fails exactly the checks it lists", Args: cobra.NoArgs}
	fs := c.Flags()
	pattern := fs.String("candidates", "", "globs of broken candidate directories, comma-separated (default: the built-in "+builtinBroken+"; a relative glob that matches nothing in the working directory names built-in ones)")
	var provider string
	registerProvider(fs, &provider)
	suitesPattern := fs.String("suites", "./suites/...", "suite packages to run")
	outFlag := fs.String("out", "", "report directory (default mutants-<id> in reports/out of a gpupool checkout, else in ./gpupool-reports)")
	parallel := fs.Int("parallel", 2, "how many broken candidates run at once, each on its own cluster")
	var ex exploreFlags
	ex.register(fs)
	var suiteParallelism int
	registerSuiteParallelism(fs, &suiteParallelism)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		if _, err := ex.settle(); err != nil {
			return err
		}
		// A budget the user gave applies to every rule of every mutant.
		userBudget := ex.Budget != ""
		listed, unlisted := mutants.ListedBudget, mutants.UnlistedBudget
		if userBudget {
			listed, unlisted = ex.Budget, ex.Budget
		}
		candDirs, err := userPaths(*pattern, builtinBroken)
		if err != nil {
			return fmt.Errorf("--candidates: %w", err)
		}
		id := harness.NewRunName()
		out := *outFlag
		if out == "" {
			out = filepath.Join(dirs.ReportsDir(), "mutants-"+strings.TrimPrefix(id, "gpupool-"))
		}

		// Validate every mutant before running any: a typo in spec.breaks is
		// bad input, not a surviving mutant.
		plans := make([]*plan.Plan, len(candDirs))
		byName := map[string]string{}
		for i, dir := range candDirs {
			pl, err := plan.Prepare("", dir)
			if err != nil {
				return err
			}
			// Each mutant's reports go to a directory named after it.
			if other, ok := byName[pl.Candidate.Name]; ok {
				return fmt.Errorf("--candidates: %s and %s are both candidate %q: each broken candidate runs once", other, dir, pl.Candidate.Name)
			}
			byName[pl.Candidate.Name] = dir
			if len(pl.Candidate.Meta.Spec.Breaks) == 0 {
				return fmt.Errorf("candidate %s: spec.breaks is empty: a broken candidate must name the checks it breaks", dir)
			}
			for _, c := range pl.Candidate.Meta.Spec.Breaks {
				if _, ok := checks.Lookup(c); !ok {
					return fmt.Errorf("candidate %s: spec.breaks names unknown check %q (see 'gpupool checks')", dir, c)
				}
			}
			plans[i] = pl
		}
		suites, err := suites.Select(*suitesPattern)
		if err != nil {
			return err
		}

		// Mutants run side by side, each on its own cluster: most of a run
		// is waiting on the cluster, and the clusters are small.
		verdicts := make([]mutants.Verdict, len(plans))
		sem := make(chan struct{}, max(1, *parallel))
		var wg sync.WaitGroup
		var errMu sync.Mutex
		var firstErr error
		for i, plan := range plans {
			// Taken here, in order, so mutants start as listed.
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if ctx.Err() != nil {
					return
				}
				mex := ex
				mex.Budget = unlisted
				if !userBudget {
					mex.Budgets = mutants.ListedBudgets(plan.Candidate.Meta.Spec.Breaks)
				}
				v, err := runMutant(ctx, plan, provider, suites, filepath.Join(out, plan.Candidate.Name), mex, suiteParallelism, *parallel > 1)
				if err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
					return
				}
				verdicts[i] = v
				logf("mutant %d/%d %s: %s %s", i+1, len(plans), v.Name, v.Result, v.Detail)
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		killed, killedFixed, notRun := 0, 0, 0
		for _, v := range verdicts {
			switch {
			case v.Result == mutants.NotRun:
				notRun++
			case v.Result == mutants.Killed:
				killed++
			}
			if v.FixedResult == mutants.Killed {
				killedFixed++
			}
		}

		setPhase("")
		fmt.Println()
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "BROKEN CANDIDATE\tVERDICT\tWITHOUT EXPLORATION\tDETAIL")
		for _, v := range verdicts {
			fixed := v.FixedResult
			if fixed == "" {
				fixed = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Name, v.Result, fixed, v.Detail)
		}
		tw.Flush()
		total := len(verdicts) - notRun
		if total == 0 {
			return fmt.Errorf("none of the candidates breaks a check the %s provider makes", harness.ProviderName(provider))
		}
		fmt.Printf("\nmutation score (%s): %d/%d broken candidates killed for the right reason (%.0f%%)\n"+
			"without exploration (the fixed-shape checks alone): %d/%d (%.0f%%)\nexploration seed %d (replay with --explore-seed %d); budget %s for a rule the mutant lists, %s for the others\nreports: %s\n",
			harness.ProviderName(provider), killed, total, 100*float64(killed)/float64(total),
			killedFixed, total, 100*float64(killedFixed)/float64(total), ex.Seed, ex.Seed, budgetText(listed), budgetText(unlisted), out)
		writeMutantsSummary(out, killed, total)
		// Last, so a CI log cut to its tail still names them.
		for _, v := range verdicts {
			if v.Result != mutants.Killed && v.Result != mutants.NotRun {
				fmt.Printf("not killed: %s: %s %s\n", v.Name, v.Result, v.Detail)
			}
		}
		if killed != total {
			return exitError{1}
		}
		return nil
	}
	return c
}

// budgetText shows an --explore-budget value as the run reads it.
func budgetText(s string) string {
	b, err := explore.ParseBudget(s)
	if err != nil {
		return s
	}
	if b.ShrinkTime == 0 {
		return fmt.Sprintf("%d shapes within %s, none shrunk", b.Shapes, b.Time)
	}
	return fmt.Sprintf("%d shapes within %s", b.Shapes, b.Time)
}

func writeMutantsSummary(out string, killed, total int) {
	_ = os.MkdirAll(out, 0o755)
	_ = os.WriteFile(filepath.Join(out, "score.txt"), []byte(fmt.Sprintf("%d/%d\n", killed, total)), 0o644)
}

// runMutant runs the suites on one broken candidate and judges the result.
func runMutant(ctx context.Context, plan *plan.Plan, provider string, suites []*suite.Suite, out string, ex exploreFlags, suiteParallelism int, quiet bool) (mutants.Verdict, error) {
	want := mutants.Want(plan.Candidate.Meta.Spec.Breaks, provider)
	if len(want) == 0 {
		return mutants.Verdict{Name: plan.Candidate.Name, Result: mutants.NotRun, Detail: "it breaks only checks another provider makes"}, nil
	}
	// Each mutant says its own phase: side by side, one status would
	// name whichever spoke last.
	name := plan.Candidate.Name
	defer jobDone(name)
	o := runner.Output{Log: output.Log, Phase: func(format string, args ...any) { jobPhase(name, format, args...) }}
	s, err := runner.Execute(ctx, runner.Spec{ID: harness.NewRunName(), Plan: plan, Suites: suites, Out: out, Provider: provider,
		Explore: runner.Exploration(ex), SuiteParallelism: suiteParallelism, Quiet: quiet, Output: o})
	if err != nil {
		return mutants.Verdict{Name: plan.Candidate.Name}, err
	}
	return mutants.JudgeRun(plan.Candidate.Name, s, want), nil
}
