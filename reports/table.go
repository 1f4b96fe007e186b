// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package reports

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// PrintTable writes the human summary: checks grouped by area, each
// failure's message indented under it, and the totals.
func (s *Summary) PrintTable(w io.Writer) {
	fmt.Fprintf(w, "\ngpupool run %s: candidate %s, fleet %s, %s\n\n", s.RunID, s.Candidate.Name, s.Fleet.Name, s.Provider)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AREA\tCHECK\tRESULT\tTIME")
	for _, c := range s.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1fs\n", c.AreaTitle, c.ID, strings.ToUpper(c.Result), c.Duration)
	}
	tw.Flush()
	for _, c := range s.Checks {
		if c.Result == "pass" || c.Message == "" {
			continue
		}
		fmt.Fprintf(w, "\n%s %s\n  rule: %s\n", strings.ToUpper(c.Result), c.ID, c.Rule)
		for _, l := range strings.Split(c.Message, "\n") {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	for _, e := range s.Errors {
		fmt.Fprintf(w, "\nERROR %s\n", e)
	}
	interrupted := ""
	if s.Totals.Interrupted > 0 {
		interrupted = fmt.Sprintf(", %d interrupted", s.Totals.Interrupted)
	}
	if s.Totals.Errored > 0 {
		interrupted += fmt.Sprintf(", %d errored (%s)", s.Totals.Errored, s.Lost)
	}
	fmt.Fprintf(w, "\n%s: %d checks, %d passed, %d failed, %d skipped%s in %.1fs\n",
		strings.ToUpper(s.Result), s.Totals.Checks, s.Totals.Passed, s.Totals.Failed, s.Totals.Skipped, interrupted, s.Duration)
}
