package main

import (
	"flag"
	"fmt"
	"path/filepath"

	"github.com/gpupool/gpupool/reports"
)

// reportCmd writes a run directory's report.html from its summary.json:
// for reports of runs before every run wrote one, or after editing nothing
// but wanting the page again.
func reportCmd(args []string) error {
	fs := flag.NewFlagSet("gpupool report", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: gpupool report RUN_DIR\n\nWrites RUN_DIR/report.html, one self-contained page, from RUN_DIR/summary.json.")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError{2}
	}
	dir := fs.Arg(0)
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
