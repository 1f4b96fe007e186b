// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
)

// NodeObservation is what the controller reads of one node.
type NodeObservation struct {
	// Name of the node: device IDs derive from it.
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	// Capacity is the node's nvidia.com capacity as its kubelet last
	// published it: the resources a device plugin registered before.
	Capacity map[string]int64
	Now      time.Time
}

// NodeDesired is what the simulated stack wants the node to look like.
type NodeDesired struct {
	// Labels: every label the simulated stack writes this pass (the
	// Operator's, the MIG manager's, GFD's), with their values; Remove lists
	// GFD or MIG-state labels it no longer publishes.
	Labels map[string]string
	Remove []string
	// Served is what the device plugin serves (empty while it is down).
	// Capacity and Allocatable are the nvidia.com resources the kubelet
	// publishes from it (KubeletResources); a resource the node had and
	// that is absent here is removed.
	Served                map[string]int64
	Capacity, Allocatable map[string]int64
	// Annotations the controller keeps on the node ("" value: delete).
	Annotations map[string]string
	// RequeueAfter > 0: reconcile again then (MIG reconfiguration in
	// progress, or a stopped plugin's capacity about to drop).
	RequeueAfter time.Duration
	// LayoutChanged: the GPUs were repartitioned; GPU pods bound to the
	// node lost their devices.
	LayoutChanged bool
	FromLayout    string
	ToLayout      string
	// PluginDown explains why the device plugin does not serve (empty: it does).
	PluginDown string
	// Unhealthy lists, per resource, the devices the plugin reports
	// unhealthy: in capacity, not in allocatable.
	Unhealthy map[string][]string
	// DRA is what NVIDIA's DRA driver publishes for the node (nil: no
	// driver, or DRAErr says why it publishes nothing). The generation in
	// each spec is 0: the pool's generation is the publisher's.
	DRA    []resourcev1.ResourceSliceSpec
	DRAErr string
}

// Inventory reads a node's GPU inventory from its annotations.
func Inventory(annotations map[string]string) (NodeInventory, bool, error) {
	key, ok := annotations[AnnotationSKU]
	if !ok {
		return NodeInventory{}, false, nil
	}
	sku, err := LookupSKU(key)
	if err != nil {
		return NodeInventory{}, true, fmt.Errorf("annotation %s: %w", AnnotationSKU, err)
	}
	n, err := strconv.Atoi(annotations[AnnotationGPUs])
	if err != nil || n < 1 {
		return NodeInventory{}, true, fmt.Errorf("annotation %s: want a GPU count >= 1, got %q", AnnotationGPUs, annotations[AnnotationGPUs])
	}
	return NodeInventory{SKU: sku, Count: n}, true, nil
}

// Desired runs the simulated GPU Operator on one node: the Operator's node
// labels, the MIG manager's protocol, the device plugin's advertisement and
// GFD's labels. It is pure and level-based: the controller applies the
// result and requeues when asked, and the node's annotations carry what the
// MIG manager remembers between passes.
func (s *Stack) Desired(inv NodeInventory, obs NodeObservation, reconfigureDelay time.Duration) NodeDesired {
	p := &nodePass{labels: copyMap(obs.Labels), d: NodeDesired{Labels: map[string]string{}, Annotations: map[string]string{}}}
	d := &p.d
	gpus := s.currentGPUs(inv, obs.Annotations)

	s.operatorLabels(p, inv, gpus)
	reconfiguring := false
	if s.migManagerRuns(p.labels) {
		gpus, reconfiguring = s.migManager(p, inv, obs, gpus, reconfigureDelay)
	}

	// Device plugin and GFD, from the MIG state on the GPUs. Each runs only
	// while its deploy label is "true"; GFD's labels stay as they are while
	// it does not (paused by the MIG manager, or not deployed).
	res := s.advertise(p.labels, inv, gpus)
	gfdRuns := p.labels[LabelDeployGFD] == "true"
	if gfdRuns {
		for k, v := range res.Labels {
			p.set(k, v)
		}
	}
	d.Served = res.Resources
	switch dp := p.labels[LabelDeployDevicePlugin]; {
	case res.Err != nil:
		d.PluginDown = res.Err.Error()
	case reconfiguring:
		d.PluginDown = "paused while the MIG manager applies " + p.labels[LabelMIGConfig]
	case dp != "true":
		d.PluginDown = fmt.Sprintf("the device plugin is not deployed on this node (%s=%s)", LabelDeployDevicePlugin, dp)
	case obs.Annotations[AnnotationDevicePlugin] == DevicePluginDown:
		d.PluginDown = "the device plugin pod on this node is down (" + AnnotationDevicePlugin + "=down)"
	}
	if d.PluginDown != "" {
		d.Served = map[string]int64{}
	}
	// The kubelet keeps what a plugin registered before (kubelet-facts §3):
	// a resource no longer served stays in capacity with 0 allocatable for
	// a grace period, then at capacity 0; one never registered (a DRA
	// node's, whose plugin never ran) is absent.
	var stopped map[string]time.Time
	var requeue time.Duration
	d.Capacity, d.Allocatable, stopped, requeue = KubeletResources(d.Served, obs.Capacity, DecodePluginStopped(obs.Annotations[AnnotationPluginStopped]), obs.Now)
	d.Annotations[AnnotationPluginStopped] = EncodePluginStopped(stopped)
	if requeue > 0 && (d.RequeueAfter == 0 || requeue < d.RequeueAfter) {
		d.RequeueAfter = requeue
	}
	d.Annotations[AnnotationPluginError] = d.PluginDown
	d.Annotations[AnnotationUnhealthyDevices], d.Annotations[AnnotationXidError] = "", ""
	if d.PluginDown == "" {
		unhealthy, err := s.unhealthy(obs.Name, p.labels, inv, gpus, obs.Annotations[AnnotationXid])
		if err != nil {
			d.Annotations[AnnotationXidError] = err.Error()
		}
		var ids []string
		for name, bad := range unhealthy {
			// The kubelet: allocatable = healthy devices, capacity = all.
			d.Allocatable[name] = max(d.Allocatable[name]-int64(len(bad)), 0)
			ids = append(ids, bad...)
		}
		sort.Strings(ids)
		d.Unhealthy = unhealthy
		d.Annotations[AnnotationUnhealthyDevices] = strings.Join(ids, ",")
	}

	// The DRA driver serves from the same GPUs; its health check taints
	// the devices of a GPU with an Xid.
	if cfg, ok, err := DRAConfigFor(obs.Annotations); ok {
		xids, _ := ParseXids(obs.Annotations[AnnotationXid], inv.Count)
		if err == nil {
			d.DRA, err = DRASlices(obs.Name, inv, gpus, cfg, 0, xids)
		}
		if err != nil {
			d.DRAErr = err.Error()
		}
	}
	d.Annotations[AnnotationDRAError] = d.DRAErr

	// Labels the stack owns but no longer publishes.
	for _, k := range sortedKeys(obs.Labels) {
		if _, keep := d.Labels[k]; keep || !strings.HasPrefix(k, LabelPrefix) || !stackOwnedLabel(k) {
			continue
		}
		if !gfdRuns && k != LabelMIGConfigState {
			continue
		}
		d.Remove = append(d.Remove, k)
	}
	return *d
}

// nodePass is one pass of Desired: the node's labels as they will be after
// it, and what it writes.
type nodePass struct {
	labels map[string]string
	d      NodeDesired
}

func (p *nodePass) set(k, v string) { p.d.Labels[k] = v; p.labels[k] = v }

func (p *nodePass) setIfMissing(k, v string) {
	if _, ok := p.labels[k]; !ok {
		p.set(k, v)
	}
}

// operatorLabels writes what the GPU Operator labels a GPU node with
// (stack-facts §6 "Node labels GO writes"; GOmod@d73a0086
// controllers/state_manager.go labelGPUNodes): gpu.present, the deploy
// labels that are missing, mig-manager's on a node it sees as MIG-capable,
// and there the default MIG layout (stack-facts §4 step 1). Its ClusterPolicy
// controller does this: without a ClusterPolicy nothing is written.
func (s *Stack) operatorLabels(p *nodePass, inv NodeInventory, gpus []GPUState) {
	if s.Policy == nil {
		return
	}
	p.set(LabelGPUPresent, "true") // every simulated GPU node has NFD's pci-10de label
	for _, l := range OperatorDeployLabels {
		p.setIfMissing(l, "true")
	}
	if !goSeesMIGCapable(s.gfdLabels(p.labels, inv, gpus)) {
		return
	}
	p.setIfMissing(LabelDeployMIGManager, "true")
	if s.Policy.MIGManagerEnabled && p.labels[LabelMIGConfig] == "" && s.Policy.MIGManagerDefault == MIGConfigAllDisabled {
		p.set(LabelMIGConfig, MIGConfigAllDisabled)
	}
}

// gfdLabels are the GFD labels the Operator finds on the node: what GFD
// publishes, or the node's own while GFD does not run.
func (s *Stack) gfdLabels(labels map[string]string, inv NodeInventory, gpus []GPUState) map[string]string {
	if labels[LabelDeployGFD] != "true" {
		return labels
	}
	return s.advertise(labels, inv, gpus).Labels
}

// goSeesMIGCapable is the Operator's test of a MIG-capable node, which
// reads GFD's labels, not the hardware: no mig.capable label (GFD
// disabled or failing) and no A100/H100/A30 product means not MIG-capable
// (stack-facts §4 step 1, GOmod@d73a0086 state_manager.go hasMIGCapableGPU).
func goSeesMIGCapable(labels map[string]string) bool {
	if labels["nvidia.com/vgpu.host-driver-version"] != "" {
		return false
	}
	if v, ok := labels["nvidia.com/mig.capable"]; ok {
		return v == "true"
	}
	product := strings.ToLower(labels["nvidia.com/gpu.product"])
	return strings.Contains(product, "h100") || strings.Contains(product, "a100") || strings.Contains(product, "a30")
}

// migManagerRuns: the Operator deploys the MIG manager when
// migManager.enabled, on nodes labelled gpu.deploy.mig-manager=true (its
// DaemonSet's nodeSelector), and it mounts a mig-parted file, which may not
// parse.
func (s *Stack) migManagerRuns(labels map[string]string) bool {
	return s.Policy != nil && s.Policy.MIGManagerEnabled && labels[LabelDeployMIGManager] == "true" &&
		(s.MIGParted != nil || s.MIGPartedErr != nil)
}

// migManager is one pass of the MIG manager (stack-facts §4, MP@bd7160f4
// pkg/mig/reconfigure/reconfigure.go Run, v0.15.0). A run starts when the
// label names another layout than the last run's (the manager compares
// with the last value it read, so an emptied label and the same value back
// start nothing). It fails at once, nothing paused, on a file that does not
// parse or an unknown name (assert --valid-config); succeeds at once when
// the layout is already applied; else it is pending, operands paused, for
// reconfigureDelay, then applies the layout. It returns the GPUs' MIG state
// and whether a reconfiguration is under way.
func (s *Stack) migManager(p *nodePass, inv NodeInventory, obs NodeObservation, gpus []GPUState, reconfigureDelay time.Duration) ([]GPUState, bool) {
	ann := obs.Annotations
	desired := p.labels[LabelMIGConfig]
	last, lastState := ann[AnnotationMIGApplied], MIGStateSuccess
	if f := ann[AnnotationMIGFailed]; f != "" {
		last, lastState = f, MIGStateFailed
	}
	_, running := ann[AnnotationMIGSince]
	p.d.Annotations[AnnotationMIGGPUs] = EncodeGPUStates(gpus)
	switch {
	case desired == "" && running:
		// The label went away mid-run. The real run goes on with the value
		// it read, which the simulator does not record: it ends the run
		// with the GPUs unchanged.
		p.restoreOperands()
		p.d.Annotations[AnnotationMIGSince] = ""
		if last != "" {
			p.set(LabelMIGConfigState, lastState)
		}
		return gpus, false
	case desired == "":
		// An empty or missing label wakes nothing (stack-facts §4 step 2,
		// MP@bd7160f4 cmd/nvidia-mig-manager/main.go
		// SyncableMigConfig.Set): whatever state label there is stays.
		if st, ok := p.labels[LabelMIGConfigState]; ok {
			p.set(LabelMIGConfigState, st)
		}
		return gpus, false
	case desired == last && !running:
		p.set(LabelMIGConfigState, lastState) // the last run's outcome
		return gpus, false
	}

	// A run. Step 3: assert --valid-config, then "already applied".
	if err := s.validMIGConfig(desired); err != nil {
		p.endMIGRun(desired, MIGStateFailed)
		return gpus, false
	}
	if s.MIGParted.Assert(desired, inv.SKU, gpus) == nil {
		p.endMIGRun(desired, MIGStateSuccess)
		return gpus, false
	}
	// Step 4: pending, operands paused, GPUs withdrawn, for reconfigureDelay.
	since, err := time.Parse(time.RFC3339Nano, ann[AnnotationMIGSince])
	if err != nil {
		since = obs.Now
		p.d.Annotations[AnnotationMIGSince] = since.Format(time.RFC3339Nano)
	}
	if wait := since.Add(reconfigureDelay).Sub(obs.Now); wait > 0 {
		for _, l := range p.pausedLabels() {
			p.set(l, unlessFalse(p.labels[l], PausedForMIGChange))
		}
		p.set(LabelMIGConfigState, MIGStatePending)
		p.d.RequeueAfter = wait
		return gpus, true
	}
	next, err := s.MIGParted.ApplyTo(desired, inv.SKU, gpus)
	if err != nil {
		// Step 8: a layout the GPU cannot take fails at apply; the GPUs
		// keep their layout.
		p.endMIGRun(desired, MIGStateFailed)
		return gpus, false
	}
	if !sameGPUs(gpus, next) {
		p.d.LayoutChanged, p.d.FromLayout, p.d.ToLayout = true, ann[AnnotationMIGApplied], desired
	}
	p.d.Annotations[AnnotationMIGGPUs] = EncodeGPUStates(next)
	p.endMIGRun(desired, MIGStateSuccess)
	return next, false
}

// validMIGConfig is `nvidia-mig-parted assert --valid-config`: the file
// parses and names the layout (stack-facts §4 step 3).
func (s *Stack) validMIGConfig(name string) error {
	if s.MIGPartedErr != nil {
		return s.MIGPartedErr
	}
	_, err := s.MIGParted.layout(name)
	return err
}

// endMIGRun is the manager's setState: the operands it pauses back to
// "true", then the state; the layout is recorded as the last run's.
func (p *nodePass) endMIGRun(layout, state string) {
	p.restoreOperands()
	p.set(LabelMIGConfigState, state)
	p.d.Annotations[AnnotationMIGSince] = ""
	p.d.Annotations[AnnotationMIGFailed] = ""
	if state == MIGStateSuccess {
		p.d.Annotations[AnnotationMIGApplied] = layout
	} else {
		p.d.Annotations[AnnotationMIGFailed] = layout
	}
}

// restoreOperands sets the labels the manager pauses to "true" unless
// "false", on every exit, so even a run that paused nothing writes a
// missing gpu.deploy.nvsm=true (stack-facts §4 step 4, MP@bd7160f4 setState,
// maybeSetTrue). Known difference: v0.15.0 sets a process-wide flag on its
// first full restore after which setState restores nothing until the
// manager restarts (stack-facts §4 step 5); the simulator always restores.
func (p *nodePass) restoreOperands() {
	for _, l := range p.pausedLabels() {
		p.set(l, unlessFalse(p.labels[l], "true"))
	}
}

// pausedLabels are the deploy labels the manager pauses and restores on
// this node: LabelDeployClient only where it has a value.
func (p *nodePass) pausedLabels() []string {
	if p.labels[LabelDeployClient] != "" {
		return append(slices.Clone(MIGPausedLabels), LabelDeployClient)
	}
	return MIGPausedLabels
}

// unlessFalse is v, except that a deploy label set to "false" stays so
// (MP@bd7160f4 maybeSetPaused, maybeSetTrue).
func unlessFalse(current, v string) string {
	if current == "false" {
		return "false"
	}
	return v
}

// currentGPUs is the MIG state of the node's GPUs as the controller last
// recorded it; for a node recorded without it, what the layout last applied
// leaves on fresh GPUs; else MIG disabled (a fresh node).
func (s *Stack) currentGPUs(inv NodeInventory, annotations map[string]string) []GPUState {
	if g, err := DecodeGPUStates(annotations[AnnotationMIGGPUs]); err == nil && len(g) == inv.Count {
		return g
	}
	if applied := annotations[AnnotationMIGApplied]; applied != "" && s.MIGParted != nil {
		if g, err := s.MIGParted.Apply(applied, inv.SKU, inv.Count); err == nil {
			return g
		}
	}
	return make([]GPUState, inv.Count)
}

// stackOwnedLabel tells the labels the simulated GFD and MIG manager
// publish (removed when they stop publishing them) from the Operator's
// (gpu.present, deploy labels, whoever set them) and the ones a platform
// team sets to pick configs.
func stackOwnedLabel(k string) bool {
	switch {
	case k == LabelDevicePluginConfig, k == LabelMIGConfig, k == LabelGPUPresent, strings.HasPrefix(k, LabelDeployPrefix):
		return false
	}
	return true
}

func copyMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
