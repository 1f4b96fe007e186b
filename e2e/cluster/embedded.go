// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/support/kwok"
	kwokv1alpha1 "sigs.k8s.io/kwok/pkg/apis/config/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/gpupool/gpupool/e2e/wait"
)

// Binaries are the executables the embedded cluster runs.
type Binaries struct {
	Kwokctl, Kwok, Etcd                                 string
	KubeAPIServer, KubeControllerManager, KubeScheduler string
}

// EmbeddedConfig configures the embedded cluster.
type EmbeddedConfig struct {
	// Name of the cluster; must be unique on the machine (NewRunName).
	Name        string
	KubeVersion string
	KwokVersion string
	EtcdVersion string
	Binaries    Binaries
	// StateDir holds kwokctl's workdir for gpupool clusters, apart from
	// ~/.kwok so that the stale-cluster sweep only sees clusters gpupool made.
	StateDir string
	// ExtraConfig is appended to the kwokctl configuration (for example
	// Stage documents, or componentsPatches for scale runs).
	ExtraConfig string
	// Tuning sets control-plane flags for large fleets (zero: defaults).
	Tuning Tuning
	// WaitTimeout bounds cluster creation.
	WaitTimeout time.Duration
}

// Embedded is the default provider: kwokctl's binary runtime running
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the kwok
// controller as local processes bound to 127.0.0.1.
type Embedded struct {
	cfg      EmbeddedConfig
	provider *kwok.Cluster
	detached bool
}

// ErrMissingBinaries: a control-plane binary is not where the config says.
var ErrMissingBinaries = errors.New("embedded cluster: missing control-plane binaries")

// NewEmbedded checks the binaries exist and returns the provider.
func NewEmbedded(cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.WaitTimeout == 0 {
		cfg.WaitTimeout = 2 * time.Minute
	}
	var missing []string
	for name, path := range map[string]string{
		"kwokctl": cfg.Binaries.Kwokctl, "kwok": cfg.Binaries.Kwok, "etcd": cfg.Binaries.Etcd,
		"kube-apiserver": cfg.Binaries.KubeAPIServer, "kube-controller-manager": cfg.Binaries.KubeControllerManager,
		"kube-scheduler": cfg.Binaries.KubeScheduler,
	} {
		if st, err := os.Stat(path); err != nil || st.Mode()&0o111 == 0 {
			missing = append(missing, fmt.Sprintf("%s (%s)", name, path))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("%w: %s", ErrMissingBinaries, strings.Join(missing, ", "))
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return nil, err
	}
	return &Embedded{cfg: cfg}, nil
}

// Kind implements Provider.
func (e *Embedded) Kind() string { return "embedded" }

func (e *Embedded) workdir() string { return filepath.Join(e.cfg.StateDir, "kwok") }

func (e *Embedded) clustersDir() string { return filepath.Join(e.workdir(), "clusters") }

func (e *Embedded) clusterDir(name string) string { return filepath.Join(e.clustersDir(), name) }

// env makes every kwokctl call see gpupool's workdir and kube version.
func (e *Embedded) env() {
	os.Setenv("KWOK_WORKDIR", e.workdir())
	os.Setenv("KWOK_KUBE_VERSION", e.cfg.KubeVersion)
}

// upMu serializes cluster creation in a process: kwokctl gives each
// component a port it finds free, and two creations at once (a mutants
// run's clusters side by side) picked the same one.
var upMu sync.Mutex

// Up implements Provider.
func (e *Embedded) Up(ctx context.Context) (*Cluster, error) {
	upMu.Lock()
	defer upMu.Unlock()
	unlock, err := lockUp(ctx, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	defer unlock()
	e.env()
	if err := e.SweepStale(ctx); err != nil {
		return nil, err
	}
	// Claim the name before anything else: if this process dies during
	// creation, the next run's sweep finds the owner file and cleans up.
	if err := writeOwner(e.clusterDir(e.cfg.Name), e.detached); err != nil {
		return nil, err
	}
	cfgFile, err := e.writeConfig()
	if err != nil {
		return nil, err
	}
	e.provider = kwok.NewCluster(e.cfg.Name)
	e.provider.WithPath(e.cfg.Binaries.Kwokctl)
	e.provider.WithOpts(kwok.WithWaitDuration(e.cfg.WaitTimeout))
	kubeconfig, err := e.provider.CreateWithConfig(ctx, cfgFile)
	if err != nil {
		return nil, fmt.Errorf("embedded cluster %s: %w (logs: %s)", e.cfg.Name, err, filepath.Join(e.clusterDir(e.cfg.Name), "logs"))
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 500, 1000
	// Protobuf, as the control plane's own clients speak: decoding and
	// encoding JSON for the harness was a measurable share of the
	// apiserver's CPU at thousands of nodes. Dynamic clients stay on JSON.
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	if e.cfg.Tuning.DisableQPSLimits {
		rc.QPS, rc.Burst = 5000, 10000
	}
	return &Cluster{
		Name:       e.cfg.Name,
		Kubeconfig: kubeconfig,
		REST:       rc,
		Components: map[string]string{
			"kubernetes": e.cfg.KubeVersion,
			"etcd":       e.cfg.EtcdVersion,
			"kwok":       e.cfg.KwokVersion,
			"provider":   "embedded (kwokctl binary runtime)",
		},
	}, nil
}

// Down implements Provider.
func (e *Embedded) Down(ctx context.Context) error {
	e.env()
	return e.deleteCluster(ctx, e.cfg.Name, e.provider)
}

// Detach marks the cluster as kept after this process exits: sweeps leave
// it alone until `gpupool down` (Remove).
func (e *Embedded) Detach() { e.detached = true }

// Remove deletes the embedded clusters r selects (Removal).
func (e *Embedded) Remove(ctx context.Context, r Removal) (Removed, error) {
	e.env()
	out, err := removeClusters(ctx, e.clustersDir(), r, func(ctx context.Context, name string) error {
		return e.deleteCluster(ctx, name, nil)
	})
	// Versions before 2026-11-30 kept kwokctl configs here, one per run.
	return out, errors.Join(err, os.RemoveAll(filepath.Join(e.cfg.StateDir, "configs")))
}

// Dir is the cluster's directory: every component runs from it.
func (e *Embedded) Dir() string { return e.clusterDir(e.cfg.Name) }

// Logs returns the directory kwokctl writes component logs to.
func (e *Embedded) Logs() string { return filepath.Join(e.clusterDir(e.cfg.Name), "logs") }

func (e *Embedded) deleteCluster(ctx context.Context, name string, p *kwok.Cluster) error {
	dir := e.clusterDir(name)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	// Remember the components now: kwokctl signals them and returns, and a
	// killed process holds its listening ports until the kernel has
	// finished its exit, so removal waits for that.
	procs := ProcessesUnder(dir)
	var errs []error
	if p != nil {
		errs = append(errs, p.Destroy(ctx))
	} else {
		cmd := exec.CommandContext(ctx, e.cfg.Binaries.Kwokctl, "delete", "cluster", "--name", name)
		if out, err := cmd.CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("kwokctl delete cluster %s: %w: %s", name, err, out))
		}
	}
	// kwokctl stops processes by the pid files it wrote; if it was killed
	// before writing one, or failed, make sure nothing of ours survives.
	killClusterProcesses(dir)
	errs = append(errs, waitExited(ctx, procs, 30*time.Second))
	errs = append(errs, os.RemoveAll(dir))
	errs = append(errs, removeTempKubeconfigs("kwok", name))
	errs = append(errs, removeTempDirs(name))
	return errors.Join(errs...)
}

// TempPrefix starts the name of a temporary directory a run keeps for
// cluster (for what), so that removing the cluster removes it too, also
// after a run killed with SIGKILL. The cluster is named by a hash: a Unix
// socket's path in it must stay under 108 bytes.
func TempPrefix(cluster, what string) string {
	return "gpupool-" + what + "-" + tempHash(cluster) + "-"
}

func tempHash(cluster string) string {
	h := fnv.New32a()
	h.Write([]byte(cluster))
	return fmt.Sprintf("%08x", h.Sum32())
}

func removeTempDirs(cluster string) error {
	var errs []error
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), "gpupool-*-"+tempHash(cluster)+"-*"))
	for _, d := range left {
		errs = append(errs, os.RemoveAll(d))
	}
	return errors.Join(errs...)
}

// removeTempKubeconfigs removes the copies of a cluster's kubeconfig that
// e2e-framework's providers (kind, kwok) keep in temp files and remove
// only on their own Destroy: a run killed before that leaves them behind.
func removeTempKubeconfigs(provider, cluster string) error {
	var errs []error
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), provider+"-cluster-"+cluster+"-kubecfg*"))
	for _, f := range left {
		errs = append(errs, os.Remove(f))
	}
	return errors.Join(errs...)
}

// SweepStale removes clusters whose owning process is gone: what a run
// killed with SIGKILL, or a crashed machine, left behind. A leftover that
// cannot be removed is reported, not fatal: this run's cluster has a name
// of its own, and `gpupool down` retries the removal.
func (e *Embedded) SweepStale(ctx context.Context) error {
	return sweepStale(ctx, e.clustersDir(), "cluster", func(ctx context.Context, name string) error {
		return e.deleteCluster(ctx, name, nil)
	})
}

// sweepStale removes each cluster under dir whose owner is gone, with
// remove; what is called a "cluster" in the messages.
func sweepStale(ctx context.Context, dir, what string, remove func(context.Context, string) error) error {
	names, err := clusterNames(dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if ownerAlive(filepath.Join(dir, name)) || beingClaimed(filepath.Join(dir, name)) {
			continue
		}
		fmt.Fprintf(os.Stderr, "gpupool: removing %s %s left by a run that is gone\n", what, name)
		if err := remove(ctx, name); err != nil {
			fmt.Fprintf(os.Stderr, "gpupool: could not remove %s %s (gpupool down retries): %v\n", what, name, err)
		}
	}
	return nil
}

// clusterNames lists the cluster directories under dir. Other entries
// (the kind network marker, a user's stray file) are not clusters, and
// treating one as a cluster would fail every later run's sweep.
func clusterNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ent := range entries {
		if ent.IsDir() {
			names = append(names, ent.Name())
		}
	}
	return names, nil
}

func (e *Embedded) writeConfig() (string, error) {
	// In the cluster's own directory, so removing the cluster removes it.
	dir := e.clusterDir(e.cfg.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	cfg, err := kwokctlConfig(e.cfg, dir)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "gpupool-kwokctl.yaml")
	return path, os.WriteFile(path, []byte(cfg), 0o644)
}

// kwokctlConfig is the kwokctl configuration file for cfg, from kwok's
// typed config/v1alpha1: the KwokctlConfiguration, the tuning's
// KwokConfiguration if any, kwok's Stages, then cfg.ExtraConfig. Files it refers to go to
// dir.
func kwokctlConfig(cfg EmbeddedConfig, dir string) (string, error) {
	b := cfg.Binaries
	c := kwokv1alpha1.KwokctlConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: kwokv1alpha1.GroupVersion.String(), Kind: kwokv1alpha1.KwokctlConfigurationKind},
		Options: kwokv1alpha1.KwokctlConfigurationOptions{
			Runtime:                     "binary",
			KubeVersion:                 cfg.KubeVersion,
			BindAddress:                 "127.0.0.1",
			KubeAdmission:               new(true),
			KubeAuthorization:           new(true),
			KubeApiserverBinary:         b.KubeAPIServer,
			KubeControllerManagerBinary: b.KubeControllerManager,
			KubeSchedulerBinary:         b.KubeScheduler,
			KwokControllerBinary:        b.Kwok,
			EtcdBinary:                  b.Etcd,
		},
	}
	kwokCfg, err := cfg.Tuning.apply(&c, dir)
	if err != nil {
		return "", err
	}
	docs := []any{c}
	if kwokCfg != nil {
		docs = append(docs, kwokCfg)
	}
	var out strings.Builder
	for i, d := range docs {
		y, err := yaml.Marshal(d)
		if err != nil {
			return "", err
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(y)
	}
	// kwokctl gives its defaults only to a configuration with no Stage;
	// these are the same ones, with the pod stages made conditional.
	for _, st := range kwokDefaultStages {
		out.WriteString("---\n" + strings.TrimPrefix(st, "---\n"))
	}
	if cfg.ExtraConfig != "" {
		out.WriteString("---\n" + strings.TrimPrefix(cfg.ExtraConfig, "---\n"))
	}
	return out.String(), nil
}

// owner records which process made a cluster, so a later run can tell a
// live cluster from one whose run was killed.
type owner struct {
	PID       int   `json:"pid"`
	StartTick int64 `json:"startTick"` // /proc start time: pids are reused
	// Detached clusters (gpupool run --keep-cluster) outlive their run;
	// only 'gpupool down' removes them.
	Detached bool `json:"detached,omitempty"`
}

const ownerFile = "gpupool-owner.json"

func writeOwner(dir string, detached bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, _ := json.Marshal(owner{PID: os.Getpid(), StartTick: processStart(os.Getpid()), Detached: detached})
	// Written whole or not at all: a sweep running beside this one (a
	// mutants run brings up several clusters) must never read half a
	// record and take a live cluster for a dead one.
	tmp := filepath.Join(dir, ownerFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, ownerFile))
}

// claimGrace is how long a cluster directory without an owner record is
// taken as being claimed right now rather than left by a dead run.
const claimGrace = time.Minute

// beingClaimed: the directory has no owner record yet and was made moments
// ago, by a run between creating it and writing the record.
func beingClaimed(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, ownerFile)); err == nil {
		return false
	}
	fi, err := os.Stat(dir)
	return err == nil && time.Since(fi.ModTime()) < claimGrace
}

// readOwner reads dir's owner record (ok false: none, or unreadable).
func readOwner(dir string) (o owner, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return o, false // not ours, or claimed by a run that died before writing
	}
	return o, json.Unmarshal(b, &o) == nil
}

func ownerAlive(dir string) bool {
	o, ok := readOwner(dir)
	if !ok {
		return false
	}
	if o.Detached {
		return true
	}
	if o.PID <= 0 {
		return false
	}
	if syscall.Kill(o.PID, 0) != nil {
		return false
	}
	return processStart(o.PID) == o.StartTick
}

// processStart reads the start time in clock ticks since boot (field 22
// of /proc/PID/stat), which tells a reused pid from the original process.
func processStart(pid int) int64 {
	f := ProcStat(pid)
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseInt(f[19], 10, 64)
	return v
}

// ProcStat returns the fields of /proc/PID/stat from field 3 (state) on:
// index i holds field i+3. The command name (field 2) may hold spaces, so
// fields resume after its closing ')'. Nil if the process is gone.
func ProcStat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	return strings.Fields(s)
}

// killClusterProcesses ends any process whose command line points into the
// cluster's directory (every component of a kwokctl binary cluster does).
func killClusterProcesses(dir string) {
	for _, p := range ProcessesUnder(dir) {
		if p.PID != os.Getpid() {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	}
}

// exited reports whether a process has let go of its files: it is gone,
// its pid now names another process, or it is a zombie with no thread
// left. A multi-threaded process shows its leader as a zombie while the
// other threads still exit, and they hold its listening sockets.
func exited(p Process) bool {
	st := ProcStat(p.PID)
	if st == nil || (p.Start != 0 && processStart(p.PID) != p.Start) {
		return true
	}
	if st[0] != "Z" && st[0] != "X" {
		return false
	}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", p.PID))
	for _, t := range tasks {
		tid, _ := strconv.Atoi(t.Name())
		if tid == p.PID {
			continue
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", p.PID, tid)); err == nil && len(b) > 0 {
			return false
		}
	}
	return true
}

// waitExited polls until each process has exited (see exited), up to
// timeout.
func waitExited(ctx context.Context, procs []Process, timeout time.Duration) error {
	return wait.Every(ctx, "the cluster's processes to exit", timeout, 20*time.Millisecond, func(context.Context) (bool, string, error) {
		var alive []string
		for _, p := range procs {
			if !exited(p) {
				state := "?"
				if st := ProcStat(p.PID); len(st) > 0 {
					state = st[0]
				}
				alive = append(alive, fmt.Sprintf("%s (pid %d, state %s)", p.Name, p.PID, state))
			}
		}
		return len(alive) == 0, "still running: " + strings.Join(alive, ", "), nil
	})
}

// Process is a running process and the program it runs.
type Process struct {
	PID   int
	Name  string // base name of argv[0]
	Start int64  // start time in clock ticks since boot: tells a reused pid
}

// ProcessesUnder lists the processes whose command line points into dir.
func ProcessesUnder(dir string) []Process {
	var out []Process
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), dir+"/") {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil {
			continue
		}
		out = append(out, Process{PID: pid, Name: filepath.Base(strings.SplitN(string(b), "\x00", 2)[0]), Start: processStart(pid)})
	}
	return out
}
