// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build e2e

// End-to-end tests of the gpupool command: real embedded clusters, real
// suites. Run with `make test-e2e` (go test -tags e2e ./cmd/gpupool).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/gpupool/gpupool/e2e/candidate"
	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/runner"
	"github.com/gpupool/gpupool/e2e/scale"
	"github.com/gpupool/gpupool/e2e/wait"
	"github.com/gpupool/gpupool/reports"
)

var (
	gpupoolBin string
	repoRoot   string
)

func TestMain(m *testing.M) {
	wd, _ := os.Getwd()
	repoRoot = filepath.Clean(filepath.Join(wd, "..", ".."))
	dir, err := os.MkdirTemp("", "gpupool-cli-test-")
	if err != nil {
		panic(err)
	}
	gpupoolBin = filepath.Join(dir, "gpupool")
	build := exec.Command("go", "build", "-o", gpupoolBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building gpupool:", err)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result of one gpupool invocation.
type result struct {
	exit           int
	stdout, stderr string
	out            string // report directory
	state          string // GPUPOOL_STATE used
}

// gpupool runs the command with its own state dir and report dir.
func gpupool(t *testing.T, args ...string) result {
	t.Helper()
	state := t.TempDir()
	return invoke(t, gpupoolBin, repoRoot, append(os.Environ(), "GPUPOOL_STATE="+state), state, args...)
}

// invoke runs bin in dir with env (whose GPUPOOL_STATE is state); a run
// writes its reports to a directory of its own.
func invoke(t *testing.T, bin, dir string, env []string, state string, args ...string) result {
	t.Helper()
	r := result{out: t.TempDir(), state: state}
	if args[0] == "run" {
		args = append(args, "--out", r.out)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, env
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r.stdout, r.stderr = so.String(), se.String()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.exit = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	t.Logf("gpupool %s: exit %d\n%s\n%s", strings.Join(args, " "), r.exit, r.stdout, r.stderr)
	return r
}

func failedChecks(t *testing.T, s *reports.Summary) []string {
	var failed []string
	for _, c := range s.Checks {
		if c.Result != "pass" {
			failed = append(failed, c.ID)
			assert.NotEmpty(t, c.Message, "check %s failed without saying why", c.ID)
		}
	}
	sort.Strings(failed)
	return failed
}

// assertReferencePasses holds the main job's promise for a run of the
// reference: every check the embedded cluster can make ran and passed,
// none skipped, and the JUnit file agrees with the summary.
func assertReferencePasses(t *testing.T, r result) {
	t.Helper()
	require.Equal(t, 0, r.exit, "stderr:\n%s", r.stderr)
	s, err := reports.ReadSummary(r.out)
	require.NoError(t, err)
	assert.Equal(t, "pass", s.Result)
	assert.Empty(t, failedChecks(t, s))
	embedded := 0
	for _, c := range checks.All() {
		if c.Provider == "" || c.Provider == "embedded" {
			embedded++
		}
	}
	assert.Equal(t, embedded, s.Totals.Checks, "every check in the catalog the embedded cluster can make ran")
	// The reference fleet has every kind of pool, so no check or assessment
	// may skip: a skip there would hide a check from CI.
	assert.Zero(t, s.Totals.Skipped, "skipped checks on the reference")
	for _, c := range s.Checks {
		for _, a := range c.Assessments {
			assert.NotEqual(t, "skip", a.Result, "%s: assessment %q skipped on the reference", c.ID, a.Name)
		}
	}
	assert.Equal(t, "v1.37.2", s.Components["kubernetes"])
	assert.Contains(t, r.stdout, "AREA")
	// The simulator's record goes to the report, not the console.
	sim, err := os.ReadFile(filepath.Join(r.out, runner.SimulatorLogFile))
	require.NoError(t, err)
	assert.Contains(t, string(sim), "DRA pool at generation", "the reference's DRA pools are published")
	assert.NotContains(t, r.stderr, "DRA pool at generation", "the simulator's record is in %s, not on the console", runner.SimulatorLogFile)

	var junit struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	data, err := os.ReadFile(filepath.Join(r.out, "junit.xml"))
	require.NoError(t, err)
	require.NoError(t, xml.Unmarshal(data, &junit))
	assert.Equal(t, s.Totals.Checks, junit.Tests)
	assert.Zero(t, junit.Failures)
}

// The reference without its admission policy fails exactly the admission
// checks, each with a message saying what was expected and what happened.
// (`gpupool mutants`, run by `make mutants`, does this for every broken
// candidate.)
func TestBrokenCandidateFailsExactlyItsChecks(t *testing.T) {
	dirs := []string{filepath.Join(repoRoot, "manifests", "candidates", "broken-no-admission-policy")}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			c, err := candidate.Load(dir)
			require.NoError(t, err)
			require.NotEmpty(t, c.Meta.Spec.Breaks, "%s: spec.breaks must list the checks it breaks", dir)
			for _, id := range c.Meta.Spec.Breaks {
				_, ok := checks.Lookup(id)
				require.True(t, ok, "%s: spec.breaks names unknown check %q", dir, id)
			}
			// One suite at a time: `make mutants` holds every mutant to
			// its list with the suites side by side; this one is held to
			// the same list with them one after another (#27: a verdict
			// does not change with the parallelism).
			r := gpupool(t, "run", "--candidate", dir, "--suite-parallelism", "1")
			assert.Equal(t, 1, r.exit, "a broken candidate must fail the run; stderr:\n%s", r.stderr)
			s, err := reports.ReadSummary(r.out)
			require.NoError(t, err)
			assert.Empty(t, s.Errors, "the run itself must work")
			want := append([]string(nil), c.Meta.Spec.Breaks...)
			sort.Strings(want)
			assert.Equal(t, want, failedChecks(t, s))
			for _, ch := range s.Checks {
				if ch.Result != "pass" {
					assert.Regexp(t, `expected .* but `, ch.Message, "check %s must say what was expected and what happened", ch.ID)
				}
			}
			assertReportReadable(t, r.out, want[0])
			assertNothingLeft(t, r.state, "")
		})
	}
}

func TestBadInputStopsBeforeAnyCluster(t *testing.T) {
	tmp := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(tmp, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	unknownSKU := write("unknown-sku.yaml", `apiVersion: gpupool.dev/v1alpha1
kind: Fleet
metadata: {name: bad}
spec:
  pools:
    - {name: gpu, sku: h900, nodes: 1, gpusPerNode: 8}
`)
	malformed := write("malformed.yaml", "apiVersion: gpupool.dev/v1alpha1\nkind: Fleet\nspec: [\n")
	huge := write("huge.yaml", `apiVersion: gpupool.dev/v1alpha1
kind: Fleet
metadata: {name: huge}
spec:
  pools:
    - {name: gpu, sku: h100-80gb, nodes: 1, gpusPerNode: 2000000000}
`)
	fifo := filepath.Join(tmp, "fifo.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	zero := filepath.Join(tmp, "zero.yaml")
	require.NoError(t, os.Symlink("/dev/zero", zero))
	fifoCandidate := filepath.Join(tmp, "fifo-cand")
	require.NoError(t, os.MkdirAll(fifoCandidate, 0o755))
	require.NoError(t, syscall.Mkfifo(filepath.Join(fifoCandidate, "10-policy.yaml"), 0o644))
	badCandidate := filepath.Join(tmp, "cand")
	require.NoError(t, os.MkdirAll(badCandidate, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(badCandidate, "10-rc.yaml"), []byte("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nhandler: nvidia\n"), 0o644))

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown SKU", []string{"--fleet", unknownSKU}, []string{unknownSKU, "spec.pools[0] (gpu).sku", `unknown GPU SKU "h900"`, "h100-80gb"}},
		{"malformed fleet", []string{"--fleet", malformed}, []string{malformed, "malformed fleet"}},
		{"candidate object without a name", []string{"--candidate", badCandidate}, []string{"10-rc.yaml", "document 1", "metadata.name: required"}},
		{"missing candidate", []string{"--candidate", filepath.Join(tmp, "nope")}, []string{"nope", "no such file"}},
		{"two billion GPUs on a node", []string{"--fleet", huge}, []string{huge, "gpusPerNode: must be 1 to 16 for a GPU pool, got 2000000000"}},
		{"a FIFO as the fleet", []string{"--fleet", fifo}, []string{fifo, "is a named pipe (FIFO)"}},
		{"/dev/zero as the fleet", []string{"--fleet", zero}, []string{zero, "is a device"}},
		{"a FIFO in the candidate", []string{"--candidate", fifoCandidate}, []string{"10-policy.yaml", "is a named pipe (FIFO)"}},
		{"stack images without simulated pools", []string{"--kwok-image", "k:1", "--fakegpu-image", "f:1"}, []string{"--kwok-image and --fakegpu-image", "go with --kubeconfig (and, for gpupool run, --simulate-pools)"}},
		{"half a stack in the cluster", []string{"--kubeconfig", malformed, "--simulate-pools", "--kwok-image", "k:1"}, []string{"--kwok-image and --fakegpu-image go together"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := gpupool(t, append([]string{"run"}, tc.args...)...)
			assert.Equal(t, 2, r.exit)
			for _, w := range tc.want {
				assert.Contains(t, r.stderr, w)
			}
			assert.NotContains(t, r.stderr, "cluster gpupool-", "no cluster may start on bad input")
			assertNothingLeft(t, r.state, "")
		})
	}
}

// gpupool explain with no cluster to ask says so in its own words: no
// client-go log line suggesting the in-cluster config or
// KUBERNETES_MASTER, and exit 2. With -v the client's own lines return.
func TestExplainWithoutAClusterSaysWhatToGive(t *testing.T) {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "KUBECONFIG=") {
			env = append(env, e)
		}
	}
	state := t.TempDir()
	r := invoke(t, gpupoolBin, repoRoot, append(env, "GPUPOOL_STATE="+state), state, "explain", "tenant-a/trainer")
	assert.Equal(t, 2, r.exit)
	assert.Equal(t, "gpupool: no cluster to explain: give --kubeconfig or set $KUBECONFIG ('gpupool up' prints one)\n", r.stderr)
	bad := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(bad, []byte("apiVersion: v1\nkind: Config\nclusters: []\n"), 0o644))
	quiet := invoke(t, gpupoolBin, repoRoot, append(env, "GPUPOOL_STATE="+state), state, "explain", "tenant-a/trainer", "--kubeconfig", bad)
	assert.Equal(t, 2, quiet.exit)
	assert.NotRegexp(t, `(?m)^[IWE]\d{4} `, quiet.stderr, "klog lines reach the console without -v")
}

// A run whose apiserver dies mid-run reports no contract failure: the
// checks cut off are errors (JUnit <error>), the run's result is error and
// it exits 2, and it still removes what it made.
func TestLostControlPlaneIsNoContractFailure(t *testing.T) {
	state, out := t.TempDir(), t.TempDir()
	cmd := exec.Command(gpupoolBin, "run", "--out", out)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "GPUPOOL_STATE="+state, "TMPDIR="+t.TempDir())
	startUntil(t, cmd, "PASS ")

	// The run's apiserver: the kube-apiserver whose command line names
	// the run's state directory.
	apiserver := 0
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		line := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(line, "kube-apiserver") && strings.Contains(line, state) {
			apiserver, _ = strconv.Atoi(filepath.Base(filepath.Dir(p)))
			break
		}
	}
	require.NotZero(t, apiserver, "no kube-apiserver of the run's state dir %s", state)
	require.NoError(t, syscall.Kill(apiserver, syscall.SIGKILL))

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("the run did not end within 3 min of losing its apiserver")
	}
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "gpupool should exit non-zero, got %v", err)
	assert.Equal(t, 2, ee.ExitCode())
	var sum struct {
		Result string
		Lost   string
		Totals struct{ Failed, Errored int }
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &sum))
	assert.Equal(t, "error", sum.Result, "summary.json: %s", b)
	assert.Zero(t, sum.Totals.Failed, "a check cut off by the lost apiserver counted as failed: %s", b)
	assert.NotZero(t, sum.Totals.Errored)
	assert.Contains(t, sum.Lost, "stopped answering")
	junit, err := os.ReadFile(filepath.Join(out, "junit.xml"))
	require.NoError(t, err)
	assert.NotContains(t, string(junit), "<failure", "junit.xml blames a check the lost apiserver cut off")
	assertNothingLeft(t, state, "")
}

// A run interrupted with SIGINT while its suites run removes its cluster:
// no process, no listening port, no cluster directory, no temp dir.
func TestInterruptedRunLeavesNothing(t *testing.T) {
	state, out := t.TempDir(), t.TempDir()
	cmd := exec.Command(gpupoolBin, "run", "--out", out)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "GPUPOOL_STATE="+state, "TMPDIR="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())

	// Wait until the first check has finished: the cluster is up and a
	// suite is running against it.
	clusterName := ""
	upRE := regexp.MustCompile(`cluster (gpupool-\S+) up`)
	sc := bufio.NewScanner(stderr)
	deadline := time.AfterFunc(3*time.Minute, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	var lines []string
	for sc.Scan() {
		line := sc.Text()
		t.Log(line)
		lines = append(lines, line)
		if m := upRE.FindStringSubmatch(line); m != nil {
			clusterName = m[1]
		}
		if clusterName != "" && (strings.Contains(line, "PASS ") || strings.Contains(line, "FAIL ")) {
			break
		}
	}
	require.NotEmpty(t, clusterName, "the run never reported its cluster up")
	kubeconfig := findKubeconfig(t, state, clusterName)
	apiserver := serverAddress(t, kubeconfig)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	go func() {
		for sc.Scan() {
			t.Log(sc.Text())
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "gpupool should exit non-zero after SIGINT, got %v", err)
	assertNothingLeft(t, state, clusterName)
	if conn, dialErr := net.DialTimeout("tcp", apiserver, time.Second); dialErr == nil {
		// Name the listener: which process, and what it runs.
		ss, _ := exec.Command("ss", "-ltnp", "sport = :"+apiserver[strings.LastIndexByte(apiserver, ':')+1:]).CombinedOutput()
		t.Errorf("the apiserver at %s still listens after the run ended (local end %s):\n%s", apiserver, conn.LocalAddr(), ss)
		conn.Close()
	}
	tmp := cmd.Env[len(cmd.Env)-1][len("TMPDIR="):]
	tmpLeft, _ := filepath.Glob(filepath.Join(tmp, "*"))
	assert.Empty(t, tmpLeft, "temp files left behind")
	// The reference's autoscaled pool started Karpenter, its instance
	// types in a file under TMPDIR: it is gone too.
	assert.Contains(t, strings.Join(lines, "\n"), "autoscaler: Karpenter", "the run started no autoscaler, so this test shows nothing of its cleanup")
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(tmp)) {
			t.Errorf("process %s still runs: %s", filepath.Base(filepath.Dir(p)), bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		}
	}

	// The stop is no contract failure: exit 130, the checks it cut short
	// interrupted (JUnit <error>), none failed.
	assert.Equal(t, 130, ee.ExitCode())
	var sum struct {
		Result      string
		Interrupted string
		Totals      struct{ Failed, Interrupted int }
		Checks      []struct{ ID, Result string }
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &sum))
	assert.Equal(t, "interrupted", sum.Result, "summary.json: %s", b)
	assert.Zero(t, sum.Totals.Failed, "a check the stop cut short counted as failed: %s", b)
	assert.NotEmpty(t, sum.Interrupted)
	junit, err := os.ReadFile(filepath.Join(out, "junit.xml"))
	require.NoError(t, err)
	assert.NotContains(t, string(junit), "<failure", "junit.xml blames a check the stop cut short")
}

func findKubeconfig(t *testing.T, state, name string) string {
	p := filepath.Join(state, "kwok", "clusters", name, "kubeconfig.yaml")
	_, err := os.Stat(p)
	require.NoError(t, err)
	return p
}

func serverAddress(t *testing.T, kubeconfig string) string {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	host := strings.TrimPrefix(strings.TrimPrefix(cfg.Host, "https://"), "http://")
	require.True(t, strings.HasPrefix(host, "127.0.0.1:"), "apiserver must bind to 127.0.0.1, got %s", cfg.Host)
	return host
}

// assertNothingLeft checks that no cluster directory remains in state and no
// process runs from one (cluster "" = any).
func assertNothingLeft(t *testing.T, state, cluster string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(state, "kwok", "clusters", "*"))
	assert.Empty(t, left, "cluster directories left behind")
	needle := filepath.Join(state, "kwok", "clusters") + "/"
	if cluster != "" {
		needle += cluster
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(needle)) {
			t.Errorf("process %s still runs: %s", filepath.Base(filepath.Dir(p)), bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		}
	}
}

// A manifest the apiserver refuses stops the run before any suite, naming
// the file and document, and the cluster is removed.
func TestRefusedManifestStopsBeforeAnySuite(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "candidate.yaml"), []byte(`apiVersion: gpupool.dev/v1alpha1
kind: Candidate
spec: {base: `+filepath.Join(repoRoot, "manifests", "candidates", "reference")+`}
`), 0o644))
	// A RuntimeClass handler must be a DNS label: the apiserver refuses it.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "90-bad.yaml"), []byte("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: bad}\nhandler: Not_A_Label\n"), 0o644))
	r := gpupool(t, "run", "--candidate", dir)
	assert.Equal(t, 2, r.exit)
	s, err := reports.ReadSummary(r.out)
	require.NoError(t, err)
	assert.Zero(t, s.Totals.Checks, "no suite may run")
	require.NotEmpty(t, s.Errors)
	assert.Contains(t, s.Errors[0], "90-bad.yaml (document 1, RuntimeClass bad): apiserver refused it")
	assert.Contains(t, s.Errors[0], "handler")
	assertNothingLeft(t, r.state, "")
}

// A run killed with SIGKILL cannot clean up; the next run finds its
// cluster (owner process gone) and removes it, processes included.
func TestKilledRunIsCleanedByTheNext(t *testing.T) {
	state, tmp := t.TempDir(), t.TempDir()
	cmd := exec.Command(gpupoolBin, "up")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "GPUPOOL_STATE="+state, "TMPDIR="+tmp)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	up := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), "KUBECONFIG=") {
			up = true
			break
		}
	}
	require.True(t, up, "gpupool up never reported the cluster up")
	clusters, _ := filepath.Glob(filepath.Join(state, "kwok", "clusters", "*"))
	require.Len(t, clusters, 1)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	left, _ := filepath.Glob(filepath.Join(state, "kwok", "clusters", "*"))
	require.Len(t, left, 1, "SIGKILL cannot clean up; the cluster must still be there for this test to mean anything")
	karpenter, _ := filepath.Glob(filepath.Join(tmp, "gpupool-kp-*"))
	require.Len(t, karpenter, 1, "the reference's autoscaled pool runs Karpenter, whose files SIGKILL leaves")

	next := exec.Command(gpupoolBin, "run", "--suites", "./suites/admission", "--out", t.TempDir())
	next.Dir = repoRoot
	next.Env = cmd.Env
	out, err := next.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "removing cluster "+filepath.Base(clusters[0])+" left by a run that is gone")
	assertNothingLeft(t, state, "")
	kubeconfigs, _ := filepath.Glob(filepath.Join(tmp, "kwok-cluster-*"))
	assert.Empty(t, kubeconfigs, "the killed run's temp kubeconfig is removed with its cluster")
	karpenter, _ = filepath.Glob(filepath.Join(tmp, "gpupool-kp-*"))
	assert.Empty(t, karpenter, "the killed run's Karpenter files are removed with its cluster")
}

// 'gpupool down' beside a live run leaves its cluster running and says so;
// named, the cluster goes.
func TestDownLeavesALiveRun(t *testing.T) {
	state := t.TempDir()
	cmd, _ := upInBackground(t, state)
	clusters, _ := filepath.Glob(filepath.Join(state, "kwok", "clusters", "*"))
	require.Len(t, clusters, 1)
	name := filepath.Base(clusters[0])

	down := exec.Command(gpupoolBin, "down")
	down.Dir, down.Env = repoRoot, cmd.Env
	out, err := down.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "left embedded cluster "+name+" (in use by gpupool run pid")
	assert.DirExists(t, clusters[0], "down removed a live run's cluster")
	require.Nil(t, cmd.ProcessState, "the run ended when down ran beside it")

	named := exec.Command(gpupoolBin, "down", "no-such-cluster")
	named.Dir, named.Env = repoRoot, cmd.Env
	out, err = named.CombinedOutput()
	require.Error(t, err, "down of a cluster that does not exist must fail: %s", out)
	assert.Contains(t, string(out), "no gpupool cluster is named no-such-cluster")
}

// The simulated GPU Operator follows the live cluster: a ConfigMap edit or a
// node label changes what nodes advertise, level-based, without a restart.
func TestGPUStackFollowsLiveConfig(t *testing.T) {
	_, kubeconfig := upInBackground(t, t.TempDir())
	require.NotEmpty(t, kubeconfig, "gpupool up never reported the cluster up")
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	ctx := context.Background()

	shared := func(node string) int64 {
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		require.NoError(t, err)
		q := n.Status.Allocatable["nvidia.com/gpu.shared"]
		return q.Value()
	}
	require.Equal(t, int64(4), shared("gpu-l4-shared-0"))

	// Time-slicing replicas 4 → 2 in the candidate's ConfigMap.
	cm, err := cs.CoreV1().ConfigMaps("gpu-operator").Get(ctx, "device-plugin-config", metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data["l4-timeslice-4"] = strings.Replace(cm.Data["l4-timeslice-4"], "replicas: 4", "replicas: 2", 1)
	start := time.Now()
	_, err = cs.CoreV1().ConfigMaps("gpu-operator").Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, wait.For(ctx, "L4 nodes to advertise 2 nvidia.com/gpu.shared", 10*time.Second, func(context.Context) (bool, string, error) {
		got := shared("gpu-l4-shared-3")
		return got == 2, fmt.Sprint(got), nil
	}))
	t.Logf("replicas change reflected on the nodes after %s", time.Since(start).Round(time.Millisecond))

	// A node label naming a config key that does not exist takes the plugin
	// down on that node, and an event says why.
	patch := []byte(`{"metadata":{"labels":{"nvidia.com/device-plugin.config":"no-such-key"}}}`)
	_, err = cs.CoreV1().Nodes().Patch(ctx, "gpu-l4-shared-1", types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	require.NoError(t, wait.For(ctx, "gpu-l4-shared-1 to drop its GPUs and say why", 10*time.Second, func(ctx context.Context) (bool, string, error) {
		evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=gpu-l4-shared-1,reason=DevicePluginDown"})
		if err != nil {
			return false, "", err
		}
		said := false
		for _, e := range evs.Items {
			said = said || strings.Contains(e.Message, "specified config no-such-key does not exist")
		}
		return shared("gpu-l4-shared-1") == 0 && said, fmt.Sprintf("allocatable %d, %d events", shared("gpu-l4-shared-1"), len(evs.Items)), nil
	}))
}

// The bulk contract check of a scale run can fail: with the L4 pool's SKU
// taint gone, pods that leave it untolerated are placed, and the run says
// so and exits 1. (The passing run is `make test-scale`.)
func TestScaleRunCatchesABrokenPool(t *testing.T) {
	out := t.TempDir()
	r := gpupool(t, "scale", "--fleets", "manifests/fleets/scale-200.yaml", "--pods", "300",
		"--workload", "manifests/workloads/correctness.yaml",
		"--candidate", filepath.Join(repoRoot, "manifests", "candidates", "broken-l4-untainted"), "--out", out, "--profile")
	require.Equal(t, 1, r.exit, "stderr:\n%s", r.stderr)
	assert.Contains(t, r.stdout, "deliberately unschedulable pods stay Pending")
	data, err := os.ReadFile(filepath.Join(out, "scale.json"))
	require.NoError(t, err)
	var report struct {
		Runs []struct {
			Result struct {
				Phases []struct {
					Contract struct {
						ByRule map[string]int `json:"byRule"`
					} `json:"contract"`
				} `json:"phases"`
			} `json:"result"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal(data, &report))
	require.Len(t, report.Runs, 1)
	require.Len(t, report.Runs[0].Result.Phases, 4, "burst, churn, fill and scale-up all ran: a pool the broken candidate filled does not stop the fill")
	burst := report.Runs[0].Result.Phases[0].Contract.ByRule
	assert.NotZero(t, burst["deliberately unschedulable pods stay Pending for the contract's reason"], "%v", burst)
	assert.Equal(t, len(burst), 1, "only the broken rule fails: %v", burst)
	assertScaleReportReadable(t, out)
	for _, f := range []string{"burst-kube-apiserver.cpu", "burst-kube-scheduler.cpu", "end-kube-apiserver.heap", "end-kube-scheduler.heap"} {
		b, err := os.ReadFile(filepath.Join(out, "scale-200-"+f+".pprof"))
		if assert.NoError(t, err, "--profile") {
			assert.True(t, len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b, "%s is a gzipped pprof profile", f)
		}
	}
	assertNothingLeft(t, r.state, "")
}

// gpupool certify writes the bundle a reviewer reads, and its JUnit imports
// into a JUnit parser with one case per check.
func TestCertifyWritesTheBundle(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bundle")
	// One suite at a time, where the main job's run of the reference
	// (TestInstalledBinaryChecksAnyCluster) has them side by side: the
	// reference passes both ways.
	r := gpupool(t, "certify", "--out", out, "--vendor", "Acme", "--platform-version", "1.0", "--suite-parallelism", "1")
	require.Equal(t, 0, r.exit, "stderr:\n%s", r.stderr)
	for _, f := range []string{"junit_01.xml", "e2e.log", "summary.json", "report.html", "PRODUCT.yaml", "ai-conformance.yaml", "candidate/FINGERPRINT"} {
		_, err := os.Stat(filepath.Join(out, f))
		assert.NoError(t, err, "bundle file %s", f)
	}
	s, err := reports.ReadSummary(out)
	require.NoError(t, err)
	fp, err := os.ReadFile(filepath.Join(out, "candidate", "FINGERPRINT"))
	require.NoError(t, err)
	assert.Equal(t, s.Candidate.Fingerprint, strings.TrimSpace(string(fp)))
	product, err := os.ReadFile(filepath.Join(out, "PRODUCT.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(product), "vendorName: Acme")
	assert.Contains(t, string(product), "id: secure_accelerator_access")
	assertNothingLeft(t, r.state, "")
}

// Runs stopped at every phase leave nothing once they, or the next
// 'gpupool down', have swept: SIGINT ends the run itself with exit 130 and
// its cluster, processes and scratch directory removed; SIGKILL leaves them
// to 'gpupool down'. Each phase is named by the line the run prints when
// it reaches it.
func TestSignalsAtEveryPhase(t *testing.T) {
	phases := []struct{ name, marker string }{
		{"starting", "run gpupool-"},
		{"bringing the cluster up", "GPU Operator ClusterPolicy CRD installed"},
		{"installing the candidate", "objects applied"},
		{"creating the fleet", "admission policies enforced"},
		{"running the suites", "PASS "},
	}
	for _, ph := range phases {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
			t.Run(ph.name+"/"+sig.String(), func(t *testing.T) {
				// Each run has its own state and temp dirs, so two go at
				// once (-parallel is GOMAXPROCS): most of a run is waiting.
				t.Parallel()
				state, tmp := t.TempDir(), t.TempDir()
				env := append(os.Environ(), "GPUPOOL_STATE="+state, "TMPDIR="+tmp)
				out := t.TempDir()
				cmd := exec.Command(gpupoolBin, "run", "--suites", "./suites/pool", "--out", out)
				cmd.Dir, cmd.Env = repoRoot, env
				stderr, err := cmd.StderrPipe()
				require.NoError(t, err)
				require.NoError(t, cmd.Start())
				deadline := time.AfterFunc(3*time.Minute, func() { _ = cmd.Process.Kill() })
				defer deadline.Stop()
				sc := bufio.NewScanner(stderr)
				reached := false
				for sc.Scan() {
					t.Log(sc.Text())
					if strings.Contains(sc.Text(), ph.marker) {
						reached = true
						break
					}
				}
				if !reached {
					_ = cmd.Wait()
					summary, _ := os.ReadFile(filepath.Join(out, "summary.json"))
					t.Fatalf("the run never printed %q; its summary: %s", ph.marker, summary)
				}
				require.NoError(t, cmd.Process.Signal(sig))
				go func() {
					for sc.Scan() {
					}
				}()
				err = cmd.Wait()
				var ee *exec.ExitError
				require.True(t, errors.As(err, &ee), "the run must not succeed after %s, got %v", sig, err)
				if sig == syscall.SIGINT {
					assert.Equal(t, 130, ee.ExitCode(), "SIGINT %s", ph.name)
				} else {
					down := exec.Command(gpupoolBin, "down")
					down.Dir, down.Env = repoRoot, env
					out, err := down.CombinedOutput()
					require.NoError(t, err, "%s", out)
				}
				assertNothingLeft(t, state, "")
				left, _ := filepath.Glob(filepath.Join(tmp, "*"))
				assert.Empty(t, left, "temp files left after %s %s", sig, ph.name)
			})
		}
	}
}

// The binary 'go install' makes runs from any directory with no Go
// toolchain on PATH: the suites are linked in, the manifests and upstream
// files embedded. It checks the reference on a cluster of its own, then,
// against a cluster 'gpupool up' made, checks that cluster as configured
// (nothing installed) and installs a candidate there; neither leaves an
// object behind in the cluster, also when interrupted.
func TestInstalledBinaryChecksAnyCluster(t *testing.T) {
	gobin := t.TempDir()
	install := exec.Command("go", "install", "./cmd/gpupool")
	install.Dir, install.Env = repoRoot, append(os.Environ(), "GOBIN="+gobin)
	out, err := install.CombinedOutput()
	require.NoError(t, err, "go install: %s", out)
	bin := filepath.Join(gobin, "gpupool")

	// PATH without the Go toolchain; a fresh working directory; the
	// control plane from the cache as usual.
	var path []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(d, "go")); err != nil {
			path = append(path, d)
		}
	}
	work, state, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	env := append(os.Environ(), "PATH="+strings.Join(path, string(os.PathListSeparator)), "GPUPOOL_STATE="+state, "TMPDIR="+tmp, "GPUPOOL_MANIFESTS=")
	run := func(t *testing.T, args ...string) result {
		t.Helper()
		return invoke(t, bin, work, env, state, args...)
	}

	// The main job, as a user who installed the binary runs it (this is
	// the suite's one full run of the reference on a cluster of its own).
	t.Run("run on a cluster of its own", func(t *testing.T) {
		r := run(t, "run")
		assertReferencePasses(t, r)
		s, err := reports.ReadSummary(r.out)
		require.NoError(t, err)
		assert.Equal(t, "reference", s.Candidate.Name)
		assert.NotContains(t, r.stderr, "go: ", "nothing calls go")
		assertNothingLeft(t, state, "")
	})

	// A cluster 'gpupool up' made, as a platform's staging cluster.
	kubeconfig, stopUp := upCluster(t, bin, work, env)
	before := clusterObjects(t, kubeconfig)

	t.Run("run --kubeconfig checks the cluster as configured", func(t *testing.T) {
		r := run(t, "run", "--kubeconfig", kubeconfig)
		require.Equal(t, 0, r.exit)
		s, err := reports.ReadSummary(r.out)
		require.NoError(t, err)
		assert.Equal(t, "pass", s.Result)
		assert.Equal(t, candidate.AsConfigured, s.Candidate.Name)
		assert.Equal(t, "kubeconfig", s.Provider)
		assert.Contains(t, r.stderr, "nothing installed")
		for _, c := range s.Checks {
			chk, _ := checks.Lookup(c.ID)
			if chk.Disruptive {
				assert.Equal(t, "skip", c.Result, "disruptive check %s runs only when asked", c.ID)
			} else {
				assert.Equal(t, "pass", c.Result, c.ID)
			}
		}
		assert.Equal(t, before, clusterObjects(t, kubeconfig), "the run left objects behind, or removed some")
	})

	t.Run("run --kubeconfig --candidate installs it and removes it", func(t *testing.T) {
		cand := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(cand, "candidate.yaml"), []byte("apiVersion: gpupool.dev/v1alpha1\nkind: Candidate\nmetadata: {name: cdi-runtimeclass}\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(cand, "10-rc.yaml"), []byte("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia-cdi}\nhandler: nvidia-cdi\n"), 0o644))
		r := run(t, "run", "--kubeconfig", kubeconfig, "--candidate", cand, "--suites", "runtimeclass,admission")
		require.Equal(t, 0, r.exit)
		assert.Contains(t, r.stderr, "1 objects applied")
		assert.Equal(t, before, clusterObjects(t, kubeconfig))

		// A candidate whose objects the cluster already has is refused
		// before anything is applied.
		r = run(t, "run", "--kubeconfig", kubeconfig, "--candidate", filepath.Join(repoRoot, "manifests", "candidates", "reference"))
		assert.Equal(t, 2, r.exit)
		assert.Contains(t, r.stdout, "already has 00-namespaces.yaml (document 1, Namespace gpu-operator)")
		assert.Equal(t, before, clusterObjects(t, kubeconfig))
	})

	t.Run("Ctrl-C during the suites leaves nothing in the cluster", func(t *testing.T) {
		cmd := exec.Command(bin, "run", "--kubeconfig", kubeconfig, "--out", t.TempDir())
		cmd.Dir, cmd.Env = work, env
		startUntil(t, cmd, "PASS ")
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		err := cmd.Wait()
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "the run must not succeed after SIGINT, got %v", err)
		assert.Equal(t, 130, ee.ExitCode())
		assert.Equal(t, before, clusterObjects(t, kubeconfig))
	})

	t.Run("a SIGKILLed run's objects are removed by down --kubeconfig", func(t *testing.T) {
		cmd := exec.Command(bin, "run", "--kubeconfig", kubeconfig, "--simulate-pools", "--out", t.TempDir())
		cmd.Dir, cmd.Env = work, env
		startUntil(t, cmd, "PASS ")
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
		assert.NotEqual(t, before, clusterObjects(t, kubeconfig), "a killed run cannot clean up: its nodes and namespaces are still there")
		r := run(t, "down", "--kubeconfig", kubeconfig)
		require.Equal(t, 0, r.exit)
		assert.Regexp(t, `removed [1-9][0-9]* objects gpupool runs made`, r.stderr)
		assert.Equal(t, before, clusterObjects(t, kubeconfig))
		assertNoKwokOf(t, "") // it died with the run
	})

	stopUp()
	assertNothingLeft(t, state, "")
	left, _ := filepath.Glob(filepath.Join(tmp, "*"))
	assert.Empty(t, left, "temp files left behind")
	files, _ := os.ReadDir(work)
	assert.Empty(t, files, "the runs wrote into the working directory: reports go to --out")
}

// clusterObjects names every object of the kinds a run could create or
// change (with its labels), so two listings compare what a run left.
func clusterObjects(t *testing.T, kubeconfig string) []string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	var out []string
	for _, gvr := range []schema.GroupVersionResource{
		{Version: "v1", Resource: "namespaces"}, {Version: "v1", Resource: "pods"},
		{Version: "v1", Resource: "serviceaccounts"}, {Version: "v1", Resource: "configmaps"},
		{Version: "v1", Resource: "nodes"}, {Group: "node.k8s.io", Version: "v1", Resource: "runtimeclasses"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicybindings"},
		{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
		{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
		{Group: "nvidia.com", Version: "v1", Resource: "clusterpolicies"},
		{Group: "apps", Version: "v1", Resource: "deployments"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	} {
		list, err := dyn.Resource(gvr).List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err, gvr.Resource)
		for _, o := range list.Items {
			labels := o.GetLabels()
			if gvr.Resource == "nodes" {
				labels = nil // the simulated GPU stack keeps relabelling them
			}
			out = append(out, fmt.Sprintf("%s %s/%s %v", gvr.Resource, o.GetNamespace(), o.GetName(), labels))
		}
	}
	sort.Strings(out)
	return out
}

// --simulate-pools joins the fleet to a cluster gpupool did not make (here
// one 'gpupool up' made with only CPU nodes): the reference fleet comes up
// as nodes labelled with the run, looked after by a kwok and a fakegpu
// controller the run starts for them alone, and every check passes on
// them, the disruptive ones included (the nodes are the run's). Afterwards
// the cluster has exactly the objects it had, and nothing of the run's is
// left running on this machine.
func TestSimulatedPoolsJoinAnExistingCluster(t *testing.T) {
	dir, state, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	fleetFile := cpuOnlyFleet(t, dir)
	env := append(os.Environ(), "GPUPOOL_STATE="+state, "TMPDIR="+tmp)
	kubeconfig, _ := upCluster(t, gpupoolBin, repoRoot, env, "--fleet", fleetFile)
	before := clusterObjects(t, kubeconfig)
	// Named by --context in a file whose current context is a cluster that
	// is not there: every process of the run must use the one named.
	shared, named := withDeadCurrentContext(t, kubeconfig, dir)

	r := invoke(t, gpupoolBin, repoRoot, env, state, "run", "--kubeconfig", shared, "--context", named, "--simulate-pools", "--explore-budget", "20/10s")
	require.Equal(t, 0, r.exit)
	s, err := reports.ReadSummary(r.out)
	require.NoError(t, err)
	assert.Equal(t, "pass", s.Result)
	assert.Equal(t, candidate.AsConfigured, s.Candidate.Name)
	ran := map[string]bool{}
	for _, c := range s.Checks {
		assert.Equal(t, "pass", c.Result, c.ID)
		ran[c.ID] = true
	}
	for _, c := range checks.All() {
		if c.Disruptive && c.Provider == "" {
			assert.True(t, ran[c.ID], "disruptive check %s runs on the run's own nodes", c.ID)
		}
	}
	assert.Contains(t, r.stderr, "simulated nodes joined")
	assert.Equal(t, before, clusterObjects(t, kubeconfig), "the run left objects behind, or removed some")
	assertNoKwokOf(t, s.RunID)

	// A scale run on the same cluster: its pods stay on its own nodes (the
	// cluster's CPU nodes would take the CPU pool's), and it leaves
	// nothing behind.
	// Without the autoscale phase: its autoscaler is the one gpupool runs
	// beside a cluster it makes, and here the cluster's own would decide.
	sr := invoke(t, gpupoolBin, repoRoot, env, state, "scale", "--kubeconfig", shared, "--context", named,
		"--fleets", "fleets/scale-200.yaml", "--workload", withoutAutoscale(t, dir, "correctness.yaml"), "--out", t.TempDir())
	require.Equal(t, 0, sr.exit)
	assert.Contains(t, sr.stderr, "200 simulated nodes joined")
	assert.Contains(t, sr.stderr, "phase burst: 1000 pods created")
	assert.NotContains(t, sr.stdout+sr.stderr, "violation:")
	assert.Regexp(t, `phase burst: .* 0 contract violations`, sr.stderr)
	assert.NotContains(t, sr.stdout, "control plane peak RSS", "no figure for a control plane that is not this machine's")
	assert.Equal(t, before, clusterObjects(t, kubeconfig), "the scale run left objects behind, or removed some")
	assertNoKwokOf(t, "") // any run's: nothing else runs beside this test
	left, _ := filepath.Glob(filepath.Join(tmp, "gpupool-kubeconfig-*"))
	assert.Empty(t, left, "the runs' own kubeconfigs are removed")
}

// On a cluster it did not make, whose API has no Karpenter of its own, a
// run that simulates its pools runs its own Karpenter beside it, as beside
// a cluster it makes: the autoscaled pools' checks are made, and what
// Karpenter made goes with the run.
func TestRunsOwnKarpenterOnAnExistingCluster(t *testing.T) {
	dir, state, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	fleetFile := cpuOnlyFleet(t, dir)
	// A cluster with nothing of the reference candidate's, nor Karpenter's
	// CRDs (gpupool up installs those for a candidate with NodePools).
	env := append(os.Environ(), "GPUPOOL_STATE="+state, "TMPDIR="+tmp)
	kubeconfig, _ := upCluster(t, gpupoolBin, repoRoot, env, "--candidate", bareCandidate(t, dir, fleetFile))
	before := clusterObjects(t, kubeconfig)

	ref := filepath.Join(repoRoot, "manifests", "candidates", "reference")
	// The suites that need the run's Karpenter; the others are the same
	// as in TestSimulatedPoolsJoinAnExistingCluster.
	r := invoke(t, gpupoolBin, repoRoot, env, state, "run", "--kubeconfig", kubeconfig, "--candidate", ref, "--simulate-pools", "--suites", "autoscaling,explore", "--explore-budget", "20/10s")
	require.Equal(t, 0, r.exit, r.stderr)
	assert.Regexp(t, `autoscaler: Karpenter \S+ started beside the cluster`, r.stderr)
	s, err := reports.ReadSummary(r.out)
	require.NoError(t, err)
	passed := map[string]bool{}
	for _, c := range s.Checks {
		assert.Equal(t, "pass", c.Result, c.ID)
		passed[c.ID] = c.Result == "pass"
	}
	for _, c := range checks.All() {
		if c.NeedsAutoscaler {
			assert.True(t, passed[c.ID], "%s is made with the run's Karpenter", c.ID)
		}
	}
	assert.Equal(t, before, clusterObjects(t, kubeconfig), "the run left objects behind (NodeClaims, nodes, CRDs, policies), or removed some")

	// Killed with SIGKILL once Karpenter has made a node of each pool:
	// down --kubeconfig removes what it made (its NodeClaims and nodes keep
	// a finalizer only Karpenter would remove), down the run's files here.
	cmd := exec.Command(gpupoolBin, "run", "--kubeconfig", kubeconfig, "--candidate", ref, "--simulate-pools", "--suites", "autoscaling", "--out", t.TempDir())
	cmd.Dir, cmd.Env = repoRoot, env
	startUntil(t, cmd, "PASS autoscaling.pending-pod-scales-its-own-pool")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	assert.NotEqual(t, before, clusterObjects(t, kubeconfig), "a killed run cannot clean up")
	// Registered, Karpenter's nodes still lack the annotation by which a
	// kwok of the cluster's own would drive them (autoscaler-facts §4.3.1).
	made := 0
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	nodes, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "karpenter.sh/registered=true"})
	require.NoError(t, err)
	for _, n := range nodes.Items {
		made++
		assert.NotContains(t, n.Annotations, fleet.AnnotationKwokNode, n.Name)
	}
	assert.NotZero(t, made, "Karpenter registered no node before the kill")
	r = invoke(t, gpupoolBin, repoRoot, env, state, "down", "--kubeconfig", kubeconfig)
	require.Equal(t, 0, r.exit, r.stderr)
	assert.Equal(t, before, clusterObjects(t, kubeconfig))
	r = invoke(t, gpupoolBin, repoRoot, env, state, "down")
	require.Equal(t, 0, r.exit, r.stderr)
	for _, glob := range []string{"gpupool-kubeconfig-*", "gpupool-kp-*"} {
		left, _ := filepath.Glob(filepath.Join(tmp, glob))
		assert.Empty(t, left, "the killed run's %s", glob)
	}
}

// withDeadCurrentContext writes into dir a kubeconfig whose current context
// is a cluster nobody serves and whose other context is kubeconfig's, and
// returns it and that context's name.
func withDeadCurrentContext(t *testing.T, kubeconfig, dir string) (string, string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	require.NoError(t, err)
	require.NoError(t, clientcmdapi.FlattenConfig(cfg))
	named := cfg.CurrentContext
	cfg.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.AuthInfos["nowhere"] = &clientcmdapi.AuthInfo{Token: "none"}
	cfg.Contexts["nowhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: "nowhere"}
	cfg.CurrentContext = "nowhere"
	path := filepath.Join(dir, "two-contexts.kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path, named
}

// withoutAutoscale writes the built-in workload name without its
// autoscale phases and the mix entries only they draw (read back through
// the project's loader), and returns its path.
func withoutAutoscale(t *testing.T, dir, name string) string {
	t.Helper()
	w, err := scale.LoadWorkload(filepath.Join(repoRoot, "manifests", "workloads", name))
	require.NoError(t, err)
	dropAutoscale(t, w)
	w.Metadata.Name += "-fixed-pools"
	b, err := yaml.Marshal(w)
	require.NoError(t, err)
	path := filepath.Join(dir, w.Metadata.Name+".yaml")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	_, err = scale.LoadWorkload(path)
	require.NoError(t, err, "the workload without its autoscale phases must be valid")
	return path
}

// dropAutoscale takes out of w, a workload for scale-200, its autoscale
// phases and the mix entries only they draw. It reads the fleet file
// alone: resolving a candidate would fix this process's manifests
// directory (dirs.Manifests) before the tests that set it.
func dropAutoscale(t *testing.T, w *scale.Workload) {
	t.Helper()
	fl, err := fleet.Load(filepath.Join(repoRoot, "manifests", "fleets", "scale-200.yaml"))
	require.NoError(t, err)
	autoscaled := map[string]bool{}
	for _, ap := range fl.Spec.AutoscaledPools {
		autoscaled[ap.Name] = true
	}
	w.Spec.Phases = slices.DeleteFunc(w.Spec.Phases, scale.Phase.Autoscale)
	w.Spec.Mix = slices.DeleteFunc(w.Spec.Mix, func(m scale.MixEntry) bool { return autoscaled[m.Pool] })
}

// bareCandidate writes into dir a candidate of namespace bare and the
// namespaces named, on the fleet file, and returns its directory: a
// cluster with nothing else of the reference's, nor Karpenter's CRDs.
func bareCandidate(t *testing.T, dir, fleetFile string, namespaces ...string) string {
	t.Helper()
	cand := filepath.Join(dir, "bare")
	require.NoError(t, os.MkdirAll(cand, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cand, "candidate.yaml"), []byte("apiVersion: gpupool.dev/v1alpha1\nkind: Candidate\nmetadata: {name: bare}\nspec:\n  description: namespaces alone\n  fleet: "+fleetFile+"\n"), 0o644))
	var docs []string
	for _, ns := range append([]string{"bare"}, namespaces...) {
		docs = append(docs, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}\n")
	}
	require.NoError(t, os.WriteFile(filepath.Join(cand, "00-ns.yaml"), []byte(strings.Join(docs, "---\n")), 0o644))
	return cand
}

// cpuOnlyFleet writes a fleet of two CPU nodes into dir: a cluster the
// simulated pools join with nothing of their own.
func cpuOnlyFleet(t *testing.T, dir string) string {
	t.Helper()
	f := filepath.Join(dir, "cpu-only.yaml")
	require.NoError(t, os.WriteFile(f, []byte(`apiVersion: gpupool.dev/v1alpha1
kind: Fleet
metadata: {name: cpu-only}
spec:
  pools:
    - {name: system, nodes: 2}
`), 0o644))
	return f
}

// assertNoKwokOf fails if a kwok a run started for its simulated pools
// (its command line names the run; "" any run) still runs.
func assertNoKwokOf(t *testing.T, run string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte("--manage-nodes-with-label-selector")) && bytes.Contains(b, []byte("gpupool.dev/run="+run)) {
			t.Errorf("the run's kwok still runs: %s", bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		}
	}
}

// upCluster starts 'gpupool up' (bin in dir, with env and args) and returns
// the kubeconfig it prints and a stop func (SIGINT, then wait), which also
// runs when the test ends.
func upCluster(t *testing.T, bin, dir string, env []string, args ...string) (string, func()) {
	t.Helper()
	up := exec.Command(bin, append([]string{"up"}, args...)...)
	up.Dir, up.Env = dir, env
	out, err := up.StdoutPipe()
	require.NoError(t, err)
	up.Stderr = os.Stderr
	require.NoError(t, up.Start())
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = up.Process.Signal(syscall.SIGINT)
			_ = up.Wait()
		})
	}
	t.Cleanup(stop)
	kubeconfig := ""
	sc := bufio.NewScanner(out)
	deadline := time.AfterFunc(3*time.Minute, func() { _ = up.Process.Kill() })
	for sc.Scan() {
		if _, kc, ok := strings.Cut(sc.Text(), "export KUBECONFIG="); ok {
			kubeconfig = strings.TrimSpace(kc)
			break
		}
	}
	deadline.Stop()
	require.NotEmpty(t, kubeconfig, "gpupool up never printed its kubeconfig")
	go func() {
		for sc.Scan() {
		}
	}()
	return kubeconfig, stop
}

// startUntil starts cmd and logs its stderr until a line contains marker
// (the rest is logged in the background); it fails the test if the
// command ends first, or has not printed it within 3 minutes.
func startUntil(t *testing.T, cmd *exec.Cmd, marker string) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	deadline := time.AfterFunc(3*time.Minute, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	sc := bufio.NewScanner(stderr)
	reached := false
	for !reached && sc.Scan() {
		t.Log(sc.Text())
		reached = strings.Contains(sc.Text(), marker)
	}
	require.True(t, reached, "the command never printed %q", marker)
	go func() {
		for sc.Scan() {
		}
	}()
}

// upInBackground starts 'gpupool up' with its state in state and waits
// until it reports the cluster up; the test's cleanup interrupts it and
// checks nothing is left. It returns the command and the kubeconfig.
func upInBackground(t *testing.T, state string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(gpupoolBin, "up")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "GPUPOOL_STATE="+state, "TMPDIR="+t.TempDir())
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
		assertNothingLeft(t, state, "")
	})
	var kubeconfig string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if i := strings.Index(sc.Text(), "KUBECONFIG="); i >= 0 {
			kubeconfig = strings.TrimSpace(sc.Text()[i+len("KUBECONFIG="):])
			break
		}
	}
	require.NotEmpty(t, kubeconfig, "gpupool up never reported the cluster up")
	go func() {
		for sc.Scan() {
		}
	}()
	return cmd, kubeconfig
}
