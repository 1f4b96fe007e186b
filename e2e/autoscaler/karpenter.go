// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package autoscaler runs a real autoscaler for a cluster: Karpenter with
// its KWOK cloud provider (sigs.k8s.io/karpenter/kwok), built from its Go
// module by hack/build-control-plane.sh, beside the cluster as a process
// (Start) or inside it as its chart's Deployment (incluster.go). The
// "cloud" it scales is a list of instance types; the nodes it makes are
// KWOK nodes, which the simulated NVIDIA stack takes over as it does a
// fleet's.
package autoscaler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/dirs"
	"github.com/gpupool/gpupool/e2e/netns"
	"github.com/gpupool/gpupool/e2e/versions"
)

// ErrMissingBinary: Karpenter was not built (hack/build-control-plane.sh
// karpenter).
var ErrMissingBinary = errors.New("autoscaler: Karpenter's KWOK provider is not built (make control-plane)")

// Binary is where hack/build-control-plane.sh puts Karpenter's KWOK
// provider.
func Binary() string {
	return filepath.Join(dirs.CacheDir(), "karpenter-"+versions.Karpenter, "karpenter-kwok")
}

// InstanceType is one machine the simulated cloud offers, in the KWOK
// provider's instance-types file format (its InstanceTypeOptions).
type InstanceType struct {
	Name             string            `json:"name"`
	Offerings        []Offering        `json:"offerings"`
	Architecture     string            `json:"architecture"`
	OperatingSystems []string          `json:"operatingSystems"`
	Resources        map[string]string `json:"resources"`
	// ResourceSliceTemplates are the devices the machine's DRA driver
	// will publish, which Karpenter fits ResourceClaims to before the
	// machine exists (autoscaler-facts §10). Not the provider's: gpupool's
	// build of it reads them (hack/tools/karpenter/cmd/karpenter-kwok).
	ResourceSliceTemplates []resourcev1.ResourceSliceSpec `json:"resourceSliceTemplates,omitempty"`
}

// Offering is where and at what price an instance type is sold, in the
// provider's field names (autoscaler-facts §3.2): its capacity type and
// zone are requirements, which the nodes it makes carry as labels (§4.3)
// and a NodePool's requirements are matched against.
type Offering struct {
	Price        float64                          `json:"Price"`
	Available    bool                             `json:"Available"`
	Requirements []corev1.NodeSelectorRequirement `json:"Requirements"`
}

// OfferingIn is an offering of one capacity type in one zone.
func OfferingIn(capacityType, zone string, price float64) Offering {
	return Offering{Price: price, Available: true, Requirements: []corev1.NodeSelectorRequirement{
		{Key: LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{capacityType}},
		{Key: LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}},
	}}
}

// Dir is Karpenter's temporary directory (its instance types, HOME and the
// relay's socket), removed by Stop.
func (k *Karpenter) Dir() string { return k.dir }

// Karpenter is a running Karpenter.
type Karpenter struct {
	p   *netns.Process
	dir string
	log *tail
}

// Options start Karpenter.
type Options struct {
	// Self is the gpupool binary (os.Executable): it runs the network
	// namespace Karpenter lives in (netns.Main).
	Self string
	// Kubeconfig reaches the cluster's apiserver on 127.0.0.1.
	Kubeconfig string
	// Server is the kubeconfig's server URL.
	Server string
	// InstanceTypes are what the cloud offers.
	InstanceTypes []InstanceType
	// Cluster names the cluster: Karpenter's files go to a temporary
	// directory named for it, which removing the cluster also removes
	// (a run killed with SIGKILL cannot).
	Cluster string
	// Log receives Karpenter's log at level info, what it decided and why
	// (nil: errors only).
	Log io.Writer
	// FeatureGates are the candidate's --feature-gates (none: Karpenter's
	// defaults, autoscaler-facts §8.6).
	FeatureGates map[string]bool
}

// Start runs Karpenter against the cluster, in a network namespace of its
// own (it listens on every interface, on fixed ports). It does not wait for
// it to be ready: callers wait for what they need it to do.
func Start(opt Options) (*Karpenter, error) {
	bin := Binary()
	if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("%w: %s", ErrMissingBinary, bin)
	}
	u, err := url.Parse(opt.Server)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("autoscaler: apiserver URL %q: %v", opt.Server, err)
	}
	if len(opt.InstanceTypes) == 0 {
		return nil, errors.New("autoscaler: no instance types for the cloud to offer")
	}
	// "kp": the relay's socket lives here too, and a socket's path has
	// 107 bytes, TMPDIR included.
	dir, err := os.MkdirTemp("", cluster.TempPrefix(opt.Cluster, "kp"))
	if err != nil {
		return nil, err
	}
	types, _ := json.MarshalIndent(opt.InstanceTypes, "", "  ")
	typesFile := filepath.Join(dir, "instance-types.json")
	if err := os.WriteFile(typesFile, types, 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	env := []string{
		"KUBECONFIG=" + opt.Kubeconfig,
		"HOME=" + dir,
		"PATH=" + os.Getenv("PATH"),
		// Karpenter skips pods with ResourceClaims unless told not to
		// (autoscaler-facts §10.1); told, it fits their claims to the
		// devices the instance types say their machines will publish.
		"IGNORE_DRA_REQUESTS=false",
	}
	args := []string{bin,
		"--instance-types-file-path", typesFile,
		// One Karpenter per cluster, and the run's own: no lease to win.
		"--disable-leader-election",
	}
	if len(opt.FeatureGates) > 0 {
		args = append(args, "--feature-gates", GateString(opt.FeatureGates))
	}
	log := &tail{max: 8192}
	var out io.Writer = log
	if opt.Log != nil {
		args = append(args, "--log-level", "info")
		out = io.MultiWriter(log, opt.Log)
	} else {
		args = append(args, "--log-level", "error")
	}
	p, err := netns.Start(opt.Self, u.Host, dir, args, env, out)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &Karpenter{p: p, dir: dir, log: log}, nil
}

// Err says why Karpenter ended, with the tail of its log, if it has.
func (k *Karpenter) Err() error {
	if err, ended := k.p.Exited(); ended {
		return fmt.Errorf("karpenter exited (%v): %s", err, k.log.String())
	}
	return nil
}

// Stop ends Karpenter and removes its files. The nodes and NodeClaims it
// made stay: removing them is the run's cleanup, which must happen with
// Karpenter gone, or it would make new ones for pods still Pending.
func (k *Karpenter) Stop(ctx context.Context) error {
	err := k.p.Stop(ctx, 10*time.Second)
	os.RemoveAll(k.dir)
	return err
}

// Log is the tail of Karpenter's log.
func (k *Karpenter) Log() string { return k.log.String() }

// Processes is Karpenter's process (not the network namespace's helper
// that runs it), for a scale run's CPU and memory figures.
func (k *Karpenter) Processes() []cluster.Process {
	var out []cluster.Process
	for _, p := range cluster.ProcessesUnder(k.dir) {
		if p.Name == filepath.Base(Binary()) {
			p.Name = "karpenter"
			out = append(out, p)
		}
	}
	return out
}

// tail keeps the last max bytes written.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
