package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"

	"github.com/gpupool/gpupool/e2e/candidate"
	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/dirs"
	"github.com/gpupool/gpupool/e2e/explore"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/plan"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/reports"
	"github.com/gpupool/gpupool/suites"
)

type runFlags struct {
	candidate, fleet, out, suites, provider string
	keep, serverSide                        bool
	explore                                 exploreFlags
	target                                  targetFlags
}

// targetFlags point a run at a cluster gpupool did not make.
type targetFlags struct {
	kubeconfig, context, disruptiveNodes string
	simulate                             bool
}

func (t *targetFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&t.kubeconfig, "kubeconfig", "", "check this existing cluster instead of bringing one up: as configured (nothing installed) unless --candidate is given, then the candidate is installed first and removed after; its nodes must carry gpupool.dev/pool=<pool>")
	fs.StringVar(&t.context, "context", "", "the kubeconfig context to use (default its current one)")
	fs.BoolVar(&t.simulate, "simulate-pools", false, "with --kubeconfig: join the fleet to the cluster as simulated nodes (a kwok and a fakegpu controller run here for them alone) instead of checking the nodes it has")
	fs.StringVar(&t.disruptiveNodes, "disruptive-nodes", "", "with --kubeconfig: the nodes disruptive checks (device plugin down, Xid, MIG relabel) may change, comma-separated; without it they are skipped")
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
	fs.StringVar(&f.candidate, "candidate", os.Getenv("CANDIDATE"), "candidate directory (default: the built-in "+plan.DefaultCandidate+"; env CANDIDATE)")
	fs.StringVar(&f.fleet, "fleet", os.Getenv("FLEET"), "fleet file (default: the one candidate.yaml names, else the built-in "+plan.DefaultFleet+"; env FLEET)")
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
	fs.StringVar(&f.out, "out", "", "report directory (default <run-id> in reports/out of a gpupool checkout, else in ./gpupool-reports)")
	fs.StringVar(&f.suites, "suites", "", "suites to run, comma-separated (default all: "+suiteNames()+")")
	fs.BoolVar(&f.keep, "keep-cluster", false, "leave the cluster running after the run (remove it with 'gpupool down')")
	f.explore.register(fs)
	f.target.register(fs)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		s, _, out, err := runContract(ctx, f)
		setPhase("")
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
func runContract(ctx context.Context, f runFlags) (*reports.Summary, *plan.Plan, string, error) {
	budget, err := f.explore.settle()
	if err != nil {
		return nil, nil, "", err
	}
	runID := harness.NewRunName()
	out := f.out
	if out == "" {
		out = filepath.Join(dirs.ReportsDir(), runID)
	}
	existing, err := f.target.existing(f.provider)
	if err != nil {
		return nil, nil, "", err
	}
	candidateDir := absOrEmpty(f.candidate)
	if existing != nil && candidateDir == "" {
		// As configured: the cluster's own config is the candidate.
		if candidateDir, err = snapshotCluster(ctx, existing, filepath.Join(out, "cluster-config")); err != nil {
			return nil, nil, "", err
		}
	}
	// 1. Everything that can be checked without a cluster.
	pl, err := plan.Prepare(absOrEmpty(f.fleet), candidateDir)
	if err != nil {
		return nil, nil, "", err
	}
	pl.ServerSideApply = f.serverSide
	for _, w := range pl.Stack.Warnings() {
		logf("warning: candidate %s: %s", pl.Candidate.Dir, w)
	}
	// 2. Select the suites before starting anything, so a wrong name
	// costs no cluster.
	suites, err := suites.Select(f.suites)
	if err != nil {
		return nil, nil, "", err
	}
	if budget.Shapes > 0 {
		logf("exploration: seed %d, %d shapes per rule within %s (replay with --explore-seed %d)", f.explore.seed, budget.Shapes, budget.Time, f.explore.seed)
	}
	s, err := execute(ctx, runSpec{id: runID, plan: pl, suites: suites, out: out, keep: f.keep, provider: f.provider, explore: f.explore,
		existing: existing, installCandidate: f.candidate != "", simulatePools: f.target.simulate, disruptiveNodes: f.target.disruptiveNodes})
	return s, pl, out, err
}

// runSpec is one run: a validated plan, built suites, where reports go.
type runSpec struct {
	id     string
	plan   *plan.Plan
	suites []*suite.Suite
	out    string
	keep   bool
	// provider names the cluster provider ("" = embedded).
	provider string
	explore  exploreFlags
	// quiet: no line per finished check (runs side by side would
	// interleave them).
	quiet bool
	// existing is a cluster gpupool did not make (--kubeconfig): the run
	// installs the candidate there only with installCandidate, and
	// removes every object it made. disruptiveNodes are the nodes its
	// disruptive checks may change (none: they are skipped).
	existing         *cluster.Existing
	installCandidate bool
	simulatePools    bool
	disruptiveNodes  string
}

// execute brings up a cluster for the plan, runs the suites against it,
// writes the reports and removes the cluster, whatever happens.
func execute(ctx context.Context, spec runSpec) (*reports.Summary, error) {
	started := time.Now()
	plan := spec.plan
	logf("run %s: candidate %s, fleet %s", spec.id, plan.Candidate.Dir, plan.Fleet.File)
	var provider harness.Provider
	if spec.existing == nil {
		// First, so a machine without the control plane gets no report
		// directory, only the error saying where the binaries come from.
		var err error
		if provider, err = harness.NewProvider(spec.provider, spec.id); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(spec.out, 0o755); err != nil {
		return nil, err
	}
	if spec.existing != nil {
		return executeAttached(ctx, spec, started)
	}
	defer func() {
		if spec.keep && ctx.Err() == nil {
			logf("cluster %s kept; remove it with 'gpupool down'", spec.id)
			return
		}
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		setPhase("removing cluster %s", spec.id)
		if err := provider.Down(dctx); err != nil {
			logf("tearing down %s: %v", spec.id, err)
		} else {
			logf("cluster %s removed", spec.id)
		}
	}()
	if spec.keep {
		provider.Detach()
	}
	summary := newSummary(spec, provider.Kind(), started)
	setPhase("bringing up the %s cluster, installing candidate %s, creating fleet %s", provider.Kind(), plan.Candidate.Name, plan.Fleet.Metadata.Name)
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
	return runSuites(ctx, spec, r, provider.Kind(), summary, started)
}

func newSummary(spec runSpec, provider string, started time.Time) *reports.Summary {
	plan := spec.plan
	return &reports.Summary{
		RunID: spec.id, StartedAt: started, Provider: provider,
		Candidate: reports.Ref{Name: plan.Candidate.Name, Path: plan.Candidate.Dir, Fingerprint: plan.Candidate.Fingerprint()},
		Fleet:     reports.Ref{Name: plan.Fleet.Metadata.Name, Path: plan.Fleet.File},
	}
}

// executeAttached is execute on a cluster gpupool did not make: it
// installs nothing unless asked, and removes every object the run made in
// it, whatever happens.
func executeAttached(ctx context.Context, spec runSpec, started time.Time) (*reports.Summary, error) {
	harness.SetRunID(spec.id)
	summary := newSummary(spec, spec.existing.Kind(), started)
	var r *harness.Run
	defer func() {
		if r == nil || r.Cluster == nil {
			return
		}
		// Objects first, while the run's kwok still finishes its pods'
		// deletion; then the run's own controllers.
		defer r.Stop()
		setPhase("removing what run %s made in %s", spec.id, r.Cluster.Name)
		dctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		n, err := harness.RemoveOwned(dctx, r.Cluster.REST, spec.id, 2*time.Minute)
		if err != nil {
			logf("removing what run %s made in %s: %v (retry with 'gpupool down --kubeconfig %s')", spec.id, r.Cluster.Name, err, spec.existing.Kubeconfig)
			return
		}
		logf("removed the %d objects run %s made in %s", n, spec.id, r.Cluster.Name)
	}()
	var err error
	setPhase("attaching to %s", spec.existing.Kubeconfig)
	r, err = harness.AttachTo(ctx, spec.plan, spec.existing, harness.AttachOptions{InstallCandidate: spec.installCandidate, SimulatePools: spec.simulatePools})
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("interrupted (%v) during setup", ctx.Err())
		}
		summary.Errors = append(summary.Errors, "setup: "+err.Error())
		return summary, finish(summary, nil, spec.out, started)
	}
	return runSuites(ctx, spec, r, spec.existing.Kind(), summary, started)
}

// runSuites runs the suites one at a time against the run's cluster and
// writes the reports.
func runSuites(ctx context.Context, spec runSpec, r *harness.Run, provider string, summary *reports.Summary, started time.Time) (*reports.Summary, error) {
	summary.Components = r.Cluster.Components
	extra := spec.explore.args(filepath.Join(spec.out, "counterexamples"))
	extra = append(extra, "--gpupool.run-id", spec.id)
	if spec.simulatePools {
		extra = append(extra, "--gpupool.simulated-pools")
	}
	if spec.existing != nil && spec.disruptiveNodes != "" {
		extra = append(extra, "--gpupool.disruptive-nodes", spec.disruptiveNodes)
	}
	skip := harness.OtherProvidersLabels(provider)
	if spec.existing != nil && !spec.simulatePools && spec.disruptiveNodes == "" {
		skip += "," + checks.LabelDisruptive + "=true"
	}
	events := filepath.Join(spec.out, "events.json")
	ef, err := os.Create(events)
	if err != nil {
		return nil, err
	}
	for i, s := range spec.suites {
		what := fmt.Sprintf("suite %s (%d of %d)", s.Name, i+1, len(spec.suites))
		if s.Name == "explore" && spec.explore.budget != "0" {
			what += ": exploring each rule within its budget"
		}
		setPhase("%s", what)
		if err := runSuite(ctx, s, r, skip, extra, spec.quiet, ef); err != nil {
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

// suiteExecArg is the first argument of the child process a suite runs in:
// gpupool runs itself, so the suite has a process of its own (its global
// flags, its exit) that a signal can stop with the features' teardowns.
const suiteExecArg = "__suite"

// suiteExec is the child: it runs the named suite with go test's flags and
// returns the exit code.
func suiteExec(name string, args []string) int {
	ss, err := suites.Select(name)
	if err != nil || len(ss) != 1 {
		fmt.Fprintf(os.Stderr, "gpupool %s: %v\n", suiteExecArg, err)
		return 2
	}
	return suite.RunLinked(ss[0], args)
}

// runSuite runs one suite against the run's cluster (made by the named
// provider) in a child process, converting its output to test2json events,
// appending them to w and printing each check's outcome as it ends. The
// child has a parent-death signal, so even a SIGKILLed gpupool leaves no
// suite running.
func runSuite(ctx context.Context, s *suite.Suite, r *harness.Run, skipLabels string, extra []string, quiet bool, w io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this binary to run suite %s: %w", s.Name, err)
	}
	suiteCmd := exec.CommandContext(ctx, self, append([]string{
		suiteExecArg, s.Name,
		"-test.v=test2json", "-test.count=1",
		"--kubeconfig", r.Cluster.Kubeconfig,
		"--gpupool.fleet", r.Fleet.File,
		"--gpupool.candidate", r.Candidate.Dir,
		// Checks only one provider can make are labelled with it.
		"--skip-labels", skipLabels,
	}, extra...)...)
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
		if progress(ev, quiet) {
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
func progress(ev reports.Event, quiet bool) (testFailed bool) {
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

func suiteNames() string {
	var names []string
	for _, s := range suites.All {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

// existing returns the cluster --kubeconfig names, or nil.
func (t targetFlags) existing(provider string) (*cluster.Existing, error) {
	if t.kubeconfig == "" {
		if t.context != "" || t.disruptiveNodes != "" || t.simulate {
			return nil, errors.New("--context, --simulate-pools and --disruptive-nodes go with --kubeconfig")
		}
		return nil, nil
	}
	if provider != "" {
		return nil, fmt.Errorf("--kubeconfig checks an existing cluster; --provider %s brings one up: pass one or the other", provider)
	}
	if _, err := os.Stat(t.kubeconfig); err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	return &cluster.Existing{Kubeconfig: absOrEmpty(t.kubeconfig), Context: t.context}, nil
}

// snapshotCluster writes the config the cluster runs now into dir, as the
// candidate a run checks it against.
func snapshotCluster(ctx context.Context, e *cluster.Existing, dir string) (string, error) {
	c, err := e.Up(ctx)
	if err != nil {
		return "", err
	}
	dyn, err := dynamic.NewForConfig(c.REST)
	if err != nil {
		return "", err
	}
	cand, err := candidate.Snapshot(ctx, dyn, dir, c.REST.Host)
	if err != nil {
		return "", err
	}
	logf("cluster %s as configured: %d objects of GPU pool config read into %s (%s)", c.Name, len(cand.Objects), dir, cand.Fingerprint())
	return dir, nil
}
