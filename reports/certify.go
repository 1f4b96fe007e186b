// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package reports

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Files of a certification bundle, beside summary.json and report.html.
const (
	CertJUnitFile   = "junit_01.xml"
	CertLogFile     = "e2e.log"
	CertProductFile = "PRODUCT.yaml"
	CertMappingFile = "ai-conformance.yaml"
)

// Certification is what a bundle says beyond the run: who certifies what,
// the versions that ran, and which AI Conformance requirements the checks
// give evidence for.
type Certification struct {
	Product  Product
	Versions map[string]string // gpupool and every component
	// ChecklistVersion is the AI Conformance checklist the mapping follows.
	ChecklistVersion string
	Requirements     []Requirement
}

// Product is the PRODUCT.yaml metadata (cncf/k8s-ai-conformance).
type Product struct {
	VendorName        string `json:"vendorName"`
	PlatformName      string `json:"platformName"`
	PlatformVersion   string `json:"platformVersion"`
	WebsiteURL        string `json:"websiteUrl,omitempty"`
	DocumentationURL  string `json:"documentationUrl,omitempty"`
	Description       string `json:"description,omitempty"`
	ContactEmail      string `json:"contactEmailAddress,omitempty"`
	KubernetesVersion string `json:"kubernetesVersion"`
}

// Requirement is one checklist requirement and the checks behind it.
type Requirement struct {
	ID     string   `json:"id"`
	Level  string   `json:"level"`
	Checks []string `json:"checks"`
	// Procedures: the requirement's test procedures, each with the checks
	// that run it and the pod shapes they try.
	Procedures []Procedure `json:"procedures,omitempty"`
}

// Procedure is one test procedure of a requirement.
type Procedure struct {
	Procedure string   `json:"procedure"`
	Checks    []string `json:"checks"`
	Shapes    string   `json:"shapes"`
}

// requirementResult is a requirement as the bundle reports it.
type requirementResult struct {
	ID       string   `json:"id"`
	Level    string   `json:"level"`
	Status   string   `json:"status"`
	Evidence []string `json:"evidence"`
	Notes    string   `json:"notes"`
}

// WriteCertification writes the bundle's own files into dir: junit_01.xml
// (one classname per check, so GitLab and Jenkins keep every case; the
// versions and the candidate's fingerprint as properties), a plain e2e.log,
// PRODUCT.yaml (the checklist's metadata and the requirements gpupool gives
// evidence for) and ai-conformance.yaml (each requirement, its checks and
// their results).
func (s *Summary) WriteCertification(dir string, c Certification) error {
	if err := s.writeCertJUnit(filepath.Join(dir, CertJUnitFile), c); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, CertLogFile), []byte(s.E2ELog(c)), 0o644); err != nil {
		return err
	}
	results := s.requirementResults(c)
	product := map[string]any{
		"metadata": c.Product,
		"spec":     map[string]any{"gpupool": results},
	}
	if err := writeYAML(filepath.Join(dir, CertProductFile), product, "# PRODUCT.yaml-style metadata for a CNCF Kubernetes AI Conformance "+c.ChecklistVersion+" submission.\n# Merge each spec.gpupool entry into the checklist's requirement of the same id.\n"); err != nil {
		return err
	}
	mapping := map[string]any{"checklist": c.ChecklistVersion, "candidateFingerprint": s.Candidate.Fingerprint, "requirements": s.mapping(c)}
	return writeYAML(filepath.Join(dir, CertMappingFile), mapping, "# Which gpupool checks give evidence for which AI Conformance requirement, and how they ended.\n")
}

func (s *Summary) requirementResults(c Certification) []requirementResult {
	var out []requirementResult
	for _, r := range c.Requirements {
		var failed, missing []string
		for _, id := range r.Checks {
			switch res := s.result(id); res {
			case "pass":
			case "":
				missing = append(missing, id)
			default:
				failed = append(failed, id)
			}
		}
		rr := requirementResult{ID: r.ID, Level: r.Level, Evidence: []string{CertJUnitFile, CertLogFile}}
		passed := len(r.Checks) - len(failed) - len(missing)
		switch {
		case len(failed) > 0:
			rr.Notes = "gpupool checks failed: " + strings.Join(failed, ", ")
		case passed == 0 || len(s.Errors) > 0:
			// Nothing shown is nothing claimed: a run that did not get to
			// its checks, or ran none of these, gives no evidence.
			rr.Notes = "no gpupool check of this requirement passed in this run"
			if len(s.Errors) > 0 {
				rr.Notes += " (the run had errors: see " + CertLogFile + ")"
			}
		default:
			rr.Status = "Implemented"
			rr.Notes = fmt.Sprintf("%d gpupool checks passed on candidate %s (%s)", passed, s.Candidate.Name, s.Candidate.Fingerprint)
		}
		if len(missing) > 0 {
			rr.Notes += "; not run here: " + strings.Join(missing, ", ")
		}
		for _, id := range r.Checks {
			if s.result(id) != "" {
				rr.Evidence = append(rr.Evidence, CertJUnitFile+"#"+id)
			}
		}
		out = append(out, rr)
	}
	return out
}

func (s *Summary) mapping(c Certification) []map[string]any {
	var out []map[string]any
	for _, r := range c.Requirements {
		checks := map[string]string{}
		for _, id := range r.Checks {
			res := s.result(id)
			if res == "" {
				res = "not run"
			}
			checks[id] = res
		}
		m := map[string]any{"id": r.ID, "level": r.Level, "checks": checks}
		var procs []map[string]any
		for _, p := range r.Procedures {
			// A procedure ran when every check of it ran, and held when
			// every one passed.
			status := "held"
			for _, id := range p.Checks {
				switch s.result(id) {
				case "pass":
				case "":
					status = "not run"
				default:
					if status != "not run" {
						status = "failed"
					}
				}
			}
			procs = append(procs, map[string]any{"procedure": p.Procedure, "checks": p.Checks, "shapes": p.Shapes, "status": status})
		}
		if procs != nil {
			m["procedures"] = procs
		}
		out = append(out, m)
	}
	return out
}

func (s *Summary) result(id string) string {
	for _, c := range s.Checks {
		if c.ID == id {
			return c.Result
		}
	}
	return ""
}

func (s *Summary) writeCertJUnit(path string, c Certification) error {
	suite := junitSuite{Name: "gpupool", Timestamp: s.StartedAt.UTC().Format("2006-01-02T15:04:05"), Time: secs(s.Duration)}
	suite.Properties = append(suite.Properties,
		junitProperty{"candidate", s.Candidate.Name}, junitProperty{"candidate.fingerprint", s.Candidate.Fingerprint},
		junitProperty{"fleet", s.Fleet.Name}, junitProperty{"provider", s.Provider})
	for _, k := range sortedKeys(c.Versions) {
		suite.Properties = append(suite.Properties, junitProperty{"version." + k, c.Versions[k]})
	}
	for _, ch := range s.Checks {
		// One classname per rule: report tools key cases by classname and
		// name, and some drop all but one case of a classname.
		suite.add(junitCase{Name: ch.Rule, Classname: ch.ID, Time: secs(ch.Duration)}, ch)
	}
	for i, e := range s.Errors {
		suite.Cases = append(suite.Cases, junitCase{Name: e, Classname: fmt.Sprintf("gpupool.run-error-%d", i+1), Time: "0",
			Failure: &junitMessage{Message: firstLine(e), Body: e}})
		suite.Tests++
		suite.Failures++
	}
	root := junitSuites{Name: "gpupool " + s.Candidate.Name, Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Time: suite.Time, Suites: []junitSuite{suite}}
	b, err := xml.MarshalIndent(root, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(xml.Header), append(b, '\n')...), 0o644)
}

// E2ELog is the run as plain text, one line per step, for a reviewer
// without a JUnit viewer.
func (s *Summary) E2ELog(c Certification) string {
	var b strings.Builder
	fmt.Fprintf(&b, "gpupool run %s: candidate %s (%s), fleet %s, provider %s, started %s, %.1fs\n",
		s.RunID, s.Candidate.Name, s.Candidate.Fingerprint, s.Fleet.Name, s.Provider, s.StartedAt.UTC().Format("2006-01-02T15:04:05Z"), s.Duration)
	for _, k := range sortedKeys(c.Versions) {
		fmt.Fprintf(&b, "version %s %s\n", k, c.Versions[k])
	}
	for _, ch := range s.Checks {
		fmt.Fprintf(&b, "\n[%s] %s (%.1fs)\n  rule: %s\n", strings.ToUpper(ch.Result), ch.ID, ch.Duration, ch.Rule)
		for _, a := range ch.Assessments {
			fmt.Fprintf(&b, "  [%s] %s (%.1fs)\n", strings.ToUpper(a.Result), a.Name, a.Duration)
			for _, l := range strings.Split(strings.TrimRight(a.Message, "\n"), "\n") {
				if l != "" {
					fmt.Fprintf(&b, "      %s\n", l)
				}
			}
		}
	}
	for _, e := range s.Errors {
		fmt.Fprintf(&b, "\n[ERROR] %s\n", e)
	}
	fmt.Fprintf(&b, "\n%s: %d checks, %d passed, %d failed, %d skipped\n", strings.ToUpper(s.Result), s.Totals.Checks, s.Totals.Passed, s.Totals.Failed, s.Totals.Skipped)
	return b.String()
}

func writeYAML(path string, v any, header string) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(header), b...), 0o644)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
