// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/gpupool/gpupool/e2e/autoscaler"
	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/wait"
	"github.com/gpupool/gpupool/fakegpu"
	"github.com/gpupool/gpupool/fakegpu/controller"
)

// Options tune how the run drives the cluster.
type Options struct {
	// Workers create pods in parallel (default 32).
	Workers int
	// ClusterDir is where the cluster's processes run from, to find them
	// for memory figures ("" : only this process).
	ClusterDir string
	// Processes, when set, lists more processes the run measures beside
	// the cluster's: the autoscaler that runs beside it.
	Processes func() []cluster.Process
	// ProfileDir, when set, receives CPU profiles of the apiserver and
	// the scheduler during each burst and their heap profiles at the end
	// (the cluster must run with cluster.Tuning.Profiling).
	ProfileDir string
	Log        func(format string, args ...any)
	// Phase, when set, says which phase runs now (the console's status
	// line or heartbeat names it: a 10,000-node fill runs for minutes).
	Phase func(format string, args ...any)
	// Labels go on every object the run creates (namespace, service
	// accounts, pods): in a cluster gpupool did not make, the run removes
	// what carries them.
	Labels map[string]string
	// NodeSelector goes on every pod beside its pool's: a fleet joined to
	// a cluster with nodes of its own keeps the run's pods on the run's
	// nodes.
	NodeSelector map[string]string
}

// Result is everything a scale run measured.
type Result struct {
	Fleet     string `json:"fleet"`
	Workload  string `json:"workload"`
	Candidate string `json:"candidate"`
	Nodes     int    `json:"nodes"`
	// NodeBringUp is fleet creation as the harness measured it.
	NodeBringUp BringUp       `json:"nodeBringUp"`
	Phases      []PhaseResult `json:"phases"`
	// NodesNotReadyMax is the most nodes seen not Ready at once after
	// bring-up (the target: 0, nodes held Ready for the whole run).
	NodesNotReadyMax int `json:"nodesNotReadyMax"`
	// APIMutating covers the whole run, bring-up included.
	APIMutating MutatingLatency `json:"apiMutating"`
	Memory      []ProcessMemory `json:"memory"`
	// ControlPlanePeakRSS sums the peak RSS of every cluster process
	// (Karpenter, beside it, has a row of its own).
	ControlPlanePeakRSS int64 `json:"controlPlanePeakRSSBytes"`
	LivePods            int   `json:"livePodsAtEnd"`
	// PeakLivePods is the most pods of the run alive at a phase's end.
	PeakLivePods int `json:"peakLivePods"`
	// Threshold is the workload's, kept with the figures it is held against.
	Threshold *WorkloadThreshold `json:"threshold,omitempty"`
	// ClaimsOnly: every pod of the mix gets its GPU through a
	// ResourceClaimTemplate, so bursts are set beside scheduler_perf's
	// SchedulingWithResourceClaimTemplate.
	ClaimsOnly bool `json:"claimsOnly,omitempty"`
}

// BringUp is node creation.
type BringUp struct {
	Nodes          int     `json:"nodes"`
	CreateSeconds  float64 `json:"createSeconds"`
	ReadySeconds   float64 `json:"readySeconds"`
	NodesPerSecond float64 `json:"nodesPerSecond"`
}

// PhaseResult is one phase's figures.
type PhaseResult struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"` // burst, churn, fill or autoscale
	Created int    `json:"created"`
	Deleted int    `json:"deleted"`
	// DeletedUnbound: churn deleted them before they were bound, a sign
	// the scheduler fell more than ten seconds behind.
	DeletedUnbound int `json:"deletedUnbound"`
	// DeletedPending: Pending pods deleted before the phase (deletePending).
	DeletedPending int     `json:"deletedPending,omitempty"`
	Seconds        float64 `json:"seconds"`
	// SchedulingThroughput: pods bound per second, sampled every second
	// from the phase's first create until its last schedulable pod is bound.
	SchedulingThroughput Percentiles `json:"SchedulingThroughput"`
	ThroughputSeries     []float64   `json:"throughputSeries"`
	// CreateToScheduled: from just before the create call to the harness
	// seeing the pod bound, in seconds.
	CreateToScheduled Percentiles `json:"CreateToScheduled"`
	// ClaimAllocation: from the harness seeing a ResourceClaim of the
	// phase's pods to seeing it allocated, in seconds (nil: no claims).
	ClaimAllocation *Percentiles    `json:"ClaimAllocation,omitempty"`
	APIMutating     MutatingLatency `json:"apiMutating"`
	Contract        Contract        `json:"contract"`
	TimedOut        string          `json:"timedOut,omitempty"`
	// FullPools: mix entries a fill phase stopped placing, their nodes full.
	FullPools []string `json:"fullPools,omitempty"`
	// Threshold is the phase's, kept with the figures it is held against.
	Threshold *PhaseThreshold `json:"threshold,omitempty"`
	// Autoscale: an autoscale phase's nodes and times.
	Autoscale *AutoscaleResult `json:"autoscale,omitempty"`
}

// Runner drives one workload on a provisioned cluster.
type Runner struct {
	cs       kubernetes.Interface
	fl       *fleet.Fleet
	w        *Workload
	opt      Options
	runID    string
	tmpl     []template
	expected []string
	times    *podTimes
	claims   *claimTimes

	pods, nodes cache.SharedIndexInformer
	notReady    atomic.Int64
	notReadyMax atomic.Int64
	nodesStop   chan struct{}
	seq         atomic.Int64
	prof        *profiler // nil: no profiles
	// draPools are the mix's pools whose GPUs DRA serves: the contract
	// check reads their claims and devices, and the first phase waits
	// for their devices to be published.
	draPools map[string]bool
	// cycles are the orders phases draw mix entries in: [0] the fixed
	// pools' entries, [1] the autoscaled pools', for autoscale phases.
	cycles [2][]int
	// next is each entry's count of pods so far: its trust domains take
	// them in turn.
	next []atomic.Int64
	// needs are each autoscale phase's pods and nodes per NodePool, by
	// index into spec.phases.
	needs map[int][]AutoscaledPoolResult
	made  madeNodes
}

// NewRunner prepares pod templates and namespaces.
func NewRunner(ctx context.Context, cs kubernetes.Interface, fl *fleet.Fleet, w *Workload, res Resolver, runID string, opt Options) (*Runner, error) {
	if opt.Workers == 0 {
		opt.Workers = 32
	}
	if opt.Log == nil {
		opt.Log = func(string, ...any) {}
	}
	var classes []resourcev1.DeviceClass
	if slices.ContainsFunc(w.Spec.Mix, MixEntry.Claim) {
		list, err := cs.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing DeviceClasses for the mix's claim pods: %w", err)
		}
		classes = list.Items
	}
	tmpl, err := buildTemplates(ctx, w, fl, res, classes, runID)
	if err != nil {
		return nil, err
	}
	for _, t := range tmpl {
		for _, ct := range t.claims {
			for k, v := range opt.Labels {
				ct.Labels[k] = v
				ct.Spec.ObjectMeta.Labels[k] = v
			}
		}
		for _, p := range t.pods {
			for k, v := range opt.Labels {
				p.Labels[k] = v
			}
			for k, v := range opt.NodeSelector {
				if p.Spec.NodeSelector == nil {
					p.Spec.NodeSelector = map[string]string{}
				}
				p.Spec.NodeSelector[k] = v
			}
		}
	}
	if err := ensureNamespaces(ctx, cs, tmpl, opt.Labels); err != nil {
		return nil, err
	}
	if err := ensureClaimTemplates(ctx, cs, tmpl); err != nil {
		return nil, err
	}
	// The caller checked the workload against the fleet before any
	// cluster; held here too, as a phase without entries of its kind
	// would have nothing to draw.
	infos := PoolInfos(fl, res)
	if err := CheckPools(w, infos); err != nil {
		return nil, err
	}
	needs, err := autoscaleNeeds(w, infos)
	if err != nil {
		return nil, err
	}
	r := &Runner{cs: cs, fl: fl, w: w, opt: opt, runID: runID, tmpl: tmpl, times: newPodTimes(), claims: newClaimTimes(), nodesStop: make(chan struct{}),
		draPools: draPoolsOf(fl, w), needs: needs, next: make([]atomic.Int64, len(tmpl))}
	for i, auto := range []bool{false, true} {
		r.cycles[i] = cycleOf(w.Spec.Mix, func(e int) bool { return tmpl[e].autoscaled == auto })
	}
	if opt.ProfileDir != "" {
		r.prof = newProfiler(opt.ProfileDir, fl.Metadata.Name, cs, opt.ClusterDir, opt.Log)
	}
	for _, t := range tmpl {
		r.expected = append(r.expected, t.expected)
	}
	return r, nil
}

// Run executes every phase. The fleet must be Ready.
func (r *Runner) Run(ctx context.Context, bringUp fleet.CreateStats, before APISnapshot) (*Result, error) {
	res := &Result{Fleet: r.fl.Metadata.Name, Workload: r.w.Metadata.Name, Nodes: bringUp.Nodes, Threshold: r.w.Spec.Threshold,
		ClaimsOnly:  !slices.ContainsFunc(r.w.Spec.Mix, func(m MixEntry) bool { return !m.Claim() }),
		NodeBringUp: BringUp{Nodes: bringUp.Nodes, CreateSeconds: bringUp.CreateTime.Seconds(), ReadySeconds: bringUp.ReadyTime.Seconds(), NodesPerSecond: bringUp.NodesPerSec}}
	// This process may serve several runs: its peak RSS restarts here
	// (writing 5 to clear_refs resets VmHWM) and its CPU is counted from here.
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	ownCPU := cpuOf(os.Getpid())
	stop := make(chan struct{})
	defer close(stop)
	if err := r.startInformers(ctx, stop); err != nil {
		return nil, err
	}
	if r.prof != nil {
		// Also after a failed phase: the profile may say why.
		defer r.prof.heap(ctx, "end")
	}
	if err := r.waitDRAPublished(ctx); err != nil {
		return res, err
	}
	for i, ph := range r.w.Spec.Phases {
		if r.opt.Phase != nil {
			r.opt.Phase("scale: fleet %s (%d nodes), phase %s (%s)", r.fl.Metadata.Name, bringUp.Nodes, ph.Name, ph.Opcode)
		}
		pr, err := r.phase(ctx, i, ph)
		if err != nil {
			return res, fmt.Errorf("phase %s: %w", ph.Name, err)
		}
		res.Phases = append(res.Phases, *pr)
		res.PeakLivePods = max(res.PeakLivePods, r.live())
		if pr.Kind == KindFill {
			r.opt.Log("phase %s: %d pods bound by the harness (no scheduler) at %.0f pods/s, mutating API p99 %.3fs, %d contract violations",
				pr.Name, pr.Created, float64(pr.Created)/max(pr.Seconds, 1e-9), pr.APIMutating.Perc99, pr.Contract.Violations)
			for _, f := range pr.FullPools {
				r.opt.Log("phase %s: stopped placing %s", pr.Name, f)
			}
			continue
		}
		if a := pr.Autoscale; a != nil {
			r.opt.Log("phase %s: %d pods created for autoscaled pools, first node after %.1fs, %d of them scheduled after %.1fs, %d nodes made for %d needed, %d contract violations",
				pr.Name, pr.Created, a.FirstNodeSeconds, pr.Created-a.Unscheduled, a.AllScheduledSeconds, a.NodesCreated, a.NodesNeeded, pr.Contract.Violations)
			continue
		}
		claims := ""
		if c := pr.ClaimAllocation; c != nil {
			claims = fmt.Sprintf(", claim allocation p50 %.2fs p99 %.2fs", c.Perc50, c.Perc99)
		}
		r.opt.Log("phase %s: %d pods created, %.0f pods/s average SchedulingThroughput, create→scheduled p99 %.2fs%s, mutating API p99 %.3fs, %d contract violations",
			pr.Name, pr.Created, pr.SchedulingThroughput.Average, pr.CreateToScheduled.Perc99, claims, pr.APIMutating.Perc99, pr.Contract.Violations)
	}
	res.NodesNotReadyMax = int(r.notReadyMax.Load())
	if after, err := scrapeAPIServer(ctx, r.cs); err == nil && before != nil {
		res.APIMutating = after.since(before).summary()
	}
	res.Memory = processesUnder(r.opt.ClusterDir, r.opt.Processes)
	for i, m := range res.Memory {
		if m.PID == os.Getpid() {
			res.Memory[i].CPUSeconds -= ownCPU
			continue
		}
		if !m.Beside {
			res.ControlPlanePeakRSS += m.PeakRSS
		}
	}
	res.LivePods = len(r.pods.GetStore().ListKeys())
	return res, nil
}

// Snapshot scrapes the apiserver's histograms (call before bring-up to
// cover it).
func Snapshot(ctx context.Context, cs kubernetes.Interface) (APISnapshot, error) {
	return scrapeAPIServer(ctx, cs)
}

func (r *Runner) startInformers(ctx context.Context, stop chan struct{}) error {
	pf := informers.NewSharedInformerFactoryWithOptions(r.cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = LabelRun + "=" + r.runID
	}), informers.WithTransform(controller.StripManagedFields))
	r.pods = pf.Core().V1().Pods().Informer()
	seen := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			r.times.bound(p.Namespace+"/"+p.Name, time.Now())
		}
	}
	if _, err := r.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, o any) { seen(o) }}); err != nil {
		return err
	}
	nf := informers.NewSharedInformerFactoryWithOptions(r.cs, 0, informers.WithTransform(controller.StripManagedFields))
	r.nodes = nf.Core().V1().Nodes().Informer()
	var mu sync.Mutex
	down := map[string]bool{}
	track := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		if np := n.Labels[autoscaler.LabelNodePool]; np != "" {
			// Not the fleet's: born NotReady, and counted by the
			// autoscale phase that asked for it.
			r.made.seen(n.Name, np, time.Now())
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if fleet.NodeReady(n) {
			delete(down, n.Name)
		} else {
			down[n.Name] = true
		}
		r.notReady.Store(int64(len(down)))
		if int64(len(down)) > r.notReadyMax.Load() {
			r.notReadyMax.Store(int64(len(down)))
		}
	}
	if _, err := r.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: track, UpdateFunc: func(_, o any) { track(o) }}); err != nil {
		return err
	}
	synced := []cache.InformerSynced{r.pods.HasSynced, r.nodes.HasSynced}
	if len(r.draPools) > 0 {
		// The claims the resourceclaim controller makes from the run's
		// pods' templates: owned by the pod, none of its labels. Not the
		// scheduler's extended-resource claims: made in PreBind with the
		// allocation it already chose (dra-facts §3), they would count 0.
		cf := informers.NewSharedInformerFactoryWithOptions(r.cs, 0, informers.WithTransform(controller.StripManagedFields))
		claims := cf.Resource().V1().ResourceClaims().Informer()
		seenClaim := func(obj any) {
			cl, ok := obj.(*resourcev1.ResourceClaim)
			if !ok || cl.Annotations[resourcev1.ExtendedResourceClaimAnnotation] == "true" {
				return
			}
			for _, o := range cl.OwnerReferences {
				if pod := cl.Namespace + "/" + o.Name; o.Kind == "Pod" && r.times.has(pod) {
					r.claims.observe(cl.Namespace+"/"+cl.Name, pod, cl.Status.Allocation != nil, time.Now())
				}
			}
		}
		if _, err := claims.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: seenClaim, UpdateFunc: func(_, o any) { seenClaim(o) }}); err != nil {
			return err
		}
		cf.Start(stop)
		synced = append(synced, claims.HasSynced)
	}
	pf.Start(stop)
	nf.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return errors.New("scale: informer caches did not sync")
	}
	r.notReadyMax.Store(r.notReady.Load())
	return nil
}

// newPod returns the i-th pod of a phase, following the mix.
func (r *Runner) newPod(ph Phase, i int) *corev1.Pod {
	pod, _ := r.podOf(ph.Name, r.pick(ph, i))
	return pod
}

// pick is the mix entry of a phase's i-th pod: autoscale phases draw the
// autoscaled pools' entries, the others the fixed pools'.
func (r *Runner) pick(ph Phase, i int) int {
	c := r.cycles[0]
	if ph.Autoscale() {
		c = r.cycles[1]
	}
	return c[i%len(c)]
}

// podOf returns a new pod of mix entry entry, and the template it copies
// (trust domains in turn).
func (r *Runner) podOf(phase string, entry int) (pod, template *corev1.Pod) {
	t := r.tmpl[entry]
	n := r.seq.Add(1)
	template = t.pods[int(r.next[entry].Add(1)-1)%len(t.pods)]
	pod = template.DeepCopy()
	pod.Name = fmt.Sprintf("%s-%s-%d", r.runID, phase, n)
	pod.Labels[LabelPhase] = phase
	return pod, template
}

func (r *Runner) create(ctx context.Context, pod *corev1.Pod) error {
	r.times.create(pod.Namespace+"/"+pod.Name, time.Now())
	_, err := r.cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	return err
}

func (r *Runner) phase(ctx context.Context, index int, ph Phase) (*PhaseResult, error) {
	pr := &PhaseResult{Name: ph.Name, Kind: ph.Kind(), Threshold: ph.Threshold}
	before, err := scrapeAPIServer(ctx, r.cs)
	if err != nil {
		return nil, err
	}
	timeout := ph.WaitTimeout()
	if ph.DeletePending {
		if pr.DeletedPending, err = r.deletePending(ctx, timeout); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	var keys []string // schedulable pods of this phase
	var keysMu sync.Mutex
	var created, failed atomic.Int64
	var firstErr atomic.Value
	record := func(pod *corev1.Pod) {
		if err := r.create(ctx, pod); err != nil {
			if failed.Add(1) == 1 {
				firstErr.Store(fmt.Errorf("creating pod %s/%s: %w", pod.Namespace, pod.Name, err))
			}
			return
		}
		created.Add(1)
		entry, _ := strconv.Atoi(pod.Labels[LabelEntry])
		if r.expected[entry] == "" {
			keysMu.Lock()
			keys = append(keys, pod.Namespace+"/"+pod.Name)
			keysMu.Unlock()
		}
	}

	// Throughput sampler: pods of this phase bound in each second.
	sampleDone := make(chan struct{})
	var samples []float64
	var samplerWG sync.WaitGroup
	stopSampler := sync.OnceFunc(func() { close(sampleDone); samplerWG.Wait() })
	defer stopSampler()
	samplerWG.Add(1)
	go func() {
		defer samplerWG.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		last := r.times.scheduledCount()
		for {
			select {
			case <-sampleDone:
				return
			case <-tick.C:
				now := r.times.scheduledCount()
				samples = append(samples, float64(now-last))
				last = now
			}
		}
	}()

	if ph.Churn() {
		pr.Deleted, pr.DeletedUnbound, err = r.churn(ctx, ph, record)
		if err != nil {
			return nil, err
		}
	} else {
		if r.prof != nil && pr.Kind == KindBurst {
			// Past the first seconds' ramp-up, for as long as the
			// burst is likely to last at a few dozen pods/s.
			defer r.prof.cpu(ctx, ph.Name, 5*time.Second, profileSeconds)()
		}
		if pr.FullPools, err = r.burst(ctx, ph, record); err != nil {
			return nil, err
		}
	}
	if v := firstErr.Load(); v != nil {
		return nil, fmt.Errorf("%d of %d creates failed, first: %w", failed.Load(), int(created.Load()+failed.Load()), v.(error))
	}
	pr.Created = int(created.Load())

	// Wait for the phase's schedulable pods to be bound; stop early when
	// nothing has been bound for stallAfter and the scheduler has judged
	// every pod still waiting unschedulable (a full pool does not drain).
	deadline := time.Now().Add(timeout)
	last, lastChange, stalled := -1, time.Now(), false
	// A fixed interval: these waits read the informers' caches, which
	// costs the apiserver nothing, and the interval is what a phase's
	// measured end is accurate to.
	// An autoscale phase's pods are all unschedulable until nodes come:
	// a node made is progress too.
	lastMade := 0
	err = wait.Every(ctx, fmt.Sprintf("the %d schedulable pods of phase %s to be bound", len(keys), ph.Name), timeout, wait.Interval, func(context.Context) (bool, string, error) {
		settled := r.times.settled(keys)
		if settled != last {
			last, lastChange = settled, time.Now()
		}
		if ph.Autoscale() {
			if made := r.made.count(start); made != lastMade {
				lastMade, lastChange = made, time.Now()
			}
		}
		seen := fmt.Sprintf("%d of %d bound", settled, len(keys))
		if settled < len(keys) && time.Since(lastChange) > stallAfter && r.allJudged(keys) {
			stalled = true
			return true, seen, nil
		}
		return settled >= len(keys), seen, nil
	})
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case stalled:
		pr.TimedOut = fmt.Sprintf("no pod bound for %s and the scheduler found the rest unschedulable: %d of %d schedulable pods of phase %s were bound", stallAfter, last, len(keys), ph.Name)
	case err != nil:
		pr.TimedOut = err.Error()
	}
	stopSampler()
	pr.Seconds = time.Since(start).Seconds()
	pr.ThroughputSeries = samples
	pr.SchedulingThroughput = percentiles(trimIdleTail(samples))
	pr.CreateToScheduled = percentiles(seconds(r.times.latencies(keys)))
	if l := r.claims.latencies(keys); len(l) > 0 {
		p := percentiles(seconds(l))
		pr.ClaimAllocation = &p
	}

	// Deliberately unschedulable pods: wait until the scheduler has tried
	// each, so "stays Pending" means it was judged, then check the contract.
	if err := r.waitJudged(ctx, time.Until(deadline)+30*time.Second); err != nil {
		pr.TimedOut = err.Error()
	}
	if after, err := scrapeAPIServer(ctx, r.cs); err == nil {
		pr.APIMutating = after.since(before).summary()
	}
	pr.Contract = r.contract(ctx)
	if ph.Autoscale() {
		pr.Autoscale = r.autoscaleResult(index, start, keys, pr.Seconds)
	}
	return pr, nil
}

// autoscaleResult is what an autoscale phase that began at start measured
// of the nodes made for it and of its pods (keys), which it waited for
// for waited seconds.
func (r *Runner) autoscaleResult(index int, start time.Time, keys []string, waited float64) *AutoscaleResult {
	made, first := r.made.since(start)
	a := &AutoscaleResult{Pools: slices.Clone(r.needs[index]), AllScheduledSeconds: waited}
	if !first.IsZero() {
		a.FirstNodeSeconds = first.Sub(start).Seconds()
	}
	needed := map[string]int{}
	for i := range a.Pools {
		p := &a.Pools[i]
		p.NodesCreated = made[p.NodePool]
		a.NodesNeeded += p.NodesNeeded
		needed[p.NodePool] += p.NodesNeeded
	}
	// Every node made since, whatever its NodePool: a node a NodePool
	// these pods need nothing of made is one too many.
	for np, n := range made {
		a.NodesCreated += n
		a.NodesOverNeeded += max(n-needed[np], 0)
	}
	a.Unscheduled = len(keys) - r.times.settled(keys)
	if last, ok := r.times.lastBound(keys); ok && a.Unscheduled == 0 {
		a.AllScheduledSeconds = last.Sub(start).Seconds()
	}
	return a
}

// profileSeconds is how long a burst's CPU profiles run.
const profileSeconds = 30 * time.Second

// stallAfter is how long a phase may bind nothing before, with every
// waiting pod judged unschedulable, the wait gives up.
const stallAfter = 30 * time.Second

// allJudged reports whether every unbound pod among keys is marked
// unschedulable by the scheduler.
func (r *Runner) allJudged(keys []string) bool {
	for _, k := range keys {
		o, exists, err := r.pods.GetStore().GetByKey(k)
		if err != nil || !exists {
			continue
		}
		if p := o.(*corev1.Pod); p.Spec.NodeName == "" && p.DeletionTimestamp == nil && !unschedulable(p) {
			return false
		}
	}
	return true
}

// trimIdleTail drops trailing zero samples: the sampler's last tick can
// fall after the last bind.
func trimIdleTail(s []float64) []float64 {
	for len(s) > 0 && s[len(s)-1] == 0 {
		s = s[:len(s)-1]
	}
	return s
}

// burst creates the phase's pods as fast as the workers go (or at Rate);
// a fill phase binds them itself, creates only well-formed shapes, and
// returns the mix entries it stopped placing when their nodes were full.
func (r *Runner) burst(ctx context.Context, ph Phase, record func(*corev1.Pod)) (fullPools []string, err error) {
	count := ph.Pods
	if ph.LivePodsPerNode > 0 {
		count = max(0, ph.LivePodsPerNode*r.fleetNodes()-r.live())
	}
	next := func(i int) (*corev1.Pod, error) { return r.newPod(ph, i), nil }
	if ph.Fill() {
		var nodes []*corev1.Node
		for _, o := range r.nodes.GetStore().List() {
			nodes = append(nodes, o.(*corev1.Node))
		}
		var pods []*corev1.Pod
		for _, o := range r.pods.GetStore().List() {
			pods = append(pods, o.(*corev1.Pod))
		}
		pl := newPlacer(nodes, pods)
		pick := 0
		full := map[int]bool{} // mix entries whose nodes have no room left
		placeable := 0
		for i, want := range r.expected {
			if want == "" && !r.tmpl[i].autoscaled {
				placeable++
			}
		}
		next = func(int) (*corev1.Pod, error) {
			for {
				entry := r.pick(ph, pick)
				pick++
				if r.expected[entry] != "" || full[entry] {
					if len(full) == placeable {
						return nil, errPoolsFull
					}
					continue
				}
				pod, template := r.podOf(ph.Name, entry)
				node, err := pl.place(template)
				if err != nil {
					// As the scheduler would leave it Pending: the rest
					// of the mix goes on filling.
					full[entry] = true
					fullPools = append(fullPools, fmt.Sprintf("spec.mix[%d] (pool %s): %v", entry, r.w.Spec.Mix[entry].Pool, err))
					continue
				}
				pod.Spec.NodeName = node
				return pod, nil
			}
		}
	}
	work := make(chan *corev1.Pod, r.opt.Workers)
	var wg sync.WaitGroup
	for w := 0; w < r.opt.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				record(p)
			}
		}()
	}
	defer func() { close(work); wg.Wait() }()
	var tick *time.Ticker
	if ph.Rate > 0 {
		tick = time.NewTicker(time.Duration(float64(time.Second) / ph.Rate))
		defer tick.Stop()
	}
	for i := 0; i < count && ctx.Err() == nil; i++ {
		if tick != nil {
			<-tick.C
		}
		pod, err := next(i)
		if errors.Is(err, errPoolsFull) {
			return fullPools, nil
		}
		if err != nil {
			return fullPools, err
		}
		work <- pod
	}
	return fullPools, nil
}

// errPoolsFull ends a fill phase early: no well-formed pod has room left.
var errPoolsFull = errors.New("every pool of the mix is full")

// fleetNodes counts the fleet's nodes, not those an autoscaler made.
func (r *Runner) fleetNodes() int {
	n := 0
	for _, o := range r.nodes.GetStore().List() {
		if o.(*corev1.Node).Labels[autoscaler.LabelNodePool] == "" {
			n++
		}
	}
	return n
}

// live counts the run's pods not being deleted.
func (r *Runner) live() int {
	n := 0
	for _, o := range r.pods.GetStore().List() {
		if o.(*corev1.Pod).DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// churn creates Rate pods/s for Duration and deletes each pod ten seconds
// of pods later, keeping a steady population while the scheduler works.
func (r *Runner) churn(ctx context.Context, ph Phase, record func(*corev1.Pod)) (deletedN, unboundN int, err error) {
	interval := time.Duration(float64(time.Second) / ph.Rate)
	keep := int(ph.Rate * 10)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	end := time.Now().Add(ph.Duration.Duration)
	var live []*corev1.Pod
	var wg sync.WaitGroup
	var deleted, unbound atomic.Int64
	sem := make(chan struct{}, r.opt.Workers)
	for i := 0; time.Now().Before(end); i++ {
		select {
		case <-ctx.Done():
			wg.Wait()
			return int(deleted.Load()), int(unbound.Load()), ctx.Err()
		case <-tick.C:
		}
		pod := r.newPod(ph, i)
		live = append(live, pod)
		var victim *corev1.Pod
		if len(live) > keep {
			victim, live = live[0], live[1:]
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			record(pod)
			if victim != nil {
				if err := r.cs.CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{}); err == nil {
					deleted.Add(1)
					entry, _ := strconv.Atoi(victim.Labels[LabelEntry])
					if !r.times.deleted(victim.Namespace+"/"+victim.Name) && r.expected[entry] == "" {
						unbound.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	return int(deleted.Load()), int(unbound.Load()), nil
}

// deletePending deletes every Pending pod of the run and waits until the
// watch has seen them go.
func (r *Runner) deletePending(ctx context.Context, timeout time.Duration) (int, error) {
	var pending []*corev1.Pod
	for _, o := range r.pods.GetStore().List() {
		if p := o.(*corev1.Pod); p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
			pending = append(pending, p)
		}
	}
	sem := make(chan struct{}, r.opt.Workers)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for _, p := range pending {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := r.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		return 0, fmt.Errorf("deleting Pending pods: %d of %d deletes failed", n, len(pending))
	}
	err := wait.Every(ctx, fmt.Sprintf("%d deleted Pending pods to be gone", len(pending)), timeout, wait.Interval, func(context.Context) (bool, string, error) {
		left := 0
		for _, p := range pending {
			if _, exists, _ := r.pods.GetStore().Get(p); exists {
				left++
			}
		}
		return left == 0, fmt.Sprintf("%d still there", left), nil
	})
	return len(pending), err
}

// waitJudged waits until every Pending pod of the run has been found
// unschedulable by the scheduler.
func (r *Runner) waitJudged(ctx context.Context, timeout time.Duration) error {
	return wait.Every(ctx, "every Pending pod of the run to be judged by the scheduler", timeout, wait.Interval, func(context.Context) (bool, string, error) {
		waiting := 0
		for _, o := range r.pods.GetStore().List() {
			if p := o.(*corev1.Pod); p.Spec.NodeName == "" && p.DeletionTimestamp == nil && !unschedulable(p) {
				waiting++
			}
		}
		return waiting == 0, fmt.Sprintf("%d not yet marked unschedulable", waiting), nil
	})
}

func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return true
		}
	}
	return false
}

func (r *Runner) contract(ctx context.Context) Contract {
	var nodes []corev1.Node
	for _, o := range r.nodes.GetStore().List() {
		nodes = append(nodes, *o.(*corev1.Node))
	}
	var pods []corev1.Pod
	for _, o := range r.pods.GetStore().List() {
		pods = append(pods, *o.(*corev1.Pod))
	}
	nss, err := r.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return Contract{Violations: 1, Examples: []string{"listing namespaces: " + err.Error()}}
	}
	dra, err := r.draState(ctx)
	if err != nil {
		return Contract{Violations: 1, Examples: []string{err.Error()}}
	}
	return checkContract(r.fl, r.w, r.expected, nodes, pods, nss.Items, dra)
}

// draPoolsOf names the mix's pools whose GPUs DRA serves.
func draPoolsOf(fl *fleet.Fleet, w *Workload) map[string]bool {
	out := map[string]bool{}
	for _, p := range allPools(fl) {
		if p.GPU() && p.DRA != nil && slices.ContainsFunc(w.Spec.Mix, func(m MixEntry) bool { return m.Pool == p.Name }) {
			out[p.Name] = true
		}
	}
	return out
}

// draState reads what the contract check needs of DRA: the claims in the
// namespaces the run's pods go to, NVIDIA's driver's slices and the
// DeviceClasses (nil when the mix has no DRA pool).
func (r *Runner) draState(ctx context.Context) (*draState, error) {
	if len(r.draPools) == 0 {
		return nil, nil
	}
	var claims []resourcev1.ResourceClaim
	seen := map[string]bool{}
	for _, t := range r.tmpl {
		for _, p := range t.pods {
			if seen[p.Namespace] {
				continue
			}
			seen[p.Namespace] = true
			// All of the namespace's claims, not only the run's labelled
			// ones: the scheduler's claims for limits DRA serves carry
			// no label of the run (dra-facts §3).
			list, err := r.cs.ResourceV1().ResourceClaims(p.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, fmt.Errorf("listing ResourceClaims in %s: %w", p.Namespace, err)
			}
			claims = append(claims, list.Items...)
		}
	}
	published, err := r.cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: driverSelector})
	if err != nil {
		return nil, fmt.Errorf("listing ResourceSlices: %w", err)
	}
	classes, err := r.cs.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing DeviceClasses: %w", err)
	}
	return newDRAState(published.Items, claims, classes.Items), nil
}

// driverSelector limits a ResourceSlice list to NVIDIA's GPU driver.
var driverSelector = fields.OneTermEqualSelector("spec.driver", fakegpu.DRADriver).String()

// waitDRAPublished waits until NVIDIA's driver has published every pool
// of the mix's DRA pools' nodes: the fakegpu controller publishes them
// after the nodes join, and a claim burst before that would measure the
// wait for devices, not scheduling.
func (r *Runner) waitDRAPublished(ctx context.Context) error {
	if len(r.draPools) == 0 {
		return nil
	}
	var nodes []string
	ours := labels.SelectorFromSet(r.opt.NodeSelector) // the run's nodes in a shared cluster
	for _, o := range r.nodes.GetStore().List() {
		if n := o.(*corev1.Node); r.draPools[n.Labels[fleet.LabelPool]] && ours.Matches(labels.Set(n.Labels)) {
			nodes = append(nodes, n.Name)
		}
	}
	start := time.Now()
	// Every second, not every 100 ms: each poll lists every slice.
	err := wait.Every(ctx, fmt.Sprintf("NVIDIA's DRA driver to publish the devices of %d nodes", len(nodes)), 5*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		list, err := r.cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: driverSelector})
		if err != nil {
			return false, "", err
		}
		missing := unpublished(nodes, list.Items)
		return len(missing) == 0, fmt.Sprintf("%d of %d nodes without a complete pool, e.g. %v", len(missing), len(nodes), missing[:min(3, len(missing))]), nil
	})
	if err == nil {
		r.opt.Log("DRA devices of %d nodes published after %s", len(nodes), time.Since(start).Round(time.Millisecond))
	}
	return err
}
