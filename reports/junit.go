// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package reports

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// JUnit layout: one <testsuite> per contract area, one <testcase> per
// check (name = check id, classname = gpupool.<area>), so CI systems group
// results the way the contract does; run errors are a testsuite of their own.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

func secs(f float64) string { return fmt.Sprintf("%.3f", f) }

// WriteJUnit stores the summary as dir/junit.xml.
func (s *Summary) WriteJUnit(dir string) error {
	root := junitSuites{Name: "gpupool " + s.Candidate.Name, Time: secs(s.Duration)}
	byArea := map[string]*junitSuite{}
	var order []string
	for _, c := range s.Checks {
		js := byArea[c.Area]
		if js == nil {
			js = &junitSuite{Name: "gpupool." + c.Area, Timestamp: s.StartedAt.UTC().Format("2006-01-02T15:04:05"),
				Properties: []junitProperty{{"candidate", s.Candidate.Name}, {"fleet", s.Fleet.Name}, {"area", c.AreaTitle}}}
			byArea[c.Area] = js
			order = append(order, c.Area)
		}
		js.add(junitCase{Name: c.ID, Classname: "gpupool." + c.Area, Time: secs(c.Duration), SystemOut: "rule: " + c.Rule}, c)
	}
	for _, a := range order {
		js := byArea[a]
		t := 0.0
		for _, c := range s.Checks {
			if c.Area == a {
				t += c.Duration
			}
		}
		js.Time = secs(t)
		root.Suites = append(root.Suites, *js)
	}
	if len(s.Errors) > 0 {
		// Errors outside any check (setup, a suite that could not run)
		// are JUnit's errors: the run could not test, nothing failed.
		js := junitSuite{Name: "gpupool.run", Tests: len(s.Errors), Errors: len(s.Errors), Time: "0"}
		for i, e := range s.Errors {
			js.Cases = append(js.Cases, junitCase{Name: fmt.Sprintf("run-error-%d", i+1), Classname: "gpupool.run", Time: "0",
				Error: &junitMessage{Message: firstLine(e), Body: e}})
		}
		root.Suites = append(root.Suites, js)
	}
	for _, js := range root.Suites {
		root.Tests += js.Tests
		root.Failures += js.Failures
		root.Errors += js.Errors
		root.Skipped += js.Skipped
	}
	b, err := xml.MarshalIndent(root, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "junit.xml"), append([]byte(xml.Header), append(b, '\n')...), 0o644)
}

// add appends the case of check c, marked failed or skipped as c ended,
// or errored (JUnit's "could not run to a verdict") when interrupted or
// the cluster was lost, and
// counts it.
func (js *junitSuite) add(jc junitCase, c CheckResult) {
	switch c.Result {
	case "pass":
	case "skip":
		jc.Skipped = &junitMessage{Message: firstLine(c.Message), Body: c.Message}
		js.Skipped++
	case ResultInterrupted, ResultError:
		jc.Error = &junitMessage{Message: firstLine(c.Message), Body: c.Message}
		js.Errors++
	default:
		jc.Failure = &junitMessage{Message: firstLine(c.Message), Body: c.Message}
		js.Failures++
	}
	js.Tests++
	js.Cases = append(js.Cases, jc)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
