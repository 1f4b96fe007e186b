// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package reports

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

//go:embed report.html.tmpl
var reportTemplate string

// HTMLFile is the report a person reads: one self-contained page (no
// script, no font, no stylesheet fetched), so it opens offline and survives
// being attached to a CI job.
const HTMLFile = "report.html"

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"seconds": func(s float64) string { return fmt.Sprintf("%.1fs", s) },
	"upper":   strings.ToUpper,
	"failed":  func(r string) bool { return r != "pass" && r != "skip" },
	"lines": func(l []string) string {
		for i := range l {
			l[i] = strings.TrimRight(l[i], "\n")
		}
		return strings.Join(l, "\n")
	},
}).Parse(reportTemplate))

// htmlArea is one area of checks, in the order the summary lists them.
type htmlArea struct {
	Title  string
	Failed int
	Checks []CheckResult
}

type htmlReport struct {
	*Summary
	Areas []htmlArea
	// Counterexamples maps each reproduction file to its text.
	Counterexamples []htmlFile
	Plots           []string
	Components      [][2]string
}

type htmlFile struct{ Name, Text string }

// WriteHTML writes dir/report.html from s: the verdict first, then the
// checks by area, each failed one with its evidence (the assessments'
// messages: pods tried, admission answers, Pending explanations), the
// exploration's counterexamples inlined, the candidate's fingerprint, the
// component versions and the timings. Plots beside it (scale runs) are
// linked.
func (s *Summary) WriteHTML(dir string) error {
	r := htmlReport{Summary: s}
	for _, c := range s.Checks {
		if n := len(r.Areas); n == 0 || r.Areas[n-1].Title != c.AreaTitle {
			r.Areas = append(r.Areas, htmlArea{Title: c.AreaTitle})
		}
		a := &r.Areas[len(r.Areas)-1]
		a.Checks = append(a.Checks, c)
		if c.Result != "pass" && c.Result != "skip" && !Unjudged(c.Result) {
			a.Failed++
		}
	}
	if s.Exploration != nil {
		for _, f := range s.Exploration.Counterexamples {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				continue
			}
			r.Counterexamples = append(r.Counterexamples, htmlFile{f, string(b)})
		}
	}
	plots, _ := filepath.Glob(filepath.Join(dir, "*.svg"))
	for _, p := range plots {
		r.Plots = append(r.Plots, filepath.Base(p))
	}
	for k, v := range s.Components {
		r.Components = append(r.Components, [2]string{k, v})
	}
	sort.Slice(r.Components, func(i, j int) bool { return r.Components[i][0] < r.Components[j][0] })
	var buf bytes.Buffer
	if err := reportTmpl.Execute(&buf, r); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, HTMLFile), buf.Bytes(), 0o644)
}
