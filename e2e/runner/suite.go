// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/settings"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/reports"
)

// SuiteArg is the first argument of the child process a suite runs in:
// the binary runs itself, so the suite has a process of its own (its
// global flags, its exit) that a signal can stop with the features'
// teardowns. The binary answers "SuiteArg <suite name> <go test flags>"
// with suite.RunLinked.
const SuiteArg = "__suite"

// runSuite runs one suite against the run's cluster (made by the named
// provider), checking the plan as loaded, in a child process, converting its output to test2json events,
// appending them to w and printing each check's outcome as it ends
// (unless logf is nil). The
// child has a parent-death signal, so even a SIGKILLed gpupool leaves no
// suite running.
func runSuite(ctx context.Context, s *suite.Suite, r *harness.Run, loaded loadedPlan, skipLabels string, logf func(format string, args ...any), w io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this binary to run suite %s: %w", s.Name, err)
	}
	suiteCmd := exec.CommandContext(ctx, self,
		SuiteArg, s.Name,
		"-test.v=test2json", "-test.count=1",
		"--kubeconfig", r.Cluster.Kubeconfig,
		"--"+settings.Flag, loaded.settings,
		// Checks only one provider can make are labelled with it.
		"--skip-labels", skipLabels,
	)
	suiteCmd.Stderr = os.Stderr
	// SIGTERM first: e2e-framework then runs the features' teardowns.
	suiteCmd.Cancel = func() error { return suiteCmd.Process.Signal(syscall.SIGTERM) }
	suiteCmd.WaitDelay = 10 * time.Second
	// Own process group, so a terminal's Ctrl-C reaches gpupool alone and
	// gpupool decides how the suite stops.
	suiteCmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	testFailed := false
	conv := reports.NewConverter(s.Package, func(ev reports.Event) {
		line, _ := json.Marshal(ev)
		w.Write(append(line, '\n'))
		if progress(ev, logf) {
			testFailed = true
		}
	})
	suiteCmd.Stdout = conv
	suiteErr := suiteCmd.Run()
	conv.Exited(suiteErr)
	if ctx.Err() != nil {
		return fmt.Errorf("suite %s interrupted: %w", s.Name, ctx.Err())
	}
	var ee *exec.ExitError
	switch {
	case suiteErr == nil, errors.As(suiteErr, &ee) && testFailed:
		return nil // test failures are in the events
	case errors.As(suiteErr, &ee):
		// Exited non-zero with no failed test: TestMain or the suite
		// itself failed; its output is in the package events too.
		return fmt.Errorf("suite %s exited with %v before any check failed", s.Name, suiteErr)
	}
	return suiteErr
}

// progress prints a line per finished check and reports whether the
// event is a failed test.
func progress(ev reports.Event, logf func(format string, args ...any)) (testFailed bool) {
	testFailed = ev.Test != "" && ev.Action == "fail"
	parts := strings.Split(ev.Test, "/")
	if logf == nil || len(parts) != 2 || (ev.Action != "pass" && ev.Action != "fail" && ev.Action != "skip") {
		return testFailed
	}
	if _, ok := checks.Lookup(parts[1]); ok {
		logf("%-4s %s (%.1fs)", strings.ToUpper(ev.Action), parts[1], ev.Elapsed)
	}
	return testFailed
}

func readEvents(path string) (*reports.Results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return reports.ParseEvents(f)
}
