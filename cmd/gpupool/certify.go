// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/upstream"
	"github.com/gpupool/gpupool/e2e/versions"
	"github.com/gpupool/gpupool/reports"
)

// certifyCommand runs the contract and writes what a reviewer needs into one
// directory: the run's reports, junit_01.xml, e2e.log, the candidate's
// manifests as applied with their fingerprint, PRODUCT.yaml and the
// AI Conformance mapping.
func certifyCommand() *cobra.Command {
	c := &cobra.Command{Use: "certify", Short: "run the contract and write a certification bundle", Args: cobra.NoArgs}
	fs := c.Flags()
	var f runFlags
	var p reports.Product
	f.register(fs)
	fs.StringVar(&f.out, "out", "", "bundle directory (required; must not exist or be empty)")
	f.suites = ""
	registerSuiteParallelism(fs, &f.suiteParallelism)
	f.explore.register(fs)
	f.target.register(fs) // a vendor certifies the cluster it runs
	fs.StringVar(&p.VendorName, "vendor", "", "PRODUCT.yaml vendorName: the legal entity certifying")
	fs.StringVar(&p.PlatformName, "platform", "", "PRODUCT.yaml platformName (default: the candidate's name)")
	fs.StringVar(&p.PlatformVersion, "platform-version", "", "PRODUCT.yaml platformVersion: the version of what is certified")
	fs.StringVar(&p.WebsiteURL, "website", "", "PRODUCT.yaml websiteUrl")
	fs.StringVar(&p.DocumentationURL, "docs", "", "PRODUCT.yaml documentationUrl")
	fs.StringVar(&p.ContactEmail, "contact", "", "PRODUCT.yaml contactEmailAddress")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		if f.out == "" {
			return errors.New("gpupool certify: --out DIR is required")
		}
		out, err := filepath.Abs(f.out)
		if err != nil {
			return err
		}
		if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
			return fmt.Errorf("gpupool certify: --out %s is not empty: a bundle holds one run", out)
		}
		f.out = out
		s, plan, _, err := runContract(ctx, f)
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return exitError{130}
		}
		if p.PlatformName == "" {
			p.PlatformName = plan.Candidate.Name
		}
		p.KubernetesVersion = minorOf(versions.Kube)
		if v := s.Components["kubernetes"]; f.target.kubeconfig != "" && v != "" {
			p.KubernetesVersion = minorOf(v) // the certified cluster's, not gpupool's own
		}
		cert := reports.Certification{Product: p, Versions: componentVersions(), ChecklistVersion: checks.AIConformanceVersion}
		for _, r := range checks.AIRequirements {
			req := reports.Requirement{ID: r.ID, Level: r.Level, Checks: r.Checks}
			for _, p := range r.Procedures {
				req.Procedures = append(req.Procedures, reports.Procedure{Procedure: p.Procedure, Checks: p.Checks, Shapes: p.Shapes})
			}
			cert.Requirements = append(cert.Requirements, req)
		}
		if err := plan.Candidate.WriteApplied(filepath.Join(out, "candidate")); err != nil {
			return err
		}
		if err := s.WriteCertification(out, cert); err != nil {
			return err
		}
		setPhase("")
		s.PrintTable(os.Stdout)
		fmt.Printf("certification bundle: %s (%s, %s, %s, %s, candidate/)\n", out,
			reports.CertJUnitFile, reports.CertLogFile, reports.CertProductFile, reports.CertMappingFile)
		switch s.Result {
		case "pass":
			return nil
		case reports.ResultError:
			return exitError{2} // the cluster was lost: no verdict
		}
		return exitError{1}
	}
	return c
}

// componentVersions are gpupool's own and every component's, as
// 'gpupool version' prints them.
func componentVersions() map[string]string {
	return map[string]string{
		"gpupool": ownVersion(), "go": runtime.Version(),
		"kubernetes": versions.Kube, "etcd": versions.Etcd, "kwok": versions.Kwok, "kind": versions.Kind,
		"gpu-operator": upstream.GPUOperatorVersion(),
	}
}

// minorOf is v1.37 for v1.37.2: the checklist's kubernetesVersion.
func minorOf(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}
