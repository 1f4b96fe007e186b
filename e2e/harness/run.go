// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package harness brings a run's cluster up: it picks the cluster
// provider, starts the cluster (or attaches to one gpupool did not make),
// installs the candidate, creates the fleet, runs the simulated GPU stack
// for it, labels what the run makes and removes that again. A Run is the
// cluster so provisioned; it also answers what checks ask of the fleet in
// it (a pool's nodes, its intended resource, its trust namespaces) and
// drives its real nodes (kind). Plans come from e2e/plan; suites reach
// the Run through e2e/suite.
package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/gpupool/gpupool/e2e/autoscaler"
	"github.com/gpupool/gpupool/e2e/barrier"
	"github.com/gpupool/gpupool/e2e/candidate"
	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/dirs"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/plan"
	"github.com/gpupool/gpupool/e2e/upstream"
	"github.com/gpupool/gpupool/e2e/versions"
	"github.com/gpupool/gpupool/e2e/wait"
	"github.com/gpupool/gpupool/fakegpu"
	"github.com/gpupool/gpupool/fakegpu/controller"
)

// Run is a cluster with the fleet created and the candidate installed.
type Run struct {
	*plan.Plan
	Cluster *cluster.Cluster
	Client  kubernetes.Interface
	// FleetStats says how node bring-up went.
	FleetStats fleet.CreateStats
	// Log receives progress lines (stderr by default).
	Log func(format string, args ...any)
	// GPUStack is the in-process fakegpu controller (nil when attached to
	// a cluster someone else provisioned).
	GPUStack *controller.Controller
	stop     context.CancelFunc
	applied  map[string]string // candidate objects → resourceVersion
	opt      UpOptions
	// gpuStackInCluster: the fakegpu controller runs in the cluster (kind),
	// not in this process.
	gpuStackInCluster bool
	// karpenterImage, when set, runs the run's Karpenter in a cluster
	// gpupool did not make, from its chart as release karpenterRelease.
	karpenterImage   string
	karpenterRelease autoscaler.Release
	// cloud is the simulated cloud the run's Karpenter buys from.
	cloud *autoscaler.Cloud
	// SimulatedPools: the run joined its fleet to a cluster it did not
	// make; its nodes carry the run's label, and its fakegpu controller
	// and kwok look after those alone. Pools are those nodes alone.
	SimulatedPools bool
	// DisruptiveNodes are, on a cluster gpupool did not make, the only
	// nodes disruptive checks may change (none: every node of the pool).
	DisruptiveNodes []string
	// Disposable: the cluster goes when the run ends (settings.Settings).
	Disposable bool
	// Autoscaler: Karpenter runs for the fleet's autoscaled pools, started
	// by this Run or by the run whose suites this process runs.
	Autoscaler bool
	kwok       *cluster.KwokProcess
	// karpenter and the cloud run while the run does, when the fleet has
	// autoscaled pools on a cluster gpupool made.
	karpenter interface{ Stop(context.Context) error }
	stopCloud context.CancelFunc
}

// UpOptions tune bring-up; the zero value suits the contract suites.
type UpOptions struct {
	Fleet fleet.CreateOptions
	// SyncTimeout bounds the wait for the simulated GPU Operator to
	// reconcile every node (default 1 min).
	SyncTimeout time.Duration
	// GPUStackWorkers is the fakegpu controller's node workers.
	GPUStackWorkers int
	// JoinAdvertised creates GPU nodes with what the simulated GPU stack
	// would publish for them already in place (labels, resources, the MIG
	// layout applied), as nodes of a pool that was running before the
	// run; the controller then only confirms them. Scale runs use it; the
	// contract suites watch every node go through the stack.
	JoinAdvertised bool
	// GPUStackSkipDeviceRecords: see controller.Options.SkipDeviceRecords.
	GPUStackSkipDeviceRecords bool
	// BeforeProvision runs once the cluster answers, before anything is
	// installed (a scale run takes its first metrics snapshot there).
	BeforeProvision func(*Run) error
	// SimulatorLog receives the in-process simulated stack's record of
	// what it did, a timestamped line per object (nil: the run's Log).
	SimulatorLog io.Writer
	// AutoscalerLog receives Karpenter's log at level info (nil: only its
	// errors, kept for when it exits).
	AutoscalerLog io.Writer
}

// Stop ends what the run started in this process (the fakegpu controller).
// The cluster itself is the provider's to remove.
func (r *Run) Stop() {
	// The autoscaler first: nothing makes nodes while the rest stops.
	r.stopAutoscaler()
	if r.stop != nil {
		r.stop()
	}
	if r.kwok != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := r.kwok.Stop(ctx); err != nil {
			r.Log("stopping kwok: %v", err)
		}
		r.kwok = nil
	}
}

// NewRunName returns a cluster name unique to this run.
func NewRunName() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "gpupool-" + time.Now().UTC().Format("0102-150405") + "-" + hex.EncodeToString(b)
}

// EmbeddedProvider returns the default provider, using the binaries
// hack/build-control-plane.sh built.
func EmbeddedProvider(name string) (*cluster.Embedded, error) {
	return embeddedProvider(name, ContractTuning)
}

// ContractTuning is the contract suites' control plane: kwokctl's defaults
// but for the controller-manager's client, which exploration's workloads
// would otherwise queue behind.
var ContractTuning = cluster.Tuning{ControllerManagerQPS: 200}

// TunedProvider is the embedded provider with the control plane tuned
// (cluster.ScaleTuning for fleets of thousands of nodes).
func TunedProvider(name string, tuning cluster.Tuning) (*cluster.Embedded, error) {
	return embeddedProvider(name, tuning)
}

func embeddedProvider(name string, tuning cluster.Tuning) (*cluster.Embedded, error) {
	cache := dirs.CacheDir()
	kube := filepath.Join(cache, "kubernetes-"+versions.Kube)
	kwok := filepath.Join(cache, "kwok-"+versions.Kwok)
	p, err := cluster.NewEmbedded(cluster.EmbeddedConfig{
		Name:        name,
		KubeVersion: versions.Kube,
		KwokVersion: versions.Kwok,
		EtcdVersion: versions.Etcd,
		StateDir:    dirs.StateDir(),
		Tuning:      tuning,
		Binaries: cluster.Binaries{
			Kwokctl:               filepath.Join(kwok, "kwokctl"),
			Kwok:                  filepath.Join(kwok, "kwok"),
			Etcd:                  filepath.Join(cache, "etcd-"+versions.Etcd, "etcd"),
			KubeAPIServer:         filepath.Join(kube, "kube-apiserver"),
			KubeControllerManager: filepath.Join(kube, "kube-controller-manager"),
			KubeScheduler:         filepath.Join(kube, "kube-scheduler"),
		},
	})
	if errors.Is(err, cluster.ErrMissingBinaries) {
		err = fmt.Errorf(`%w
They come from one of:
  - a gpupool checkout: 'make control-plane' builds them from Go modules into %s (10-15 min cold, then cached)
  - the official releases, saved at the paths above and made executable:
      kube-apiserver, kube-controller-manager, kube-scheduler %s: https://dl.k8s.io/release/%s/bin/linux/%s/<name>
      etcd %s: https://github.com/etcd-io/etcd/releases/tag/%s
      kwok and kwokctl %s: https://github.com/kubernetes-sigs/kwok/releases/tag/%s`,
			err, cache, versions.Kube, versions.Kube, goruntime.GOARCH, versions.Etcd, versions.Etcd, versions.Kwok, versions.Kwok)
	}
	return p, err
}

func stderrLog(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// Up brings a cluster up with p, creates the fleet and installs the
// candidate. On error the caller still owns p and must call p.Down.
func Up(ctx context.Context, plan *plan.Plan, p cluster.Provider) (*Run, error) {
	return UpWith(ctx, plan, p, UpOptions{})
}

// UpWith is Up with bring-up options (scale runs).
func UpWith(ctx context.Context, plan *plan.Plan, p cluster.Provider, opt UpOptions) (*Run, error) {
	r := &Run{Plan: plan, Log: stderrLog, opt: opt}
	start := time.Now()
	c, err := p.Up(ctx)
	if err != nil {
		return nil, err
	}
	r.Log("cluster %s up (%s) in %s", c.Name, p.Kind(), time.Since(start).Round(time.Millisecond))
	if err := r.Attach(c); err != nil {
		return nil, err
	}
	if opt.BeforeProvision != nil {
		if err := opt.BeforeProvision(r); err != nil {
			return nil, err
		}
	}
	if err := r.Provision(ctx); err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
}

// Attach points the run at a cluster that is already up.
func (r *Run) Attach(c *cluster.Cluster) error {
	cs, err := kubernetes.NewForConfig(c.REST)
	if err != nil {
		return err
	}
	r.Cluster, r.Client = c, cs
	if r.Log == nil {
		r.Log = stderrLog
	}
	return nil
}

// Provision installs the upstream CRDs and the candidate, creates the
// fleet, and waits for the simulated GPU Operator to reconcile it.
func (r *Run) Provision(ctx context.Context) error {
	applier, err := candidate.NewApplier(r.Cluster.REST)
	if err != nil {
		return err
	}
	applier.ServerSide = r.ServerSideApply
	start := time.Now()
	if err := r.installUpstreamCRDs(ctx, applier); err != nil {
		return err
	}
	r.Log("GPU Operator ClusterPolicy CRD installed in %s", time.Since(start).Round(time.Millisecond))
	if r.autoscaling() {
		start = time.Now()
		if err := r.installAutoscalerCRDs(ctx, applier); err != nil {
			return err
		}
		r.Log("Karpenter's CRDs installed in %s", time.Since(start).Round(time.Millisecond))
	}
	if img := r.Cluster.Images["fakegpu-controller"]; img != "" {
		// A cluster with real nodes runs the simulated stack itself, as
		// it runs the GPU Operator.
		if r.opt.JoinAdvertised {
			return fmt.Errorf("joining nodes advertised needs the in-process fakegpu controller; %s runs it in the cluster", r.Cluster.Name)
		}
		start = time.Now()
		if err := r.installGPUStackInCluster(ctx, img); err != nil {
			return err
		}
		r.Log("fakegpu controller running in the cluster after %s", time.Since(start).Round(time.Millisecond))
	} else if err := r.startGPUStack(ctx); err != nil {
		return err
	}
	// The candidate first, as a cluster's config exists before its nodes
	// join: each node is then reconciled once, against the final config.
	start = time.Now()
	applied, err := r.Candidate.Install(ctx, applier)
	if err != nil {
		return err
	}
	r.applied = applied
	r.Log("candidate %s: %d objects applied in %s", r.Candidate.Name, len(r.Candidate.Objects), time.Since(start).Round(time.Millisecond))
	// From here on an admission verdict is one request: the candidate's
	// policies are live. kube-system: candidates leave it alone.
	took, err := barrier.Await(ctx, r.Client, metav1.NamespaceSystem)
	if err != nil {
		return err
	}
	r.Log("candidate's admission policies enforced after %s", took.Round(time.Millisecond))
	if img := r.Cluster.Images["device-plugin"]; len(r.Cluster.RealNodes) > 0 && img != "" {
		start = time.Now()
		if err := r.installDevicePlugin(ctx, img); err != nil {
			return err
		}
		r.Log("fake device plugin ready on %v in %s", r.Cluster.RealNodes, time.Since(start).Round(time.Millisecond))
	}
	if img := r.Cluster.Images["dra-plugin"]; len(r.Cluster.RealNodes) > 0 && img != "" {
		start = time.Now()
		if err := r.installDRAPlugin(ctx, img); err != nil {
			return err
		}
		r.Log("fake DRA plugin ready on %v in %s", r.Cluster.RealNodes, time.Since(start).Round(time.Millisecond))
	}
	fopt := r.opt.Fleet
	if r.opt.JoinAdvertised {
		// Nodes join stamped with the config the controller holds, so it
		// must hold the candidate's first.
		if err := r.WaitGPUStackSynced(ctx); err != nil {
			return err
		}
		hash := r.GPUStack.ConfigHash()
		fopt.Prepare = func(n *corev1.Node) error { return r.advertised(n, hash) }
	}
	stats, err := fleet.Create(ctx, r.Fleet, r.Client, fopt)
	if err != nil {
		return fmt.Errorf("fleet %s: %w", r.Fleet.File, err)
	}
	r.FleetStats = stats
	r.Log("fleet %s: %d nodes Ready in %s (%.0f nodes/s)", r.Fleet.Metadata.Name, stats.Nodes, stats.ReadyTime.Round(time.Millisecond), stats.NodesPerSec)
	start = time.Now()
	if err := r.WaitGPUStackSynced(ctx); err != nil {
		return err
	}
	r.Log("simulated GPU Operator: every GPU node advertises the candidate's config after %s", time.Since(start).Round(time.Millisecond))
	if pools := r.Fleet.Autoscaled(); len(pools) > 0 {
		// On kind too: Karpenter runs there as its chart's Deployment,
		// and the kwok controller in it keeps the nodes Karpenter makes
		// Ready, as it does the fleet's (both carry kwok.x-k8s.io/node: fake).
		return r.startAutoscaler(ctx)
	}
	return nil
}

// advertised fills in what the simulated GPU stack publishes for a GPU
// node under the candidate's config, computed from the plan's files by the
// same pure function the controller runs, and stamped with the config the
// controller holds; a MIG layout is taken as already applied. The
// controller stays the authority: it corrects anything that differs from
// its own view.
func (r *Run) advertised(n *corev1.Node, configHash string) error {
	inv, isGPU, err := fakegpu.Inventory(n.Annotations)
	if !isGPU || err != nil {
		return err
	}
	d := r.Stack.Desired(inv, fakegpu.NodeObservation{Name: n.Name, Labels: n.Labels, Annotations: n.Annotations, Now: time.Now()}, 0)
	for k, v := range d.Labels {
		n.Labels[k] = v
	}
	for _, k := range d.Remove {
		delete(n.Labels, k)
	}
	for k, v := range d.Annotations {
		if v == "" {
			delete(n.Annotations, k)
		} else {
			n.Annotations[k] = v
		}
	}
	n.Annotations[fakegpu.AnnotationObservedConfig] = configHash
	for name, v := range d.Capacity {
		n.Status.Capacity[corev1.ResourceName(name)] = *resource.NewQuantity(v, resource.DecimalSI)
	}
	for name, v := range d.Allocatable {
		n.Status.Allocatable[corev1.ResourceName(name)] = *resource.NewQuantity(v, resource.DecimalSI)
	}
	return nil
}

// stackNodes selects the nodes the run's simulated GPU stack looks after:
// its own simulated pools, or the nodes of the cluster gpupool made.
func (r *Run) stackNodes() string {
	if r.SimulatedPools {
		return LabelRun + "=" + RunID()
	}
	return ownNodes
}

// startGPUStack runs the fakegpu controller in this process until Stop.
func (r *Run) startGPUStack(ctx context.Context) error {
	defaultMIG, err := plan.DefaultMIGPartedConfig()
	if err != nil {
		return err
	}
	c, err := controller.New(r.Cluster.REST, controller.Options{
		DefaultMIGParted: defaultMIG, Log: r.Log, Trace: r.simulatorTrace(), NodeWorkers: r.opt.GPUStackWorkers, SkipDeviceRecords: r.opt.GPUStackSkipDeviceRecords,
		NodeSelector: r.stackNodes(),
	})
	if err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	if err := c.Start(cctx); err != nil {
		cancel()
		return err
	}
	r.GPUStack = c
	return nil
}

// simulatorTrace writes the stack's record to UpOptions.SimulatorLog, one
// timestamped line each, or to the run's Log without one.
func (r *Run) simulatorTrace() func(format string, args ...any) {
	w := r.opt.SimulatorLog
	if w == nil {
		return r.Log
	}
	var mu sync.Mutex
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "[%s] %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	}
}

// WaitGPUStackSynced waits until every GPU node advertises what the current
// GPU Operator config says.
func (r *Run) WaitGPUStackSynced(ctx context.Context) error {
	if r.GPUStack == nil && !r.gpuStackInCluster {
		return nil
	}
	timeout := r.opt.SyncTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	return wait.For(ctx, "the simulated GPU Operator to reconcile every GPU node", timeout, func(ctx context.Context) (bool, string, error) {
		if r.gpuStackInCluster {
			return r.gpuStackSyncedInCluster(ctx)
		}
		ok, seen := r.GPUStack.Synced(r.applied)
		return ok, seen, nil
	})
}

// installUpstreamCRDs applies the GPU Operator's real ClusterPolicy CRD, so
// a candidate's ClusterPolicy is checked against the real schema.
func (r *Run) installUpstreamCRDs(ctx context.Context, a *candidate.Applier) error {
	data, err := upstream.GPUOperatorFile(upstream.ClusterPolicyCRD)
	if err != nil {
		return err
	}
	path := upstream.GPUOperatorFileName(upstream.ClusterPolicyCRD)
	var u unstructured.Unstructured
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return r.installCRDs(ctx, a, []candidate.Object{{Unstructured: &u, File: path, Doc: 1}})
}

// installCRDs applies CRDs and waits until every one is Established, so
// the objects of their kinds that follow are served.
func (r *Run) installCRDs(ctx context.Context, a *candidate.Applier, crds []candidate.Object) error {
	var names []string
	for _, o := range crds {
		if _, err := a.Apply(ctx, o); err != nil {
			return fmt.Errorf("installing %s: %w", o.Where(), err)
		}
		names = append(names, o.GetName())
	}
	dyn, err := dynamic.NewForConfig(r.Cluster.REST)
	if err != nil {
		return err
	}
	res := dyn.Resource(apiextv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	return wait.For(ctx, "CRDs "+strings.Join(names, ", ")+" Established", 30*time.Second, func(ctx context.Context) (bool, string, error) {
		var left []string
		for _, name := range names {
			obj, err := res.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				left = append(left, name+" ("+err.Error()+")")
				continue
			}
			var crd apiextv1.CustomResourceDefinition
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &crd); err != nil {
				return false, "", err
			}
			if !slices.ContainsFunc(crd.Status.Conditions, func(c apiextv1.CustomResourceDefinitionCondition) bool {
				return c.Type == apiextv1.Established && c.Status == apiextv1.ConditionTrue
			}) {
				left = append(left, name)
			}
		}
		return len(left) == 0, "not Established yet: " + strings.Join(left, ", "), nil
	})
}
