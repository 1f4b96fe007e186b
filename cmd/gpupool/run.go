package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/explore"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/reports"
)

type runFlags struct {
	candidate, fleet, out, suites, provider string
	keep, serverSide                        bool
	explore                                 exploreFlags
}

// exploreFlags set how the exploration suite draws its pods.
type exploreFlags struct {
	seed   uint64
	budget string
}

func (e *exploreFlags) register(fs *pflag.FlagSet) {
	seed, _ := strconv.ParseUint(os.Getenv("GPUPOOL_EXPLORE_SEED"), 10, 64)
	fs.Uint64Var(&e.seed, "explore-seed", seed, "replay an exploration: the seed a run printed (default: a new one; env GPUPOOL_EXPLORE_SEED)")
	fs.StringVar(&e.budget, "explore-budget", os.Getenv("GPUPOOL_EXPLORE_BUDGET"), "exploration budget per rule: SHAPES or SHAPES/TIME, 0 turns it off (default 60/20s; env GPUPOOL_EXPLORE_BUDGET)")
}

// settle validates the budget and draws a seed when none was given, so the
// run can print it before anything starts.
func (e *exploreFlags) settle() (explore.Budget, error) {
	b, err := explore.ParseBudget(e.budget)
	if err != nil {
		return b, err
	}
	if e.seed == 0 {
		e.seed = explore.NewSeed()
	}
	return b, nil
}

// args are the suite-binary flags that carry the settings.
func (e exploreFlags) args(reportDir string) []string {
	// The suite runs in its package directory: a relative --out would land
	// there.
	if abs, err := filepath.Abs(reportDir); err == nil {
		reportDir = abs
	}
	out := []string{"--gpupool.explore-seed", strconv.FormatUint(e.seed, 10), "--gpupool.report-dir", reportDir}
	if e.budget != "" {
		out = append(out, "--gpupool.explore-budget", e.budget)
	}
	return out
}

func (f *runFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.candidate, "candidate", os.Getenv("CANDIDATE"), "candidate directory (default "+harness.DefaultCandidate+"; env CANDIDATE)")
	fs.StringVar(&f.fleet, "fleet", os.Getenv("FLEET"), "fleet file (default: the one candidate.yaml names, else "+harness.DefaultFleet+"; env FLEET)")
	registerProvider(fs, &f.provider)
	fs.BoolVar(&f.serverSide, "server-side", false, "install the candidate as 'kubectl apply --server-side' does, null fields kept (default: as 'kubectl apply' does, nulls pruned)")
}

func registerProvider(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "provider", os.Getenv("GPUPOOL_PROVIDER"), "cluster provider: "+strings.Join(harness.Providers, " or ")+" (default embedded; env GPUPOOL_PROVIDER)")
}

func runCommand() *cobra.Command {
	c := &cobra.Command{Use: "run", Short: "bring up a cluster, install the candidate, run the suites, report, tear down", Args: cobra.NoArgs}
	fs := c.Flags()
	var f runFlags
	f.register(fs)
	fs.StringVar(&f.out, "out", "", "report directory (default reports/out/<run-id>)")
	fs.StringVar(&f.suites, "suites", "./suites/...", "suite packages to run (go package pattern)")
	fs.BoolVar(&f.keep, "keep-cluster", false, "leave the cluster running after the run (remove it with 'gpupool down')")
	f.explore.register(fs)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		s, _, out, err := runContract(ctx, f)
		if err != nil {
			return err
		}
		s.PrintTable(os.Stdout)
		fmt.Printf("reports: %s\n", out)
		switch {
		case ctx.Err() != nil:
			return exitError{130} // interrupted: the README's exit code for a signal
		case s.Result == "pass":
			return nil
		case len(s.Checks) == 0:
			return exitError{2} // setup failed: no suite ran
		}
		return exitError{1}
	}
	return c
}

// runContract validates the inputs, builds the suites, runs them on a
// cluster it brings up and removes, and writes the reports to the out
// directory it returns.
func runContract(ctx context.Context, f runFlags) (*reports.Summary, *harness.Plan, string, error) {
	budget, err := f.explore.settle()
	if err != nil {
		return nil, nil, "", err
	}
	root, err := harness.RepoRoot()
	if err != nil {
		return nil, nil, "", err
	}
	// 1. Everything that can be checked without a cluster.
	plan, err := harness.Prepare(absOrEmpty(f.fleet), absOrEmpty(f.candidate))
	if err != nil {
		return nil, nil, "", err
	}
	plan.ServerSideApply = f.serverSide
	for _, w := range plan.Stack.Warnings() {
		logf("warning: candidate %s: %s", plan.Candidate.Dir, w)
	}
	runID := harness.NewRunName()
	out := f.out
	if out == "" {
		out = filepath.Join(root, "reports", "out", runID)
	}
	sweepWorkDirs()
	work, err := cluster.MakeWorkDir(workDirPrefix + "run-")
	if err != nil {
		return nil, nil, "", err
	}
	defer os.RemoveAll(work)
	// 2. Build the suites before starting anything, so a compile error
	// costs no cluster.
	suites, err := buildSuites(ctx, root, f.suites, work)
	if err != nil {
		return nil, nil, "", err
	}
	if budget.Shapes > 0 {
		logf("exploration: seed %d, %d shapes per rule within %s (replay with --explore-seed %d)", f.explore.seed, budget.Shapes, budget.Time, f.explore.seed)
	}
	s, err := execute(ctx, runSpec{id: runID, plan: plan, suites: suites, out: out, keep: f.keep, provider: f.provider, explore: f.explore})
	return s, plan, out, err
}

// runSpec is one run: a validated plan, built suites, where reports go.
type runSpec struct {
	id     string
	plan   *harness.Plan
	suites []suite
	out    string
	keep   bool
	// provider names the cluster provider ("" = embedded).
	provider string
	explore  exploreFlags
	// quiet: no line per finished check (runs side by side would
	// interleave them).
	quiet bool
}

// execute brings up a cluster for the plan, runs the suites against it,
// writes the reports and removes the cluster, whatever happens.
func execute(ctx context.Context, spec runSpec) (*reports.Summary, error) {
	started := time.Now()
	if err := os.MkdirAll(spec.out, 0o755); err != nil {
		return nil, err
	}
	plan := spec.plan
	logf("run %s: candidate %s, fleet %s", spec.id, plan.Candidate.Dir, plan.Fleet.File)
	provider, err := harness.NewProvider(spec.provider, spec.id)
	if err != nil {
		return nil, err
	}
	defer func() {
		if spec.keep && ctx.Err() == nil {
			logf("cluster %s kept; remove it with 'gpupool down'", spec.id)
			return
		}
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := provider.Down(dctx); err != nil {
			logf("tearing down %s: %v", spec.id, err)
		} else {
			logf("cluster %s removed", spec.id)
		}
	}()
	if spec.keep {
		provider.Detach()
	}
	summary := &reports.Summary{
		RunID: spec.id, StartedAt: started, Provider: provider.Kind(),
		Candidate: reports.Ref{Name: plan.Candidate.Name, Path: plan.Candidate.Dir, Fingerprint: plan.Candidate.Fingerprint()},
		Fleet:     reports.Ref{Name: plan.Fleet.Metadata.Name, Path: plan.Fleet.File},
	}
	r, err := harness.Up(ctx, plan, provider)
	if err != nil {
		if ctx.Err() != nil {
			// The signal, not the step it cut short, is what happened.
			err = fmt.Errorf("interrupted (%v) during setup; the cluster is removed", ctx.Err())
		}
		summary.Errors = append(summary.Errors, "setup: "+err.Error())
		return summary, finish(summary, nil, spec.out, started)
	}
	defer r.Stop()
	summary.Components = r.Cluster.Components

	// Suites, one binary at a time against the shared cluster.
	events := filepath.Join(spec.out, "events.json")
	ef, err := os.Create(events)
	if err != nil {
		return nil, err
	}
	for _, s := range spec.suites {
		if err := runSuite(ctx, s, r, provider.Kind(), spec.explore.args(filepath.Join(spec.out, "counterexamples")), spec.quiet, ef); err != nil {
			summary.Errors = append(summary.Errors, err.Error())
			if ctx.Err() != nil {
				break
			}
		}
	}
	ef.Close()
	res, err := readEvents(events)
	if err != nil {
		return nil, err
	}
	summary.Exploration = exploration(spec)
	return summary, finish(summary, res, spec.out, started)
}

// exploration records the run's exploration settings and the
// counterexamples its checks wrote.
func exploration(spec runSpec) *reports.Exploration {
	e := &reports.Exploration{Seed: spec.explore.seed, Budget: spec.explore.budget}
	if e.Budget == "" {
		e.Budget = "default"
	}
	files, _ := filepath.Glob(filepath.Join(spec.out, "counterexamples", "*.yaml"))
	for _, f := range files {
		if rel, err := filepath.Rel(spec.out, f); err == nil {
			e.Counterexamples = append(e.Counterexamples, rel)
		}
	}
	return e
}

func finish(s *reports.Summary, res *reports.Results, out string, started time.Time) error {
	if res != nil {
		s.Checks = onProvider(reports.Checks(res, checkInfo), s.Provider)
		sortByArea(s.Checks)
		s.Errors = append(s.Errors, packageErrors(res)...)
	}
	s.Duration = time.Since(started).Seconds()
	s.Finish()
	if err := s.Write(out); err != nil {
		return err
	}
	if err := s.WriteHTML(out); err != nil {
		return err
	}
	return s.WriteJUnit(out)
}

// onProvider leaves out the checks another provider makes: skipped here by
// design, they are not checks this run hid.
func onProvider(cs []reports.CheckResult, provider string) []reports.CheckResult {
	var out []reports.CheckResult
	for _, c := range cs {
		if chk, ok := checks.Lookup(c.ID); ok && !runsOn(chk, provider) {
			continue
		}
		out = append(out, c)
	}
	return out
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
	key, keyErr := suiteKey(ctx, root, pattern)
	if suiteCacheOff() {
		keyErr = errors.New("suite cache off")
	}
	if keyErr == nil {
		if cached := cachedSuites(key); cached != nil {
			logf("suites: %d built from these sources before (cache %s)", len(cached), key)
			return cached, nil
		}
	}
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
	if keyErr != nil {
		return suites, nil
	}
	return storeSuites(key, work, suites), nil
}

// runSuite runs one suite binary against the run's cluster (made by the
// named provider), converting its output to test2json events, appending
// them to w and printing each check's outcome as it ends. The binary and the converter are direct
// children with a parent-death signal, so even a SIGKILLed gpupool leaves
// no suite running.
func runSuite(ctx context.Context, s suite, r *harness.Run, provider string, extra []string, quiet bool, w io.Writer) error {
	suiteCmd := exec.CommandContext(ctx, s.bin, append([]string{
		"-test.v=test2json", "-test.count=1",
		"--kubeconfig", r.Cluster.Kubeconfig,
		"--gpupool.fleet", r.Fleet.File,
		"--gpupool.candidate", r.Candidate.Dir,
		// Checks only one provider can make are labelled with it.
		"--skip-labels", harness.OtherProvidersLabels(provider),
	}, extra...)...)
	suiteCmd.Dir = s.dir
	suiteCmd.Stderr = os.Stderr
	// SIGTERM first: e2e-framework then runs the features' teardowns.
	suiteCmd.Cancel = func() error { return suiteCmd.Process.Signal(syscall.SIGTERM) }
	suiteCmd.WaitDelay = 10 * time.Second
	// Own process group, so a terminal's Ctrl-C reaches gpupool alone and
	// gpupool decides how the suite stops.
	suiteCmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	conv := exec.Command("go", "tool", "test2json", "-t", "-p", s.pkg)
	conv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	conv.Stderr = os.Stderr
	pipe, err := suiteCmd.StdoutPipe()
	if err != nil {
		return err
	}
	conv.Stdin = pipe
	events, err := conv.StdoutPipe()
	if err != nil {
		return err
	}
	if err := conv.Start(); err != nil {
		return fmt.Errorf("go tool test2json: %w", err)
	}
	if err := suiteCmd.Start(); err != nil {
		_ = conv.Process.Kill()
		_ = conv.Wait()
		return err
	}
	sc := bufio.NewScanner(events)
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	testFailed := false
	for sc.Scan() {
		line := sc.Bytes()
		w.Write(append(line, '\n'))
		if progress(line, quiet) {
			testFailed = true
		}
	}
	suiteErr := suiteCmd.Wait()
	convErr := conv.Wait()
	if ctx.Err() != nil {
		return fmt.Errorf("suite %s interrupted: %w", s.pkg, ctx.Err())
	}
	if convErr != nil {
		return fmt.Errorf("go tool test2json for %s: %w", s.pkg, convErr)
	}
	var ee *exec.ExitError
	switch {
	case suiteErr == nil, errors.As(suiteErr, &ee) && testFailed:
		return nil // test failures are in the events
	case errors.As(suiteErr, &ee):
		// Exited non-zero with no failed test: TestMain or the binary
		// itself failed; its output is in the package events too.
		return fmt.Errorf("suite %s exited with %v before any check failed", s.pkg, suiteErr)
	}
	return suiteErr
}

// progress prints a line per finished check and reports whether the
// event is a failed test.
func progress(line []byte, quiet bool) (testFailed bool) {
	var ev reports.Event
	if json.Unmarshal(line, &ev) != nil {
		return false
	}
	testFailed = ev.Test != "" && ev.Action == "fail"
	parts := strings.Split(ev.Test, "/")
	if quiet || len(parts) != 2 || (ev.Action != "pass" && ev.Action != "fail" && ev.Action != "skip") {
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
