package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/harness"
)

// mutantsCmd proves every check can fail: it runs the suites on each
// broken candidate and requires exactly the checks the candidate's
// spec.breaks lists to fail, and all others to pass.
func mutantsCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gpupool mutants", flag.ContinueOnError)
	pattern := fs.String("candidates", "manifests/candidates/broken-*", "globs of broken candidate directories, comma-separated")
	var provider string
	registerProvider(fs, &provider)
	suitesPattern := fs.String("suites", "./suites/...", "suite packages to run")
	outFlag := fs.String("out", "", "report directory (default reports/out/mutants-<id>)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := harness.RepoRoot()
	if err != nil {
		return err
	}
	var dirs []string
	for _, glob := range strings.Split(*pattern, ",") {
		if !filepath.IsAbs(glob) {
			glob = filepath.Join(root, glob)
		}
		matched, _ := filepath.Glob(glob)
		dirs = append(dirs, matched...)
	}
	if len(dirs) == 0 {
		return fmt.Errorf("no broken candidates match %s", *pattern)
	}
	id := harness.NewRunName()
	out := *outFlag
	if out == "" {
		out = filepath.Join(root, "reports", "out", "mutants-"+strings.TrimPrefix(id, "gpupool-"))
	}

	// Validate every mutant before running any: a typo in spec.breaks is
	// bad input, not a surviving mutant.
	plans := make([]*harness.Plan, len(dirs))
	for i, dir := range dirs {
		plan, err := harness.Prepare("", dir)
		if err != nil {
			return err
		}
		if len(plan.Candidate.Meta.Spec.Breaks) == 0 {
			return fmt.Errorf("candidate %s: spec.breaks is empty: a broken candidate must name the checks it breaks", dir)
		}
		for _, c := range plan.Candidate.Meta.Spec.Breaks {
			if _, ok := checks.Lookup(c); !ok {
				return fmt.Errorf("candidate %s: spec.breaks names unknown check %q (see 'gpupool checks')", dir, c)
			}
		}
		plans[i] = plan
	}
	work, err := os.MkdirTemp("", "gpupool-mutants-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	suites, err := buildSuites(ctx, root, *suitesPattern, work)
	if err != nil {
		return err
	}

	type verdict struct {
		name, result, detail string
	}
	var verdicts []verdict
	killed, notRun := 0, 0
	for i, plan := range plans {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		v := verdict{name: plan.Candidate.Name}
		want := map[string]bool{}
		for _, c := range plan.Candidate.Meta.Spec.Breaks {
			// A check another provider makes cannot fail here.
			if chk, _ := checks.Lookup(c); runsOn(chk, provider) {
				want[c] = true
			}
		}
		if len(want) == 0 {
			v.result, v.detail = "NOT RUN", "it breaks only checks another provider makes"
			notRun++
			verdicts = append(verdicts, v)
			logf("mutant %d/%d %s: %s %s", i+1, len(plans), v.name, v.result, v.detail)
			continue
		}
		s, err := execute(ctx, runSpec{id: harness.NewRunName(), plan: plan, suites: suites, out: filepath.Join(out, plan.Candidate.Name), provider: provider})
		if err != nil {
			return err
		}
		// Only checks of the suites run here are expected (--suites).
		ran := map[string]bool{}
		for _, c := range s.Checks {
			ran[c.ID] = true
		}
		for c := range want {
			if !ran[c] {
				delete(want, c)
			}
		}
		var missing, extra []string
		failed := map[string]bool{}
		for _, c := range s.Checks {
			if c.Result == "fail" {
				failed[c.ID] = true
				if !want[c.ID] {
					extra = append(extra, c.ID)
				}
			}
		}
		for c := range want {
			if !failed[c] {
				missing = append(missing, c)
			}
		}
		sort.Strings(missing)
		sort.Strings(extra)
		switch {
		case len(s.Errors) > 0:
			v.result, v.detail = "ERROR", strings.Join(s.Errors, "; ")
		case len(failed) == 0:
			v.result, v.detail = "SURVIVED", "no check failed"
		case len(missing)+len(extra) > 0:
			v.result = "WRONG REASON"
			if len(missing) > 0 {
				v.detail += "expected to fail but passed: " + strings.Join(missing, ", ") + ". "
			}
			if len(extra) > 0 {
				v.detail += "failed but not listed in spec.breaks: " + strings.Join(extra, ", ") + "."
			}
		default:
			v.result, v.detail = "KILLED", fmt.Sprintf("%d checks failed, as listed", len(failed))
			killed++
		}
		verdicts = append(verdicts, v)
		logf("mutant %d/%d %s: %s %s", i+1, len(plans), v.name, v.result, v.detail)
	}

	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BROKEN CANDIDATE\tVERDICT\tDETAIL")
	for _, v := range verdicts {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", v.name, v.result, v.detail)
	}
	tw.Flush()
	total := len(verdicts) - notRun
	if total == 0 {
		return fmt.Errorf("none of the candidates breaks a check the %s provider makes", harness.ProviderName(provider))
	}
	fmt.Printf("\nmutation score (%s): %d/%d broken candidates killed for the right reason (%.0f%%)\nreports: %s\n",
		harness.ProviderName(provider), killed, total, 100*float64(killed)/float64(total), out)
	writeMutantsSummary(out, killed, total)
	if killed != total {
		return exitError{1}
	}
	return nil
}

func writeMutantsSummary(out string, killed, total int) {
	_ = os.MkdirAll(out, 0o755)
	_ = os.WriteFile(filepath.Join(out, "score.txt"), []byte(fmt.Sprintf("%d/%d\n", killed, total)), 0o644)
}

// runsOn reports whether a check is made on the named provider.
func runsOn(c checks.Check, provider string) bool {
	return c.Provider == "" || c.Provider == harness.ProviderName(provider)
}
