// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package runner runs a plan against a cluster and writes the run
// directory. It brings the cluster up (or attaches to one gpupool did not
// make) and removes it, or what the run made in it, whatever happens. In
// between, a contract run (Execute) runs each suite in a child process of
// the binary and turns its test2json output into the events, the summary
// and the reports; a scale run (Scale) drives a workload through the
// fleet and writes its figures (WriteScaleReport).
package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/gpupool/gpupool/e2e/candidate"
	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/operatorchart"
	"github.com/gpupool/gpupool/e2e/plan"
	"github.com/gpupool/gpupool/e2e/settings"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/upstream"
	"github.com/gpupool/gpupool/e2e/wait"
	"github.com/gpupool/gpupool/reports"
)

// Spec is one run: a validated plan, the suites to run, where reports go.
type Spec struct {
	// ID names the run, and the cluster it brings up.
	ID     string
	Plan   *plan.Plan
	Suites []*suite.Suite
	// Out is the run directory.
	Out  string
	Keep bool
	// Provider names the cluster provider ("" = embedded).
	Provider string
	Explore  Exploration
	// Quiet: no line per finished check (runs side by side would
	// interleave them).
	Quiet bool
	// SuiteParallelism caps the suites of one phase running at once
	// (suite.Suite.Phase); 0: all of them, 1: one after another.
	SuiteParallelism int
	// Existing is a cluster gpupool did not make (--kubeconfig): the run
	// installs the candidate there only with InstallCandidate, and
	// removes every object it made. DisruptiveNodes are the nodes its
	// disruptive checks may change (none: they are skipped).
	Existing         *cluster.Existing
	InstallCandidate bool
	SimulatePools    bool
	// StackImages run the simulated pools' stack in the cluster.
	StackImages     *harness.StackImages
	DisruptiveNodes string
	Output
}

// SimulatorLogFile, in a run's report directory, is the simulated stack's
// record of what it did: each pod's outcome on its node, each DRA pool it
// published, each reconcile that failed.
const SimulatorLogFile = "fakegpu.log"

// AutoscalerLogFile, in a run's report directory, is Karpenter's log when
// the fleet has autoscaled pools.
const AutoscalerLogFile = "karpenter.log"

// Output is where a run's progress goes.
type Output = harness.Output

// Exploration is how the exploration suite draws its pods (the run sets
// ReportDir).
type Exploration = settings.Explore

// Execute brings up a cluster for the plan (or attaches to spec.Existing),
// runs the suites against it, writes the reports into spec.Out and removes
// the cluster, or what the run made in it, whatever happens. A setup that
// failed is in the summary's errors; the error is for a run that could
// not report.
func Execute(ctx context.Context, spec Spec) (*reports.Summary, error) {
	started := time.Now()
	pl := spec.Plan
	spec.Logf("run %s: candidate %s, fleet %s", spec.ID, pl.Candidate.Dir, pl.Fleet.File)
	opt := harness.SessionOptions{ID: spec.ID, Existing: spec.Existing, Keep: spec.Keep, Output: spec.Output,
		Attach: harness.AttachOptions{InstallCandidate: spec.InstallCandidate, SimulatePools: spec.SimulatePools, StackImages: spec.StackImages, Autoscale: true}}
	if spec.Existing == nil {
		// First, so a machine without the control plane gets no report
		// directory, only the error saying where the binaries come from.
		var err error
		if opt.Provider, err = harness.NewProvider(spec.Provider, spec.ID); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(spec.Out, 0o755); err != nil {
		return nil, err
	}
	// What the simulated stack did, object by object, goes to a file of
	// the report: a record to read when a check's outcome surprises, not
	// progress for the console.
	simLog, err := os.Create(filepath.Join(spec.Out, SimulatorLogFile))
	if err != nil {
		return nil, err
	}
	defer simLog.Close()
	opt.Up.SimulatorLog, opt.Attach.Up.SimulatorLog = simLog, simLog
	if len(pl.Fleet.Autoscaled()) > 0 {
		// Karpenter's decisions (which node for which pod, which node it
		// removes and why), beside the stack's record.
		kpLog, err := os.Create(filepath.Join(spec.Out, AutoscalerLogFile))
		if err != nil {
			return nil, err
		}
		defer kpLog.Close()
		opt.Up.AutoscalerLog, opt.Attach.Up.AutoscalerLog = kpLog, kpLog
	}
	summary := newSummary(spec, opt.Kind(), started)
	if spec.Existing != nil {
		spec.Phasef("attaching to %s", spec.Existing.Kubeconfig)
	} else {
		spec.Phasef("bringing up the %s cluster, installing candidate %s, creating fleet %s", opt.Kind(), pl.Candidate.Name, pl.Fleet.Metadata.Name)
	}
	s, err := harness.Open(ctx, pl, opt)
	defer s.Close(ctx)
	if err != nil {
		if ctx.Err() != nil {
			// The signal, not the step it cut short, is what happened.
			summary.Interrupted = stopReason(ctx) + " during setup"
			if spec.Existing == nil {
				summary.Interrupted += "; the cluster is removed"
			}
			return summary, finish(summary, nil, spec.Out, started)
		}
		summary.Errors = append(summary.Errors, "setup: "+err.Error())
		return summary, finish(summary, nil, spec.Out, started)
	}
	return runSuites(ctx, spec, s.Run, opt.Kind(), summary, started)
}

func newSummary(spec Spec, provider string, started time.Time) *reports.Summary {
	pl := spec.Plan
	return &reports.Summary{
		RunID: spec.ID, StartedAt: started, Provider: provider,
		Candidate: reports.Ref{Name: pl.Candidate.Name, Path: pl.Candidate.Dir, Fingerprint: pl.Candidate.Fingerprint()},
		Fleet:     reports.Ref{Name: pl.Fleet.Metadata.Name, Path: pl.Fleet.File},
	}
}

// runSuites runs the suites one at a time against the run's cluster and
// writes the reports.
func runSuites(ctx context.Context, spec Spec, r *harness.Run, provider string, summary *reports.Summary, started time.Time) (*reports.Summary, error) {
	summary.Components = r.Cluster.Components
	skip := harness.OtherProvidersLabels(provider)
	if spec.Existing != nil && !spec.SimulatePools && spec.DisruptiveNodes == "" {
		skip += "," + checks.LabelDisruptive + "=true"
	}
	if spec.Existing != nil && !r.Autoscaler {
		// No autoscaler of gpupool's runs for this cluster it did not
		// make (harness.Run.autoscaleBeside says why).
		skip += "," + checks.LabelNeedsAutoscaler + "=true"
	}
	loaded, err := writeLoaded(spec, r)
	if err != nil {
		return nil, err
	}
	events := filepath.Join(spec.Out, "events.json")
	ef, err := os.Create(events)
	if err != nil {
		return nil, err
	}
	progress := spec.Log
	if spec.Quiet {
		progress = nil
	}
	// When the run is stopped, the checks still running are torn down:
	// what they report after this moment is no verdict.
	stopped := make(chan time.Time, 1)
	stopWatch := context.AfterFunc(ctx, func() { stopped <- time.Now() })
	// When the cluster's control plane stops answering, the suites are
	// stopped too: what a check reports without an apiserver is no
	// verdict on the contract.
	sctx, lost := watchControlPlane(ctx, r)
	// One lock for what the suites running side by side share: the
	// events file, the progress lines and the run's errors.
	var mu sync.Mutex
	evw := &lockedWriter{mu: &mu, w: ef}
	if progress != nil {
		log := progress
		progress = func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			log(format, args...)
		}
	}
	phases := schedule(spec.Suites, spec.SuiteParallelism)
	for i, phase := range phases {
		if sctx.Err() != nil {
			break // the stop or the loss, which the unjudged checks say
		}
		var names []string
		for _, s := range phase {
			names = append(names, s.Name)
		}
		what := fmt.Sprintf("suite %s (%d of %d)", names[0], i+1, len(phases))
		if len(phase) > 1 {
			what = fmt.Sprintf("suites %s side by side (%d of %d)", strings.Join(names, ", "), i+1, len(phases))
		}
		if slices.Contains(names, "explore") && spec.Explore.Budget != "0" {
			what += ": exploring each rule within its budget"
		}
		spec.Phasef("%s", what)
		var wg sync.WaitGroup
		for _, s := range phase {
			wg.Go(func() {
				if err := runSuite(sctx, s, r, loaded, skip, progress, evw); err != nil && sctx.Err() == nil {
					mu.Lock()
					summary.Errors = append(summary.Errors, err.Error())
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	lostAt, why := lost()
	ef.Close()
	var stoppedAt time.Time
	if !stopWatch() {
		stoppedAt = <-stopped // the run was stopped: when
	}
	res, err := readEvents(events)
	if err != nil {
		return nil, err
	}
	summary.Exploration = exploration(spec)
	switch {
	case ctx.Err() != nil && !stoppedAt.IsZero():
		return summary, finishInterrupted(summary, res, spec.Out, started, stoppedAt, stopReason(ctx))
	case !lostAt.IsZero():
		spec.Log("%s: the checks not yet judged are errors, not failures", why)
		return summary, finishLost(summary, res, spec.Out, started, lostAt, why)
	}
	return summary, finish(summary, res, spec.Out, started)
}

// schedule groups the suites into the phases a run takes in order: the
// suites of one suite.Suite.Phase side by side, at most parallelism at
// once (0: all; 1: each alone, in the same order). A suite in no phase
// runs alone after the others.
func schedule(suites []*suite.Suite, parallelism int) [][]*suite.Suite {
	sorted := slices.Clone(suites)
	slices.SortStableFunc(sorted, func(a, b *suite.Suite) int {
		pa, pb := a.Phase, b.Phase
		if pa == 0 {
			pa = math.MaxInt
		}
		if pb == 0 {
			pb = math.MaxInt
		}
		return cmp.Compare(pa, pb)
	})
	var out [][]*suite.Suite
	for i, s := range sorted {
		last := len(out) - 1
		if i > 0 && s.Phase != 0 && s.Phase == sorted[i-1].Phase && (parallelism <= 0 || len(out[last]) < parallelism) {
			out[last] = append(out[last], s)
			continue
		}
		out = append(out, []*suite.Suite{s})
	}
	return out
}

// lockedWriter serializes whole writes (one event line each) of suites
// running side by side.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Watching the control plane: probed every controlPlaneProbe, lost after
// controlPlaneMisses probes in a row go unanswered (about 10 s: longer
// than a busy apiserver's pause, shorter than a check's wait).
const (
	controlPlaneProbe  = 2 * time.Second
	controlPlaneMisses = 5
)

// watchControlPlane returns a context for the suites that ends when ctx
// does or when the run's apiserver stops answering /livez, and lost,
// which stops the watch and says when the apiserver last answered before
// it went away, and why (zero: it never went away).
func watchControlPlane(ctx context.Context, r *harness.Run) (context.Context, func() (time.Time, string)) {
	sctx, cancel := context.WithCancelCause(ctx)
	probe := func() error {
		pctx, pcancel := context.WithTimeout(ctx, controlPlaneProbe)
		defer pcancel()
		_, err := r.Client.Discovery().RESTClient().Get().AbsPath("/livez").DoRaw(pctx)
		return err
	}
	gone := func(since time.Time, err error) string {
		return fmt.Sprintf("the cluster's control plane (%s) stopped answering after %s: %v", r.Cluster.REST.Host, since.Format("15:04:05"), err)
	}
	done, finished := make(chan struct{}), make(chan struct{})
	// A check cut off may have failed on a refused connection before the
	// first unanswered probe: what ended after the last answer is
	// unjudged.
	lastAnswer := time.Now()
	var lostAt time.Time
	var why string
	go func() {
		defer close(finished)
		t := time.NewTicker(controlPlaneProbe)
		defer t.Stop()
		misses := 0
		for {
			select {
			case <-done:
				return
			case <-sctx.Done():
				return
			case <-t.C:
			}
			err := probe()
			if err == nil || ctx.Err() != nil {
				misses, lastAnswer = 0, time.Now()
				continue
			}
			if misses++; misses >= controlPlaneMisses {
				lostAt, why = lastAnswer, gone(lastAnswer, err)
				cancel(errors.New(why))
				return
			}
		}
	}()
	return sctx, func() (time.Time, string) {
		close(done)
		<-finished
		cancel(nil)
		// Suites that fail at once without an apiserver can all end
		// before the watch has missed enough answers: ask once more.
		if lostAt.IsZero() && ctx.Err() == nil {
			if err := retryProbe(ctx, probe); err != nil {
				lostAt, why = lastAnswer, gone(lastAnswer, err)
			}
		}
		return lostAt, why
	}
}

// retryProbe is nil as soon as probe answers, else probe's last error
// once controlPlaneMisses probes, controlPlaneProbe apart, went unanswered.
func retryProbe(ctx context.Context, probe func() error) error {
	var last error
	err := wait.Every(ctx, "the cluster's control plane to answer /livez", controlPlaneMisses*controlPlaneProbe, controlPlaneProbe, func(context.Context) (bool, string, error) {
		last = probe()
		if last != nil {
			return false, last.Error(), nil
		}
		return true, "", nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

// exploration records the run's exploration settings and the
// counterexamples its checks wrote.
func exploration(spec Spec) *reports.Exploration {
	e := &reports.Exploration{Seed: spec.Explore.Seed, Budget: spec.Explore.Budget, Budgets: spec.Explore.Budgets}
	if e.Budget == "" {
		e.Budget = "default"
	}
	files, _ := filepath.Glob(filepath.Join(spec.Out, "counterexamples", "*.yaml"))
	for _, f := range files {
		if rel, err := filepath.Rel(spec.Out, f); err == nil {
			e.Counterexamples = append(e.Counterexamples, rel)
		}
	}
	return e
}

// SnapshotCluster writes the config the cluster runs now into dir, as the
// candidate a run checks it against, and returns dir.
func SnapshotCluster(ctx context.Context, e *cluster.Existing, dir string, logf func(format string, args ...any)) (string, error) {
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
	recordOperatorRelease(ctx, c.REST, dir, logf)
	return dir, nil
}

// recordOperatorRelease writes the GPU Operator's Helm releases the
// cluster has (chart version and values) into dir/helm, beside the
// objects they made: the values are what the team changes, and the chart
// version which Operator runs. A cluster whose Secrets the run may not
// list only loses that record.
func recordOperatorRelease(ctx context.Context, rc *rest.Config, dir string, logf func(format string, args ...any)) {
	cs, err := kubernetes.NewForConfig(rc)
	if err == nil {
		var rels []operatorchart.Installed
		if rels, err = operatorchart.FindInstalled(ctx, cs); err == nil {
			for _, rel := range rels {
				if err = writeRelease(filepath.Join(dir, "helm"), rel); err != nil {
					break
				}
				note := ""
				if rel.ChartVersion != upstream.GPUOperatorRelease {
					note = "; gpupool's simulated stack and its facts are of " + upstream.GPUOperatorRelease + ", the checks read this cluster's own objects"
				}
				logf("the GPU Operator is Helm release %s/%s, revision %d, chart %s %s: its values are in %s%s", rel.Namespace, rel.Release, rel.Revision, rel.Chart, rel.ChartVersion, filepath.Join(dir, "helm"), note)
			}
		}
	}
	if err != nil {
		logf("the GPU Operator's Helm release not recorded: %v", err)
	}
}

func writeRelease(dir string, rel operatorchart.Installed) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := yaml.Marshal(rel)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, rel.Namespace+"-"+rel.Release+".yaml"), b, 0o644)
}

// loadedPlan is where a run wrote the candidate and fleet it loaded, and
// the settings its suites read.
type loadedPlan struct{ candidate, fleet, settings string }

// writeLoaded writes the candidate and fleet the run loaded, validated
// and installed into the run directory (loaded/candidate, loaded/
// fleet.yaml), and the suites' settings naming them (loaded/
// settings.json). The suites read these, never the source: a candidate or
// fleet edited while the run goes on changes nothing it checks, and the
// run directory shows exactly what was checked, and how.
func writeLoaded(spec Spec, r *harness.Run) (loadedPlan, error) {
	dir, err := filepath.Abs(filepath.Join(spec.Out, "loaded"))
	if err != nil {
		return loadedPlan{}, err
	}
	l := loadedPlan{candidate: filepath.Join(dir, "candidate"), fleet: filepath.Join(dir, "fleet.yaml"), settings: filepath.Join(dir, "settings.json")}
	if err := os.RemoveAll(dir); err != nil {
		return l, err
	}
	if err := r.Candidate.WriteLoaded(l.candidate); err != nil {
		return l, fmt.Errorf("writing the loaded candidate into %s: %w", l.candidate, err)
	}
	if err := fleet.WriteFile(r.Fleet, l.fleet); err != nil {
		return l, fmt.Errorf("writing the loaded fleet into %s: %w", l.fleet, err)
	}
	set := suiteSettings(spec, l)
	set.Autoscaler = r.Autoscaler
	if err := set.WriteFile(l.settings); err != nil {
		return l, fmt.Errorf("writing the suites' settings into %s: %w", l.settings, err)
	}
	return l, nil
}

// suiteSettings are what the run tells its suites.
func suiteSettings(spec Spec, l loadedPlan) settings.Settings {
	s := settings.Settings{
		RunID: spec.ID, Fleet: l.fleet, Candidate: l.candidate,
		SimulatedPools: spec.SimulatePools, Explore: spec.Explore,
		Disposable: spec.Existing == nil && !spec.Keep,
	}
	// The suites run in their package directories: a relative directory
	// would land there.
	s.Explore.ReportDir, _ = filepath.Abs(filepath.Join(spec.Out, "counterexamples"))
	if spec.Existing != nil {
		for n := range strings.SplitSeq(spec.DisruptiveNodes, ",") {
			if n = strings.TrimSpace(n); n != "" {
				s.DisruptiveNodes = append(s.DisruptiveNodes, n)
			}
		}
	}
	return s
}

// stopReason says what stopped the run: a signal, or a deadline.
func stopReason(ctx context.Context) string {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return "stopped: " + cause.Error()
	}
	return "stopped by a signal"
}
