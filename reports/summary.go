// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package reports

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// CheckInfo is what the report says about a check besides its outcome.
type CheckInfo struct {
	ID, Area, AreaTitle, Rule string
}

// Summary is summary.json: one record of a run.
type Summary struct {
	RunID      string            `json:"runId"`
	Result     string            `json:"result"` // pass, fail, error or interrupted
	Candidate  Ref               `json:"candidate"`
	Fleet      Ref               `json:"fleet"`
	Provider   string            `json:"provider"`
	Components map[string]string `json:"components"`
	StartedAt  time.Time         `json:"startedAt"`
	Duration   float64           `json:"durationSeconds"`
	Totals     Totals            `json:"totals"`
	Checks     []CheckResult     `json:"checks"`
	// Exploration says how the exploration suite drew its pods, and
	// where the counterexamples it found are.
	Exploration *Exploration `json:"exploration,omitempty"`
	// Errors are failures outside any check (setup, a suite that did not
	// build or start); a run with errors fails.
	Errors []string `json:"errors,omitempty"`
	// Interrupted says how the run was stopped ("" it was not).
	Interrupted string `json:"interrupted,omitempty"`
	// Lost says what the run lost that it could not judge without (the
	// cluster's control plane), and when ("" it lost nothing).
	Lost string `json:"lost,omitempty"`
}

// Exploration is a run's exploration settings and findings.
type Exploration struct {
	// Seed replays the run's shapes (gpupool run --explore-seed).
	Seed   uint64 `json:"seed"`
	Budget string `json:"budget"`
	// Budgets are single rules' budgets in place of Budget (by check id).
	Budgets map[string]string `json:"budgets,omitempty"`
	// Counterexamples are reproduction files, relative to the report
	// directory (kubectl apply -f on gpupool up shows each violation).
	Counterexamples []string `json:"counterexamples,omitempty"`
}

// Ref names an input of the run.
type Ref struct {
	Name string `json:"name"`
	Path string `json:"path"`
	// Fingerprint identifies the input's content: sha256 over its
	// manifests (candidate.Fingerprint), so a report names exactly what
	// was checked.
	Fingerprint string `json:"fingerprint,omitempty"`
}

// Totals counts check outcomes.
type Totals struct {
	Checks  int `json:"checks"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	// Interrupted checks were running, or not yet judged, when the run
	// was stopped: no verdict, neither passed nor failed.
	Interrupted int `json:"interrupted"`
	// Errored checks were running, or not yet judged, when the run lost
	// the cluster: no verdict either.
	Errored int `json:"errored"`
}

// ResultInterrupted is a check the run stopped before it ended: its
// outcome says nothing about the contract.
const ResultInterrupted = "interrupted"

// ResultError is a check the run could not judge: the cluster's control
// plane went away under it. Its outcome says nothing about the contract.
const ResultError = "error"

// Unjudged reports whether result is no verdict on the contract: the run
// was stopped or lost the cluster before the check ended.
func Unjudged(result string) bool { return result == ResultInterrupted || result == ResultError }

// CheckResult is one check's outcome.
type CheckResult struct {
	ID          string             `json:"id"`
	Area        string             `json:"area"`
	AreaTitle   string             `json:"areaTitle"`
	Rule        string             `json:"rule"`
	Suite       string             `json:"suite"`
	Result      string             `json:"result"`
	Duration    float64            `json:"durationSeconds"`
	Message     string             `json:"message,omitempty"`
	Assessments []AssessmentResult `json:"assessments"`
	// Ended is when the check ended (zero: never).
	Ended time.Time `json:"-"`
}

// AssessmentResult is one step of a check.
type AssessmentResult struct {
	Name     string  `json:"name"`
	Result   string  `json:"result"`
	Duration float64 `json:"durationSeconds"`
	Message  string  `json:"message,omitempty"`
	// Log is what the assessment reported while passing (for example
	// each Pending pod and the contract's reason for it).
	Log []string `json:"log,omitempty"`
}

// Checks extracts check results: every second-level test whose name is a
// known check id (e2e-framework runs each feature as t.Run(featureName)).
func Checks(r *Results, lookup func(id string) (CheckInfo, bool)) []CheckResult {
	var out []CheckResult
	for _, t := range r.Tests {
		parts := strings.Split(t.Name, "/")
		if len(parts) != 2 {
			continue
		}
		info, ok := lookup(parts[1])
		if !ok {
			continue
		}
		cr := CheckResult{
			ID: info.ID, Area: info.Area, AreaTitle: info.AreaTitle, Rule: info.Rule,
			Suite: shortPackage(t.Package), Result: orUnknown(t.Result), Duration: t.Elapsed.Seconds(), Ended: t.Ended,
		}
		var msgs []string
		if m := strings.Join(t.Output, "\n"); m != "" {
			msgs = append(msgs, m)
		}
		for _, a := range r.Children(t.Package, t.Name) {
			ar := AssessmentResult{Name: strings.ReplaceAll(a.Name[len(t.Name)+1:], "_", " "), Result: orUnknown(a.Result), Duration: a.Elapsed.Seconds()}
			if a.Result == "pass" {
				ar.Log = a.Output
			} else {
				ar.Message = strings.Join(a.Output, "\n")
				if ar.Message != "" {
					msgs = append(msgs, ar.Name+": "+ar.Message)
				}
			}
			cr.Assessments = append(cr.Assessments, ar)
		}
		if cr.Result != "pass" {
			cr.Message = strings.Join(msgs, "\n")
		}
		out = append(out, cr)
	}
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown" // the binary died mid-test
	}
	return s
}

func shortPackage(p string) string {
	if i := strings.Index(p, "/suites/"); i >= 0 {
		return p[i+len("/suites/"):]
	}
	return p
}

// MarkInterrupted records that the run was stopped at at (why says how):
// a check that had not ended by then, or that ended after it (its
// teardown ran because of the stop), is ResultInterrupted, not a failure;
// one that had passed, been skipped or failed before keeps its result.
func (s *Summary) MarkInterrupted(at time.Time, why string) {
	s.Interrupted = why
	s.markUnjudged(at, ResultInterrupted, "interrupted ("+why+") before the check ended: no verdict")
}

// MarkLost records that the run lost the cluster at at (why says what
// and how): as MarkInterrupted, a check that had not ended by then is
// ResultError, not a failure.
func (s *Summary) MarkLost(at time.Time, why string) {
	s.Lost = why
	s.markUnjudged(at, ResultError, "the run lost the cluster ("+why+") before the check ended: no verdict")
}

func (s *Summary) markUnjudged(at time.Time, result, note string) {
	for i := range s.Checks {
		c := &s.Checks[i]
		if c.Result == "pass" || c.Result == "skip" || Unjudged(c.Result) || (c.Result == "fail" && !c.Ended.IsZero() && c.Ended.Before(at)) {
			continue
		}
		msg := note
		if c.Message != "" {
			msg += "; what it reported before:\n" + c.Message
		}
		c.Result, c.Message = result, msg
	}
}

// Finish fills totals and the overall result: fail when a check failed
// or the run could not be made, else interrupted when it was stopped,
// else error when it lost the cluster.
func (s *Summary) Finish() {
	s.Totals = Totals{Checks: len(s.Checks)}
	for _, c := range s.Checks {
		switch c.Result {
		case "pass":
			s.Totals.Passed++
		case "skip":
			s.Totals.Skipped++
		case ResultInterrupted:
			s.Totals.Interrupted++
		case ResultError:
			s.Totals.Errored++
		default:
			s.Totals.Failed++
		}
	}
	s.Result = "pass"
	switch {
	case s.Totals.Failed > 0:
		s.Result = "fail"
	case s.Interrupted != "":
		s.Result = ResultInterrupted
	case s.Lost != "":
		s.Result = ResultError
	case len(s.Errors) > 0 || s.Totals.Checks == 0:
		s.Result = "fail"
	}
	if s.Totals.Checks == 0 && len(s.Errors) == 0 {
		s.Errors = append(s.Errors, "no check ran")
	}
}

// Write stores the summary as dir/summary.json.
func (s *Summary) Write(dir string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "summary.json"), append(b, '\n'), 0o644)
}

// ReadSummary loads dir/summary.json.
func ReadSummary(dir string) (*Summary, error) {
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "summary.json"), err)
	}
	return &s, nil
}
