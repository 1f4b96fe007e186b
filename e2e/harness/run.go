package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/gpupool/gpupool/e2e/candidate"
	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/upstream"
	"github.com/gpupool/gpupool/e2e/wait"
	"github.com/gpupool/gpupool/fakegpu/controller"
)

// Run is a cluster with the fleet created and the candidate installed.
type Run struct {
	*Plan
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
}

// Stop ends what the run started in this process (the fakegpu controller).
// The cluster itself is the provider's to remove.
func (r *Run) Stop() {
	if r.stop != nil {
		r.stop()
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
	cache := CacheDir()
	kube := filepath.Join(cache, "kubernetes-"+KubeVersion)
	kwok := filepath.Join(cache, "kwok-"+KwokVersion)
	return cluster.NewEmbedded(cluster.EmbeddedConfig{
		Name:        name,
		KubeVersion: KubeVersion,
		KwokVersion: KwokVersion,
		EtcdVersion: EtcdVersion,
		StateDir:    StateDir(),
		Binaries: cluster.Binaries{
			Kwokctl:               filepath.Join(kwok, "kwokctl"),
			Kwok:                  filepath.Join(kwok, "kwok"),
			Etcd:                  filepath.Join(cache, "etcd-"+EtcdVersion, "etcd"),
			KubeAPIServer:         filepath.Join(kube, "kube-apiserver"),
			KubeControllerManager: filepath.Join(kube, "kube-controller-manager"),
			KubeScheduler:         filepath.Join(kube, "kube-scheduler"),
		},
	})
}

func stderrLog(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// Up brings a cluster up with p, creates the fleet and installs the
// candidate. On error the caller still owns p and must call p.Down.
func Up(ctx context.Context, plan *Plan, p cluster.Provider) (*Run, error) {
	r := &Run{Plan: plan, Log: stderrLog}
	start := time.Now()
	c, err := p.Up(ctx)
	if err != nil {
		return nil, err
	}
	r.Log("cluster %s up (%s) in %s", c.Name, p.Kind(), time.Since(start).Round(time.Millisecond))
	if err := r.Attach(c); err != nil {
		return nil, err
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

// Provision installs the upstream CRDs, creates the fleet and installs the
// candidate.
func (r *Run) Provision(ctx context.Context) error {
	applier, err := candidate.NewApplier(r.Cluster.REST)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := r.installUpstreamCRDs(ctx, applier); err != nil {
		return err
	}
	r.Log("GPU Operator ClusterPolicy CRD installed in %s", time.Since(start).Round(time.Millisecond))
	if err := r.startGPUStack(ctx); err != nil {
		return err
	}
	stats, err := r.Fleet.Create(ctx, r.Client, fleet.CreateOptions{})
	if err != nil {
		return fmt.Errorf("fleet %s: %w", r.Fleet.File, err)
	}
	r.FleetStats = stats
	r.Log("fleet %s: %d nodes Ready in %s (%.0f nodes/s)", r.Fleet.Metadata.Name, stats.Nodes, stats.ReadyTime.Round(time.Millisecond), stats.NodesPerSec)
	start = time.Now()
	applied, err := r.Candidate.Install(ctx, applier)
	if err != nil {
		return err
	}
	r.applied = applied
	r.Log("candidate %s: %d objects applied in %s", r.Candidate.Name, len(r.Candidate.Objects), time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if err := r.WaitGPUStackSynced(ctx); err != nil {
		return err
	}
	r.Log("simulated GPU Operator: every GPU node advertises the candidate's config after %s", time.Since(start).Round(time.Millisecond))
	return nil
}

// startGPUStack runs the fakegpu controller in this process until Stop.
func (r *Run) startGPUStack(ctx context.Context) error {
	defaultMIG, err := DefaultMIGPartedConfig()
	if err != nil {
		return err
	}
	c, err := controller.New(r.Cluster.REST, controller.Options{DefaultMIGParted: defaultMIG, Log: r.Log})
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

// WaitGPUStackSynced waits until every GPU node advertises what the current
// GPU Operator config says.
func (r *Run) WaitGPUStackSynced(ctx context.Context) error {
	if r.GPUStack == nil {
		return nil
	}
	return wait.For(ctx, "the simulated GPU Operator to reconcile every GPU node", time.Minute, func(context.Context) (bool, string, error) {
		ok, seen := r.GPUStack.Synced(r.applied)
		return ok, seen, nil
	})
}

// installUpstreamCRDs applies the GPU Operator's real ClusterPolicy CRD, so
// a candidate's ClusterPolicy is checked against the real schema.
func (r *Run) installUpstreamCRDs(ctx context.Context, a *candidate.Applier) error {
	path, err := upstream.GPUOperatorFile(upstream.ClusterPolicyCRD)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var u unstructured.Unstructured
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if _, err := a.Apply(ctx, candidate.Object{Unstructured: &u, File: path, Doc: 1}); err != nil {
		return fmt.Errorf("installing %s: %w", path, err)
	}
	dyn, err := dynamic.NewForConfig(r.Cluster.REST)
	if err != nil {
		return err
	}
	crds := dyn.Resource(apiextv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	return wait.For(ctx, "CRD "+u.GetName()+" Established", 30*time.Second, func(ctx context.Context) (bool, string, error) {
		obj, err := crds.Get(ctx, u.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		var crd apiextv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &crd); err != nil {
			return false, "", err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextv1.Established && c.Status == apiextv1.ConditionTrue {
				return true, "", nil
			}
		}
		return false, "not Established yet", nil
	})
}
