// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"github.com/spf13/cobra"
	"path/filepath"

	"github.com/gpupool/gpupool/reports"
)

// reportCommand writes a run directory's report.html from its summary.json:
// for reports of runs before every run wrote one, or after editing nothing
// but wanting the page again.
func reportCommand() *cobra.Command {
	c := &cobra.Command{Use: "report RUN_DIR", Short: "write RUN_DIR/report.html from its summary.json (every run writes one)", Args: cobra.ExactArgs(1)}
	c.Long = "Writes RUN_DIR/report.html, one self-contained page, from RUN_DIR/summary.json."
	c.RunE = func(cmd *cobra.Command, args []string) error {
		dir := args[0]
		s, err := reports.ReadSummary(dir)
		if err != nil {
			return err
		}
		if err := s.WriteHTML(dir); err != nil {
			return err
		}
		fmt.Println(filepath.Join(dir, reports.HTMLFile))
		return nil
	}
	return c
}
