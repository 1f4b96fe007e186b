package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/reports"
)

type runFlags struct {
	candidate, fleet, out, suites string
	keep                          bool
}

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.candidate, "candidate", os.Getenv("CANDIDATE"), "candidate directory (default "+harness.DefaultCandidate+"; env CANDIDATE)")
	fs.StringVar(&f.fleet, "fleet", os.Getenv("FLEET"), "fleet file (default: the one candidate.yaml names, else "+harness.DefaultFleet+"; env FLEET)")
}

func runCmd(ctx context.Context, args []string) error {
	var f runFlags
	fs := flag.NewFlagSet("gpupool run", flag.ContinueOnError)
	f.register(fs)
	fs.StringVar(&f.out, "out", "", "report directory (default reports/out/<run-id>)")
	fs.StringVar(&f.suites, "suites", "./suites/...", "suite packages to run (go package pattern)")
	fs.BoolVar(&f.keep, "keep-cluster", false, "leave the cluster running after the run (remove it with 'gpupool down')")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := harness.RepoRoot()
	if err != nil {
		return err
	}
	started := time.Now()
	runID := harness.NewRunName()

	// 1. Everything that can be checked without a cluster.
	plan, err := harness.Prepare(absOrEmpty(f.fleet), absOrEmpty(f.candidate))
	if err != nil {
		return err
	}
	out := f.out
	if out == "" {
		out = filepath.Join(root, "reports", "out", runID)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "gpupool-run-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	logf("run %s: candidate %s, fleet %s", runID, plan.Candidate.Dir, plan.Fleet.File)

	// 2. Build the suites before starting anything, so a compile error
	// costs no cluster.
	suites, err := buildSuites(ctx, root, f.suites, work)
	if err != nil {
		return err
	}

	// 3. Cluster, fleet, candidate. Down runs whatever happens next.
	provider, err := harness.EmbeddedProvider(runID)
	if err != nil {
		return err
	}
	defer func() {
		if f.keep && ctx.Err() == nil {
			logf("cluster %s kept; remove it with 'gpupool down'", runID)
			return
		}
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := provider.Down(dctx); err != nil {
			logf("tearing down %s: %v", runID, err)
		} else {
			logf("cluster %s removed", runID)
		}
	}()
	if f.keep {
		provider.Detach()
	}
	summary := &reports.Summary{
		RunID: runID, StartedAt: started, Provider: provider.Kind(),
		Candidate: reports.Ref{Name: plan.Candidate.Name, Path: plan.Candidate.Dir},
		Fleet:     reports.Ref{Name: plan.Fleet.Metadata.Name, Path: plan.Fleet.File},
	}
	r, err := harness.Up(ctx, plan, provider)
	if err != nil {
		summary.Errors = append(summary.Errors, "setup: "+err.Error())
		return finish(summary, nil, out, started)
	}
	summary.Components = r.Cluster.Components

	// 4. Suites, one binary at a time against the shared cluster.
	events := filepath.Join(out, "events.json")
	ef, err := os.Create(events)
	if err != nil {
		return err
	}
	for _, s := range suites {
		if err := runSuite(ctx, s, r, ef); err != nil {
			summary.Errors = append(summary.Errors, err.Error())
			if ctx.Err() != nil {
				break
			}
		}
	}
	ef.Close()
	res, err := readEvents(events)
	if err != nil {
		return err
	}
	return finish(summary, res, out, started)
}

func finish(s *reports.Summary, res *reports.Results, out string, started time.Time) error {
	if res != nil {
		s.Checks = reports.Checks(res, checkInfo)
		sortByArea(s.Checks)
		s.Errors = append(s.Errors, packageErrors(res)...)
	}
	s.Duration = time.Since(started).Seconds()
	s.Finish()
	if err := s.Write(out); err != nil {
		return err
	}
	if err := s.WriteJUnit(out); err != nil {
		return err
	}
	s.PrintTable(os.Stdout)
	fmt.Printf("reports: %s\n", out)
	if s.Result != "pass" {
		return exitError{1}
	}
	return nil
}

func checkInfo(id string) (reports.CheckInfo, bool) {
	c, ok := checks.Lookup(id)
	if !ok {
		return reports.CheckInfo{}, false
	}
	title := c.Area
	for _, a := range checks.Areas {
		if a.ID == c.Area {
			title = a.Title
		}
	}
	return reports.CheckInfo{ID: c.ID, Area: c.Area, AreaTitle: title, Rule: c.Rule}, true
}

func sortByArea(cs []reports.CheckResult) {
	rank := map[string]int{}
	for i, a := range checks.Areas {
		rank[a.ID] = i
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if rank[cs[i].Area] != rank[cs[j].Area] {
			return rank[cs[i].Area] < rank[cs[j].Area]
		}
		return cs[i].ID < cs[j].ID
	})
}

// packageErrors reports suites that failed outside any check: TestMain
// setup errors, panics, builds that broke.
func packageErrors(res *reports.Results) []string {
	var errs []string
	for _, p := range res.Sorted() {
		if p.Result == "pass" || p.Result == "skip" {
			continue
		}
		failedTest := false
		for _, t := range res.Tests {
			if t.Package == p.Package && t.Result == "fail" {
				failedTest = true
			}
		}
		if failedTest {
			continue
		}
		tail := p.Output
		if len(tail) > 15 {
			tail = tail[len(tail)-15:]
		}
		name := p.Package
		if name == "" {
			name = "go test"
		}
		errs = append(errs, fmt.Sprintf("%s failed outside any check:\n%s", name, strings.Join(tail, "\n")))
	}
	return errs
}

type suite struct {
	pkg, dir, bin string
}

// buildSuites compiles each suite package's test binary into work.
func buildSuites(ctx context.Context, root, pattern, work string) ([]suite, error) {
	list := exec.CommandContext(ctx, "go", "list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{.Name}}\t{{len .TestGoFiles}}", pattern)
	list.Dir = root
	outb, err := list.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w%s", pattern, err, stderrOf(err))
	}
	var suites []suite
	var pkgs []string
	for _, line := range strings.Split(strings.TrimSpace(string(outb)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 || f[3] == "0" {
			continue
		}
		suites = append(suites, suite{pkg: f[0], dir: f[1], bin: filepath.Join(work, f[2]+".test")})
		pkgs = append(pkgs, f[0])
	}
	if len(suites) == 0 {
		return nil, fmt.Errorf("no suite packages with tests match %s", pattern)
	}
	logf("building %d suites", len(suites))
	build := exec.CommandContext(ctx, "go", append([]string{"test", "-c", "-o", work + "/"}, pkgs...)...)
	build.Dir = root
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("building suites: %w", err)
	}
	return suites, nil
}

// runSuite runs one suite binary against the run's cluster through
// test2json, appending its events to w and printing each check's outcome
// as it ends.
func runSuite(ctx context.Context, s suite, r *harness.Run, w io.Writer) error {
	args := []string{"tool", "test2json", "-t", "-p", s.pkg, s.bin,
		"-test.v=test2json", "-test.count=1",
		"--kubeconfig", r.Cluster.Kubeconfig,
		"--gpupool.fleet", r.Fleet.File,
		"--gpupool.candidate", r.Candidate.Dir,
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = s.dir
	cmd.Stderr = os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	// Own process group, so Ctrl-C reaches gpupool alone and it decides
	// how the suite stops.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		w.Write(append(line, '\n'))
		progress(line)
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		return fmt.Errorf("suite %s interrupted: %w", s.pkg, ctx.Err())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil // failures are in the events
	}
	return err
}

// progress prints a line per finished check.
func progress(line []byte) {
	var ev reports.Event
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	parts := strings.Split(ev.Test, "/")
	if len(parts) != 2 || (ev.Action != "pass" && ev.Action != "fail" && ev.Action != "skip") {
		return
	}
	if _, ok := checks.Lookup(parts[1]); ok {
		logf("%-4s %s (%.1fs)", strings.ToUpper(ev.Action), parts[1], ev.Elapsed)
	}
}

func readEvents(path string) (*reports.Results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return reports.ParseEvents(f)
}

func absOrEmpty(p string) string {
	if p == "" {
		return ""
	}
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}
