// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/reports"
)

// finish fills the summary in from the events (res: nil when no suite
// ran) and writes summary.json, report.html and junit.xml into out.
func finish(s *reports.Summary, res *reports.Results, out string, started time.Time) error {
	return finishInterrupted(s, res, out, started, time.Time{}, "")
}

// finishLost is finish for a run that lost its cluster at at: the checks
// cut off are errors, not failures.
func finishLost(s *reports.Summary, res *reports.Results, out string, started, at time.Time, why string) error {
	return finishUnjudged(s, res, out, started, func() { s.MarkLost(at, why) })
}

// finishInterrupted is finish for a run stopped at at (zero: not
// stopped): the checks it stopped are interrupted, not failed, and the
// suites' "interrupted" errors say nothing the checks do not.
func finishInterrupted(s *reports.Summary, res *reports.Results, out string, started, at time.Time, why string) error {
	return finishUnjudged(s, res, out, started, func() {
		if !at.IsZero() {
			s.MarkInterrupted(at, why)
		}
	})
}

// finishUnjudged fills the summary in, lets mark say which checks got no
// verdict, and writes the reports.
func finishUnjudged(s *reports.Summary, res *reports.Results, out string, started time.Time, mark func()) error {
	if res != nil {
		s.Checks = onProvider(reports.Checks(res, checkInfo), s.Provider)
		sortByArea(s.Checks)
		s.Errors = append(s.Errors, packageErrors(res)...)
	}
	mark()
	s.Duration = time.Since(started).Seconds()
	s.Finish()
	if err := s.Write(out); err != nil {
		return err
	}
	if err := s.WriteHTML(out); err != nil {
		return err
	}
	return s.WriteJUnit(out)
}

// onProvider leaves out the checks another provider makes: skipped here by
// design, they are not checks this run hid.
func onProvider(cs []reports.CheckResult, provider string) []reports.CheckResult {
	var out []reports.CheckResult
	for _, c := range cs {
		if chk, ok := checks.Lookup(c.ID); ok && !harness.RunsOn(chk, provider) {
			// A check that needs the autoscaler ran on a cluster gpupool
			// did not make when the run's Karpenter scaled its simulated
			// pools: its verdict stands.
			if !chk.NeedsAutoscaler || c.Result == "skip" {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

func checkInfo(id string) (reports.CheckInfo, bool) {
	c, ok := checks.Lookup(id)
	if !ok {
		return reports.CheckInfo{}, false
	}
	title := c.Area
	for _, a := range checks.Areas {
		if a.ID == c.Area {
			title = a.Title
		}
	}
	return reports.CheckInfo{ID: c.ID, Area: c.Area, AreaTitle: title, Rule: c.Rule}, true
}

func sortByArea(cs []reports.CheckResult) {
	rank := map[string]int{}
	for i, a := range checks.Areas {
		rank[a.ID] = i
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if rank[cs[i].Area] != rank[cs[j].Area] {
			return rank[cs[i].Area] < rank[cs[j].Area]
		}
		return cs[i].ID < cs[j].ID
	})
}

// packageErrors reports suites that failed outside any check: TestMain
// setup errors, panics, builds that broke.
func packageErrors(res *reports.Results) []string {
	var errs []string
	for _, p := range res.Sorted() {
		if p.Result == "pass" || p.Result == "skip" {
			continue
		}
		failedTest := false
		for _, t := range res.Tests {
			if t.Package == p.Package && t.Result == "fail" {
				failedTest = true
			}
		}
		if failedTest {
			continue
		}
		tail := p.Output
		if len(tail) > 15 {
			tail = tail[len(tail)-15:]
		}
		name := p.Package
		if name == "" {
			name = "go test"
		}
		errs = append(errs, fmt.Sprintf("%s failed outside any check:\n%s", name, strings.Join(tail, "\n")))
	}
	return errs
}
