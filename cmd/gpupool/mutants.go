package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/dirs"
	"github.com/gpupool/gpupool/e2e/explore"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/plan"
	"github.com/gpupool/gpupool/e2e/runner"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/suites"
)

// builtinBroken are the built-in broken candidates, relative to the
// manifests directory.
const builtinBroken = "candidates/broken-*"

// The exploration budgets per rule for mutants, unless --explore-budget
// is given. A mutant's verdict needs a violation, not the smallest one,
// so none is shrunk (shrinking took 20 s of a killed mutant's run).
// Where spec.breaks names no exploration check, exploration only has to
// pass, and a third of the default shapes takes a sixth off each such
// mutant's run (46 s to 38.6 s here).
const (
	listedBudget   = "60/20s/0s"
	unlistedBudget = "20/20s/0s"
)

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
		// A budget the user gave applies to every mutant.
		unlisted := unlistedBudget
		if ex.Budget != "" {
			unlisted = ex.Budget
		} else {
			ex.Budget = listedBudget
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
		verdicts := make([]verdict, len(plans))
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
				if !slices.ContainsFunc(plan.Candidate.Meta.Spec.Breaks, isExploration) {
					mex.Budget = unlisted
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
				logf("mutant %d/%d %s: %s %s", i+1, len(plans), v.name, v.result, v.detail)
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
			case v.result == "NOT RUN":
				notRun++
			case v.result == "KILLED":
				killed++
			}
			if v.fixedResult == "KILLED" {
				killedFixed++
			}
		}

		setPhase("")
		fmt.Println()
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "BROKEN CANDIDATE\tVERDICT\tWITHOUT EXPLORATION\tDETAIL")
		for _, v := range verdicts {
			fixed := v.fixedResult
			if fixed == "" {
				fixed = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.name, v.result, fixed, v.detail)
		}
		tw.Flush()
		total := len(verdicts) - notRun
		if total == 0 {
			return fmt.Errorf("none of the candidates breaks a check the %s provider makes", harness.ProviderName(provider))
		}
		fmt.Printf("\nmutation score (%s): %d/%d broken candidates killed for the right reason (%.0f%%)\n"+
			"without exploration (the fixed-shape checks alone): %d/%d (%.0f%%)\nexploration seed %d (replay with --explore-seed %d); budget per rule %s, %s where a mutant lists no exploration check\nreports: %s\n",
			harness.ProviderName(provider), killed, total, 100*float64(killed)/float64(total),
			killedFixed, total, 100*float64(killedFixed)/float64(total), ex.Seed, ex.Seed, budgetText(ex.Budget), budgetText(unlisted), out)
		writeMutantsSummary(out, killed, total)
		// Last, so a CI log cut to its tail still names them.
		for _, v := range verdicts {
			if v.result != "KILLED" && v.result != "NOT RUN" {
				fmt.Printf("not killed: %s: %s %s\n", v.name, v.result, v.detail)
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

// judgeMutant compares the checks a mutant's run failed with the ones it
// must fail, both narrowed to the checks keep admits.
func judgeMutant(s *reports.Summary, want map[string]bool, keep func(id string) bool) (result, detail string) {
	// Only checks of the suites run here are expected (--suites).
	ran := map[string]bool{}
	for _, c := range s.Checks {
		ran[c.ID] = true
	}
	wanted := map[string]bool{}
	for c := range want {
		if ran[c] && keep(c) {
			wanted[c] = true
		}
	}
	var missing, extra []string
	failed := map[string]bool{}
	for _, c := range s.Checks {
		if c.Result == "fail" && keep(c.ID) {
			failed[c.ID] = true
			if !wanted[c.ID] {
				extra = append(extra, c.ID)
			}
		}
	}
	for c := range wanted {
		if !failed[c] {
			missing = append(missing, c)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	switch {
	case len(s.Errors) > 0:
		return "ERROR", strings.Join(s.Errors, "; ")
	case len(failed) == 0:
		return "SURVIVED", "no check failed"
	case len(missing)+len(extra) > 0:
		if len(missing) > 0 {
			detail += "expected to fail but passed: " + strings.Join(missing, ", ") + ". "
		}
		if len(extra) > 0 {
			detail += "failed but not listed in spec.breaks: " + strings.Join(extra, ", ") + "."
		}
		return "WRONG REASON", detail
	}
	return "KILLED", fmt.Sprintf("%d checks failed, as listed", len(failed))
}

// isExploration tells the checks of the exploration suite from the
// fixed-shape ones.
func isExploration(id string) bool {
	c, ok := checks.Lookup(id)
	return ok && c.Area == checks.AreaExploration
}

type verdict struct {
	name, result, detail string
	// fixedResult is the verdict by the fixed-shape checks alone.
	fixedResult string
}

// runMutant runs the suites on one broken candidate and judges the result.
func runMutant(ctx context.Context, plan *plan.Plan, provider string, suites []*suite.Suite, out string, ex exploreFlags, suiteParallelism int, quiet bool) (verdict, error) {
	v := verdict{name: plan.Candidate.Name}
	want := map[string]bool{}
	for _, c := range plan.Candidate.Meta.Spec.Breaks {
		// A check another provider makes cannot fail here.
		if chk, _ := checks.Lookup(c); harness.RunsOn(chk, provider) {
			want[c] = true
		}
	}
	if len(want) == 0 {
		v.result, v.detail = "NOT RUN", "it breaks only checks another provider makes"
		return v, nil
	}
	s, err := runner.Execute(ctx, runner.Spec{ID: harness.NewRunName(), Plan: plan, Suites: suites, Out: out, Provider: provider,
		Explore: runner.Exploration(ex), SuiteParallelism: suiteParallelism, Quiet: quiet, Output: output})
	if err != nil {
		return v, err
	}
	v.result, v.detail = judgeMutant(s, want, func(string) bool { return true })
	// The same run judged by the fixed-shape checks alone: what the
	// score would be without exploration.
	v.fixedResult, _ = judgeMutant(s, want, func(id string) bool { return !isExploration(id) })
	return v, nil
}
