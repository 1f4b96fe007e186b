package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

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
// README explains each figure.
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

// render returns the KwokctlConfiguration options lines and any extra
// documents the tuning needs; files go to dir.
func (t Tuning) render(dir string) (options, topLevel string, docs []string, err error) {
	var b strings.Builder
	if t.NodeLeaseDurationSeconds > 0 || t.NodeMonitorGracePeriod > 0 || t.NodeMonitorPeriod > 0 {
		// kwokctl multiplies these by its heartbeat factor (5) unless it is 1.
		b.WriteString("  heartbeatFactor: 1\n")
	}
	if t.NodeMonitorPeriod > 0 {
		fmt.Fprintf(&b, "  kubeControllerManagerNodeMonitorPeriodMilliseconds: %d\n", t.NodeMonitorPeriod.Milliseconds())
	}
	if t.DisableQPSLimits {
		b.WriteString("  disableQPSLimits: true\n")
	}
	if t.NodeLeaseDurationSeconds > 0 {
		fmt.Fprintf(&b, "  nodeLeaseDurationSeconds: %d\n", t.NodeLeaseDurationSeconds)
	}
	if t.NodeMonitorGracePeriod > 0 {
		fmt.Fprintf(&b, "  kubeControllerManagerNodeMonitorGracePeriodMilliseconds: %d\n", t.NodeMonitorGracePeriod.Milliseconds())
	}
	if s := t.Scheduler; s != nil {
		cfg := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
		if s.QPS > 0 {
			cfg += fmt.Sprintf("clientConnection: {qps: %d, burst: %d}\n", s.QPS, max(s.Burst, s.QPS))
		}
		if s.PercentageOfNodesToScore > 0 {
			cfg += fmt.Sprintf("percentageOfNodesToScore: %d\n", s.PercentageOfNodesToScore)
		}
		path := filepath.Join(dir, "gpupool-scheduler.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			return "", "", nil, err
		}
		fmt.Fprintf(&b, "  kubeSchedulerConfig: %s\n", path)
	}
	if p := t.KwokParallelism; p > 0 {
		docs = append(docs, fmt.Sprintf(`apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  nodePlayStageParallelism: %d
  podPlayStageParallelism: %d
  nodeLeaseParallelism: %d
`, p, p, p))
	}
	top, err := t.componentPatches()
	if err != nil {
		return "", "", nil, err
	}
	return b.String(), top, docs, nil
}

// componentPatch is one entry of KwokctlConfiguration componentsPatches.
type componentPatch struct {
	Name      string     `json:"name"`
	ExtraArgs []extraArg `json:"extraArgs,omitempty"`
	ExtraEnvs []extraEnv `json:"extraEnvs,omitempty"`
}

type extraArg struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type extraEnv struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// componentPatches renders the componentsPatches the tuning needs ("" for
// none).
func (t Tuning) componentPatches() (string, error) {
	// A repeated --authorization-always-allow-paths adds to kwokctl's list.
	allowPprof := extraArg{Key: "authorization-always-allow-paths", Value: "/debug/pprof/*"}
	scheduler := componentPatch{Name: "kube-scheduler"}
	controllerManager := componentPatch{Name: "kube-controller-manager"}
	apiserver := componentPatch{Name: "kube-apiserver"}
	if t.Profiling {
		scheduler.ExtraArgs = append(scheduler.ExtraArgs, allowPprof)
		controllerManager.ExtraArgs = append(controllerManager.ExtraArgs, allowPprof)
	}
	if t.ControllerManagerQPS > 0 && !t.DisableQPSLimits {
		controllerManager.ExtraArgs = append(controllerManager.ExtraArgs,
			extraArg{"kube-api-qps", fmt.Sprint(t.ControllerManagerQPS)}, extraArg{"kube-api-burst", fmt.Sprint(2 * t.ControllerManagerQPS)})
	}
	if len(t.DisabledControllers) > 0 {
		controllerManager.ExtraArgs = append(controllerManager.ExtraArgs, extraArg{"controllers", "*,-" + strings.Join(t.DisabledControllers, ",-")})
	}
	if len(t.DisabledAdmissionPlugins) > 0 {
		apiserver.ExtraArgs = append(apiserver.ExtraArgs, extraArg{"disable-admission-plugins", strings.Join(t.DisabledAdmissionPlugins, ",")})
	}
	if t.APIServerGOGC != "" {
		apiserver.ExtraEnvs = append(apiserver.ExtraEnvs, extraEnv{"GOGC", t.APIServerGOGC})
	}
	if t.APIServerMemoryLimit != "" {
		apiserver.ExtraEnvs = append(apiserver.ExtraEnvs, extraEnv{"GOMEMLIMIT", t.APIServerMemoryLimit})
	}
	var patches []componentPatch
	for _, p := range []componentPatch{scheduler, controllerManager, apiserver} {
		if len(p.ExtraArgs)+len(p.ExtraEnvs) > 0 {
			patches = append(patches, p)
		}
	}
	if len(patches) == 0 {
		return "", nil
	}
	out, err := yaml.Marshal(map[string]any{"componentsPatches": patches})
	return string(out), err
}
