// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulerv1 "k8s.io/kube-scheduler/config/v1"
	kwokv1alpha1 "sigs.k8s.io/kwok/pkg/apis/config/v1alpha1"
	"sigs.k8s.io/yaml"
)

// Tuning holds control-plane settings for large fleets. The zero value
// keeps kwokctl's defaults, which suit the contract suites' dozen nodes.
type Tuning struct {
	// DisableQPSLimits is kwokctl's disableQPSLimits: the apiserver's
	// inflight limits and priority-and-fairness off, controller-manager
	// client QPS 5000, burst 10000.
	DisableQPSLimits bool
	// NodeLeaseDurationSeconds: kwok renews every node's Lease each quarter
	// of it (kubelet's rule), so 10,000 nodes at kwok's default of 40 s cost
	// 1,000 lease writes/s.
	NodeLeaseDurationSeconds int
	// NodeMonitorPeriod is how often the controller-manager checks node
	// health (kwokctl: 5 s times its heartbeat factor of 5).
	NodeMonitorPeriod time.Duration
	// NodeMonitorGracePeriod is the controller-manager's
	// --node-monitor-grace-period: how long a node may go without renewing
	// its lease before it is marked NotReady. It must exceed the renew
	// interval, with room for a slow apiserver.
	NodeMonitorGracePeriod time.Duration
	// KwokParallelism is how many workers kwok gives node stages, pod
	// stages and lease renewals (kwok's default: 4 each).
	KwokParallelism int
	// Scheduler tunes kube-scheduler through a KubeSchedulerConfiguration.
	Scheduler *SchedulerTuning
	// ControllerManagerQPS is the controller-manager client's QPS (burst
	// twice that); 0 keeps its default of 20, which the workload
	// controllers share: exploration's Deployments, Jobs and StatefulSets
	// queued behind it for seconds.
	ControllerManagerQPS int
	// DisabledControllers are controller-manager controllers turned off.
	DisabledControllers []string
	// APIServerGOGC and APIServerMemoryLimit set the apiserver's Go
	// garbage collector (GOGC, GOMEMLIMIT): collecting less often while
	// under a memory budget. Empty: Go's defaults.
	APIServerGOGC, APIServerMemoryLimit string
	// DisabledAdmissionPlugins are apiserver admission plugins turned off.
	DisabledAdmissionPlugins []string
	// Profiling lets anyone on 127.0.0.1 read the scheduler's and the
	// controller-manager's /debug/pprof, as kwokctl already lets them read
	// /metrics (the apiserver serves its own to the admin credentials).
	Profiling bool
}

// SchedulerTuning is the part of KubeSchedulerConfiguration scale runs set.
type SchedulerTuning struct {
	// QPS and Burst of the scheduler's client: the default 50/100 caps
	// binds at about 50 pods/s.
	QPS, Burst int
	// PercentageOfNodesToScore: 0 is the scheduler's adaptive default
	// (50% minus 1% per 125 nodes, at least 5%, at least 100 nodes).
	PercentageOfNodesToScore int
}

// ScaleTuning is what gpupool uses for fleets of thousands of nodes; the
// docs/scale.md explains each figure.
func ScaleTuning() Tuning {
	return Tuning{
		DisableQPSLimits: true,
		// Renewed every 150 s: 67 lease writes/s at 10,000 nodes instead of
		// 1,000 at the kubelet's 40 s. A dead node takes 10 min to notice,
		// which a benchmark never waits for.
		NodeLeaseDurationSeconds: 600,
		NodeMonitorPeriod:        25 * time.Second,
		NodeMonitorGracePeriod:   600 * time.Second,
		KwokParallelism:          16,
		// Score 100 feasible nodes (the scheduler's floor) rather than 10%
		// of 5,000: a GPU pod's feasible nodes are all alike, and the
		// filter and score work per pod drops about fivefold.
		Scheduler: &SchedulerTuning{QPS: 5000, Burst: 10000, PercentageOfNodesToScore: 1},
		// The TTL controller annotates every node with a kubelet cache TTL
		// that grows with the cluster, re-patching all nodes at 100, 500,
		// 1,000 and 2,000 nodes; simulated nodes have no kubelet to read it.
		DisabledControllers: []string{"ttl"},
		// GOGC 300 collects less often while the heap is small; the limit
		// makes it collect harder as the heap nears it. The apiserver's live
		// heap at 10,000 nodes and 50,000 pods is about 1.6 GB: at 3500MiB it
		// peaks at 3.58 GiB RSS; 2600MiB holds it to 2.6-2.7 GiB but cost a
		// 5,000-node burst a quarter of its throughput (60 -> 45 pods/s),
		// the apiserver's CPU rising 29%. `gpupool scale
		// --apiserver-memory-limit` chooses.
		APIServerGOGC:        "300",
		APIServerMemoryLimit: "3500MiB",
		// TaintNodesByCondition admission taints every new Node
		// not-ready:NoSchedule until the node lifecycle controller lifts it,
		// with a GET and a PATCH per node on 8 workers it cannot be given
		// more of: about 90 nodes/s here, the bring-up wall at 10,000 nodes.
		// A scale fleet's nodes are created with their conditions already
		// Ready (a kubelet's are not), so the taint only delays them.
		DisabledAdmissionPlugins: []string{"TaintNodesByCondition"},
	}
}

// apply sets the tuning's options and componentsPatches on the kwokctl
// configuration c, writing the scheduler's configuration to dir, and
// returns the KwokConfiguration the tuning needs (nil: kwokctl's own).
// Every option set here is a pointer or omitempty in kwok's types, so one
// left unset is left out and kwokctl's default stands.
func (t Tuning) apply(c *kwokv1alpha1.KwokctlConfiguration, dir string) (*kwokv1alpha1.KwokConfiguration, error) {
	o := &c.Options
	if t.NodeLeaseDurationSeconds > 0 || t.NodeMonitorGracePeriod > 0 || t.NodeMonitorPeriod > 0 {
		// kwokctl multiplies these by its heartbeat factor (5) unless it is 1.
		o.HeartbeatFactor = new(1.0)
	}
	if t.NodeMonitorPeriod > 0 {
		o.KubeControllerManagerNodeMonitorPeriodMilliseconds = t.NodeMonitorPeriod.Milliseconds()
	}
	if t.DisableQPSLimits {
		o.DisableQPSLimits = new(true)
	}
	if t.NodeLeaseDurationSeconds > 0 {
		o.NodeLeaseDurationSeconds = uint(t.NodeLeaseDurationSeconds)
	}
	if t.NodeMonitorGracePeriod > 0 {
		o.KubeControllerManagerNodeMonitorGracePeriodMilliseconds = t.NodeMonitorGracePeriod.Milliseconds()
	}
	if s := t.Scheduler; s != nil {
		b, err := yaml.Marshal(s.config())
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "gpupool-scheduler.yaml")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return nil, err
		}
		o.KubeSchedulerConfig = path
	}
	c.ComponentsPatches = t.componentPatches()
	p := uint(t.KwokParallelism)
	if p == 0 {
		return nil, nil
	}
	// The options not set here are omitempty, or pointers kwok defaults
	// when nil (the two enablePodsOnNodeSync* are written as null).
	return &kwokv1alpha1.KwokConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: kwokv1alpha1.GroupVersion.String(), Kind: kwokv1alpha1.KwokConfigurationKind},
		Options: kwokv1alpha1.KwokConfigurationOptions{
			NodePlayStageParallelism: p,
			PodPlayStageParallelism:  p,
			NodeLeaseParallelism:     p,
		},
	}, nil
}

// config is the KubeSchedulerConfiguration the tuning asks for.
// clientConnection and leaderElection have no omitempty: their unset fields
// are written as zeros, which the scheduler defaults as it does absent ones
// (qps 0 is 50, burst 0 is 100); kwokctl sets clientConnection.kubeconfig.
func (s SchedulerTuning) config() schedulerv1.KubeSchedulerConfiguration {
	c := schedulerv1.KubeSchedulerConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: schedulerv1.SchemeGroupVersion.String(), Kind: "KubeSchedulerConfiguration"},
	}
	if s.QPS > 0 {
		c.ClientConnection.QPS = float32(s.QPS)
		c.ClientConnection.Burst = int32(max(s.Burst, s.QPS))
	}
	if s.PercentageOfNodesToScore > 0 {
		c.PercentageOfNodesToScore = new(int32(s.PercentageOfNodesToScore))
	}
	return c
}

// componentPatches are the componentsPatches the tuning needs (nil for
// none). Each extra argument is written with override: false, which is
// what kwokctl read when it was left out: the flag is added after
// kwokctl's own.
func (t Tuning) componentPatches() []kwokv1alpha1.ComponentPatches {
	arg := func(k, v string) kwokv1alpha1.ExtraArgs { return kwokv1alpha1.ExtraArgs{Key: k, Value: v} }
	env := func(n, v string) kwokv1alpha1.Env { return kwokv1alpha1.Env{Name: n, Value: v} }
	// A repeated --authorization-always-allow-paths adds to kwokctl's list.
	allowPprof := arg("authorization-always-allow-paths", "/debug/pprof/*")
	scheduler := kwokv1alpha1.ComponentPatches{Name: "kube-scheduler"}
	controllerManager := kwokv1alpha1.ComponentPatches{Name: "kube-controller-manager"}
	apiserver := kwokv1alpha1.ComponentPatches{Name: "kube-apiserver"}
	if t.Profiling {
		scheduler.ExtraArgs = append(scheduler.ExtraArgs, allowPprof)
		controllerManager.ExtraArgs = append(controllerManager.ExtraArgs, allowPprof)
	}
	if t.ControllerManagerQPS > 0 && !t.DisableQPSLimits {
		controllerManager.ExtraArgs = append(controllerManager.ExtraArgs,
			arg("kube-api-qps", fmt.Sprint(t.ControllerManagerQPS)), arg("kube-api-burst", fmt.Sprint(2*t.ControllerManagerQPS)))
	}
	if len(t.DisabledControllers) > 0 {
		controllerManager.ExtraArgs = append(controllerManager.ExtraArgs, arg("controllers", "*,-"+strings.Join(t.DisabledControllers, ",-")))
	}
	if len(t.DisabledAdmissionPlugins) > 0 {
		apiserver.ExtraArgs = append(apiserver.ExtraArgs, arg("disable-admission-plugins", strings.Join(t.DisabledAdmissionPlugins, ",")))
	}
	if t.APIServerGOGC != "" {
		apiserver.ExtraEnvs = append(apiserver.ExtraEnvs, env("GOGC", t.APIServerGOGC))
	}
	if t.APIServerMemoryLimit != "" {
		apiserver.ExtraEnvs = append(apiserver.ExtraEnvs, env("GOMEMLIMIT", t.APIServerMemoryLimit))
	}
	var patches []kwokv1alpha1.ComponentPatches
	for _, p := range []kwokv1alpha1.ComponentPatches{scheduler, controllerManager, apiserver} {
		if len(p.ExtraArgs)+len(p.ExtraEnvs) > 0 {
			patches = append(patches, p)
		}
	}
	return patches
}
