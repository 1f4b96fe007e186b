// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package reports

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A trimmed test2json stream: one passing check, one failing check with
// two assessments, one suite whose TestMain failed.
const stream = `{"Action":"start","Package":"x/suites/admission"}
{"Action":"run","Package":"x/suites/admission","Test":"TestA"}
{"Action":"run","Package":"x/suites/admission","Test":"TestA/admission.ok"}
{"Action":"run","Package":"x/suites/admission","Test":"TestA/admission.ok/it_works"}
{"Action":"output","Package":"x/suites/admission","Test":"TestA/admission.ok/it_works","Output":"=== RUN   TestA/admission.ok/it_works\n"}
{"Action":"pass","Package":"x/suites/admission","Test":"TestA/admission.ok/it_works","Elapsed":0.1}
{"Action":"pass","Package":"x/suites/admission","Test":"TestA/admission.ok","Elapsed":0.2}
{"Action":"pass","Package":"x/suites/admission","Test":"TestA","Elapsed":0.2}
{"Action":"run","Package":"x/suites/admission","Test":"TestB/admission.broken"}
{"Action":"run","Package":"x/suites/admission","Test":"TestB/admission.broken/first_step"}
{"Action":"pass","Package":"x/suites/admission","Test":"TestB/admission.broken/first_step","Elapsed":0.1}
{"Action":"run","Package":"x/suites/admission","Test":"TestB/admission.broken/second_step"}
{"Action":"output","Package":"x/suites/admission","Test":"TestB/admission.broken/second_step","Output":"    a_test.go:9: expected a denial, but it was admitted\n"}
{"Action":"output","Package":"x/suites/admission","Test":"TestB/admission.broken/second_step","Output":"--- FAIL: TestB/admission.broken/second_step (10.00s)\n"}
{"Action":"fail","Package":"x/suites/admission","Test":"TestB/admission.broken/second_step","Elapsed":10}
{"Action":"fail","Package":"x/suites/admission","Test":"TestB/admission.broken","Elapsed":10.1}
{"Action":"fail","Package":"x/suites/admission","Test":"TestB","Elapsed":10.1}
{"Action":"fail","Package":"x/suites/admission","Elapsed":11}
{"Action":"output","Package":"x/suites/pool","Output":"setup: cluster did not start\n"}
{"Action":"fail","Package":"x/suites/pool","Elapsed":1}
`

func lookup(id string) (CheckInfo, bool) {
	if !strings.HasPrefix(id, "admission.") {
		return CheckInfo{}, false
	}
	return CheckInfo{ID: id, Area: "runtimeclass", AreaTitle: "RuntimeClass", Rule: "rule of " + id}, true
}

func TestSummaryFromEvents(t *testing.T) {
	res, err := ParseEvents(strings.NewReader(stream))
	require.NoError(t, err)
	checks := Checks(res, lookup)
	require.Len(t, checks, 2)
	assert.Equal(t, "pass", checks[0].Result)
	assert.Empty(t, checks[0].Message)
	assert.Equal(t, "admission", checks[0].Suite)
	assert.Equal(t, "fail", checks[1].Result)
	assert.Equal(t, "second step: a_test.go:9: expected a denial, but it was admitted", checks[1].Message)
	require.Len(t, checks[1].Assessments, 2)
	assert.Equal(t, "first step", checks[1].Assessments[0].Name)

	s := &Summary{RunID: "r", Candidate: Ref{Name: "cand"}, Checks: checks}
	s.Finish()
	assert.Equal(t, "fail", s.Result)
	assert.Equal(t, Totals{Checks: 2, Passed: 1, Failed: 1}, s.Totals)

	dir := t.TempDir()
	require.NoError(t, s.Write(dir))
	back, err := ReadSummary(dir)
	require.NoError(t, err)
	assert.Equal(t, s.Checks, back.Checks)

	require.NoError(t, s.WriteJUnit(dir))
	data, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	require.NoError(t, err)
	var j struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(data, &j))
	assert.Equal(t, 2, j.Tests)
	assert.Equal(t, 1, j.Failures)
	require.Len(t, j.Suites, 1)
	assert.Equal(t, "gpupool.runtimeclass", j.Suites[0].Name)
	require.NotNil(t, j.Suites[0].Cases[1].Failure)
	assert.Contains(t, j.Suites[0].Cases[1].Failure.Message, "it was admitted")

	var out bytes.Buffer
	s.PrintTable(&out)
	assert.Contains(t, out.String(), "admission.broken")
	assert.Contains(t, out.String(), "FAIL: 2 checks, 1 passed, 1 failed, 0 skipped")
}

func TestNoCheckIsAFailure(t *testing.T) {
	s := &Summary{}
	s.Finish()
	assert.Equal(t, "fail", s.Result)
	assert.Equal(t, []string{"no check ran"}, s.Errors)
}

// A stopped run: a check that failed before the stop keeps its FAIL; one
// running (or torn down by the stop, or never ended) is interrupted, no
// verdict, in the totals, the table and JUnit (an <error>, not a
// <failure>).
func TestInterruptedChecksAreNoVerdict(t *testing.T) {
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	s := &Summary{Checks: []CheckResult{
		{ID: "a.passed", Area: "a", Result: "pass", Ended: at.Add(-time.Second)},
		{ID: "a.failed-before", Area: "a", Result: "fail", Message: "boom", Ended: at.Add(-time.Second)},
		{ID: "a.torn-down", Area: "a", Result: "fail", Message: "context canceled", Ended: at.Add(time.Second)},
		{ID: "a.never-ended", Area: "a", Result: "unknown"},
	}}
	s.MarkInterrupted(at, "stopped by a signal")
	s.Finish()
	got := map[string]string{}
	for _, c := range s.Checks {
		got[c.ID] = c.Result
	}
	want := map[string]string{"a.passed": "pass", "a.failed-before": "fail", "a.torn-down": ResultInterrupted, "a.never-ended": ResultInterrupted}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: %s, want %s", id, got[id], w)
		}
	}
	if s.Totals.Failed != 1 || s.Totals.Interrupted != 2 || s.Result != "fail" {
		t.Errorf("totals %+v, result %s: want 1 failed, 2 interrupted, fail (a real failure stands)", s.Totals, s.Result)
	}
	dir := t.TempDir()
	if err := s.WriteJUnit(dir); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if n := strings.Count(string(b), "<failure"); n != 1 {
		t.Errorf("junit.xml has %d <failure>, want 1 (the check that failed before the stop):\n%s", n, b)
	}
	if n := strings.Count(string(b), "<error"); n != 2 {
		t.Errorf("junit.xml has %d <error>, want 2 (the interrupted checks)", n)
	}

	only := &Summary{Checks: []CheckResult{{ID: "a.torn-down", Area: "a", Result: "fail", Ended: at.Add(time.Second)}}}
	only.MarkInterrupted(at, "stopped by a signal")
	only.Finish()
	var table strings.Builder
	only.PrintTable(&table)
	if only.Result != ResultInterrupted || only.Totals.Failed != 0 || !strings.Contains(table.String(), "INTERRUPTED: 1 checks, 0 passed, 0 failed, 0 skipped, 1 interrupted") {
		t.Errorf("a run stopped with no failure: result %s, totals %+v, table:\n%s", only.Result, only.Totals, table.String())
	}
}

// A run that lost its cluster: the checks cut off are errored, no
// verdict, and the run's result is error, not fail; JUnit says <error>.
func TestChecksCutOffByALostClusterAreErrors(t *testing.T) {
	at := time.Date(2026, 12, 4, 7, 0, 0, 0, time.UTC)
	s := &Summary{Checks: []CheckResult{
		{ID: "a.passed", Area: "a", Result: "pass", Ended: at.Add(-time.Second)},
		{ID: "a.refused", Area: "a", Result: "fail", Message: "dial tcp 127.0.0.1:32764: connect: connection refused", Ended: at.Add(time.Second)},
		{ID: "a.never-ran", Area: "a", Result: "unknown"},
	}}
	s.MarkLost(at, "the control plane stopped answering at 07:00:00: connection refused")
	s.Finish()
	if s.Result != ResultError || s.Totals.Errored != 2 || s.Totals.Failed != 0 || s.Totals.Passed != 1 {
		t.Errorf("result %s, totals %+v: want error, 1 passed, 2 errored, 0 failed", s.Result, s.Totals)
	}
	var table strings.Builder
	s.PrintTable(&table)
	if !strings.Contains(table.String(), "ERROR: 3 checks, 1 passed, 0 failed, 0 skipped, 2 errored (the control plane stopped answering") {
		t.Errorf("table:\n%s", table.String())
	}
	dir := t.TempDir()
	if err := s.WriteJUnit(dir); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if strings.Contains(string(b), "<failure") || strings.Count(string(b), "<error") != 2 {
		t.Errorf("junit.xml: want 2 <error> and no <failure>:\n%s", b)
	}
	if err := s.WriteHTML(dir); err != nil {
		t.Fatal(err)
	}
}

// An assessment whose name holds a "/" (about pods/exec) is still its
// check's child: before, such a check failed with no message.
func TestChildrenKeepsASlashInAName(t *testing.T) {
	r := &Results{Tests: []*TestResult{
		{Package: "p", Name: "TestX"},
		{Package: "p", Name: "TestX/check.id"},
		{Package: "p", Name: "TestX/check.id/may_create_pods/exec"},
		{Package: "p", Name: "TestX/check.id/another"},
	}}
	var got []string
	for _, c := range r.Children("p", "TestX/check.id") {
		got = append(got, c.Name)
	}
	if strings.Join(got, ",") != "TestX/check.id/may_create_pods/exec,TestX/check.id/another" {
		t.Errorf("children %v", got)
	}
	if c := r.Children("p", "TestX"); len(c) != 1 || c[0].Name != "TestX/check.id" {
		t.Errorf("TestX's children: %d", len(c))
	}
}
