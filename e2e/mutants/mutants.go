// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package mutants judges broken candidates: a run of one must fail
// exactly the checks its candidate.yaml lists in spec.breaks, and pass the
// rest. `gpupool mutants` runs them; this package holds the verdict.
package mutants

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/reports"
)

// The exploration budgets per rule for mutants, unless the user gives one.
// A mutant's verdict needs a violation, not the smallest one, so none is
// shrunk (shrinking took 20 s of a killed mutant's run). A rule the
// mutant's spec.breaks lists must find its violation and gets the default
// shapes; every other rule only has to pass, and gets a third of them and
// half the time: on 2 cores with two mutants side by side every rule used
// to run into its 20 s, a quarter of each mutant's run.
const (
	ListedBudget   = "60/20s/0s"
	UnlistedBudget = "20/10s/0s"
)

// Verdicts.
const (
	Killed      = "KILLED"
	Survived    = "SURVIVED"
	WrongReason = "WRONG REASON"
	Errored     = "ERROR"
	NotRun      = "NOT RUN"
)

// Verdict is a broken candidate's judgement.
type Verdict struct {
	Name, Result, Detail string
	// FixedResult is the verdict by the fixed-shape checks alone: what
	// the score would be without exploration.
	FixedResult string
}

// Want is the checks a broken candidate must fail on provider: those its
// spec.breaks lists that the provider makes (none: it cannot be judged
// there).
func Want(breaks []string, provider string) map[string]bool {
	want := map[string]bool{}
	for _, c := range breaks {
		if chk, _ := checks.Lookup(c); harness.RunsOn(chk, provider) {
			want[c] = true
		}
	}
	return want
}

// ListedBudgets gives each exploration rule spec.breaks lists the listed
// budget.
func ListedBudgets(breaks []string) map[string]string {
	var out map[string]string
	for _, id := range breaks {
		if IsExploration(id) {
			if out == nil {
				out = map[string]string{}
			}
			out[id] = ListedBudget
		}
	}
	return out
}

// JudgeRun judges one run of a broken candidate, with and without the
// exploration checks.
func JudgeRun(name string, s *reports.Summary, want map[string]bool) Verdict {
	v := Verdict{Name: name}
	v.Result, v.Detail = Judge(s, want, func(string) bool { return true })
	v.FixedResult, _ = Judge(s, want, func(id string) bool { return !IsExploration(id) })
	return v
}

// Judge compares the checks a mutant's run failed with the ones it
// must fail, both narrowed to the checks keep admits.
func Judge(s *reports.Summary, want map[string]bool, keep func(id string) bool) (result, detail string) {
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
		return Errored, strings.Join(s.Errors, "; ")
	case len(failed) == 0:
		return Survived, "no check failed"
	case len(missing)+len(extra) > 0:
		if len(missing) > 0 {
			detail += "expected to fail but passed: " + strings.Join(missing, ", ") + ". "
		}
		if len(extra) > 0 {
			detail += "failed but not listed in spec.breaks: " + strings.Join(extra, ", ") + "."
			// What each said: a wrong reason seen once in CI is only
			// worth something with its cause.
			for _, c := range s.Checks {
				if slices.Contains(extra, c.ID) && c.Message != "" {
					detail += fmt.Sprintf(" %s said: %s.", c.ID, clip(c.Message, 600))
				}
			}
		}
		return WrongReason, detail
	}
	return Killed, fmt.Sprintf("%d checks failed, as listed", len(failed))
}

// IsExploration tells the checks of the exploration suite from the
// fixed-shape ones.
func IsExploration(id string) bool {
	c, ok := checks.Lookup(id)
	return ok && c.Area == checks.AreaExploration
}

// clip shortens s to at most n bytes, saying so.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + " [...]"
}
