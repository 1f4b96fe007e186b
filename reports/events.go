// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package reports turns a run's `go test -json` (test2json) events into the
// records CI and vendors keep: summary.json, junit.xml and a printed table.
// It knows nothing of clusters; check metadata is passed in.
package reports

import (
	"bufio"
	"encoding/json"
	"io"
	"sort"
	"strings"
	"time"
)

// Event is one test2json record.
type Event struct {
	Time    time.Time `json:"Time"`
	Action  string    `json:"Action"`
	Package string    `json:"Package"`
	Test    string    `json:"Test"`
	Elapsed float64   `json:"Elapsed"`
	Output  string    `json:"Output"`
}

// TestResult is the outcome of one test or subtest.
type TestResult struct {
	Package string
	Name    string // full name, e.g. TestX/check.id/assessment
	Result  string // pass, fail, skip
	Elapsed time.Duration
	Output  []string // lines the test itself logged, without framing
	// Ended is when it ended (zero: it never did, its binary died).
	Ended time.Time
}

// PackageResult is the outcome of one test binary.
type PackageResult struct {
	Package string
	Result  string
	Elapsed time.Duration
	Output  []string // output not attributed to a test (TestMain)
}

// Results are all test and package results of a run, in order of first appearance.
type Results struct {
	Tests    []*TestResult
	Packages []*PackageResult
}

// ParseEvents reads test2json events. Lines that are not JSON (build
// errors printed by go test) are kept as package output of "".
func ParseEvents(r io.Reader) (*Results, error) {
	res := &Results{}
	tests := map[string]*TestResult{}
	pkgs := map[string]*PackageResult{}
	pkg := func(name string) *PackageResult {
		p := pkgs[name]
		if p == nil {
			p = &PackageResult{Package: name}
			pkgs[name] = p
			res.Packages = append(res.Packages, p)
		}
		return p
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var ev Event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			pkg("").Output = append(pkg("").Output, string(line))
			continue
		}
		if ev.Test == "" {
			p := pkg(ev.Package)
			switch ev.Action {
			case "pass", "fail", "skip":
				p.Result, p.Elapsed = ev.Action, seconds(ev.Elapsed)
			case "output":
				p.Output = append(p.Output, strings.TrimRight(ev.Output, "\n"))
			}
			continue
		}
		key := ev.Package + "\x00" + ev.Test
		t := tests[key]
		if t == nil {
			t = &TestResult{Package: ev.Package, Name: ev.Test}
			tests[key] = t
			res.Tests = append(res.Tests, t)
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			t.Result, t.Elapsed, t.Ended = ev.Action, seconds(ev.Elapsed), ev.Time
		case "output":
			if l := testLine(ev.Output); l != "" {
				t.Output = append(t.Output, l)
			}
		}
	}
	return res, sc.Err()
}

// testLine drops go test's framing (=== RUN, --- PASS, ...) and keeps what
// the test logged.
func testLine(out string) string {
	l := strings.TrimRight(out, "\n")
	trimmed := strings.TrimSpace(l)
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS", "--- FAIL", "--- SKIP"} {
		if strings.HasPrefix(trimmed, p) {
			return ""
		}
	}
	return trimmed
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Children returns the direct subtests of name in pkg, in order. A
// subtest's own name may hold a "/" (an assessment about pods/exec):
// it is a direct child unless another subtest of name is its parent.
func (r *Results) Children(pkg, name string) []*TestResult {
	var under []*TestResult
	prefix := name + "/"
	for _, t := range r.Tests {
		if t.Package == pkg && strings.HasPrefix(t.Name, prefix) {
			under = append(under, t)
		}
	}
	var out []*TestResult
	for _, t := range under {
		nested := false
		for _, p := range under {
			if p != t && strings.HasPrefix(t.Name, p.Name+"/") {
				nested = true
				break
			}
		}
		if !nested {
			out = append(out, t)
		}
	}
	return out
}

// Sorted returns the package results sorted by name.
func (r *Results) Sorted() []*PackageResult {
	out := append([]*PackageResult(nil), r.Packages...)
	sort.Slice(out, func(i, j int) bool { return out[i].Package < out[j].Package })
	return out
}
