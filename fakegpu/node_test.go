// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

const testMIGConfig = `version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  all-1g.5gb:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.5gb": 7}
  all-1g.10gb.me:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb+me": 1}
  first-1g.5gb:
    - devices: [0]
      mig-enabled: true
      mig-devices: {"1g.5gb": 7}
  first-disabled:
    - devices: [0]
      mig-enabled: false
  a100-80-only:
    - device-filter: ["0x20B210DE", "0x20B510DE"]
      devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 7}
`

func migStack(t *testing.T) *Stack {
	return &Stack{
		Policy:    &ClusterPolicySettings{MIGStrategy: MIGStrategyMixed, DevicePluginEnabled: true, GFDEnabled: true, MIGManagerEnabled: true, MIGManagerDefault: MIGConfigAllDisabled},
		MIGParted: mustMIGPartedConfig(t, testMIGConfig),
	}
}

// labelsAfter is the node's labels once the controller applied d.
func labelsAfter(obs map[string]string, d NodeDesired) map[string]string {
	out := copyMap(obs)
	for k, v := range d.Labels {
		out[k] = v
	}
	for _, k := range d.Remove {
		delete(out, k)
	}
	return out
}

// The MIG manager protocol (stack-facts §4, MP@bd7160f4 pkg/mig/reconfigure/reconfigure.go
// Run), step by step through Desired, each pass fed the previous one's writes.
func TestDesiredWalksTheMIGProtocol(t *testing.T) {
	s := migStack(t)
	inv := NodeInventory{SKU: mustSKU(t, "a100-40gb"), Count: 2}
	delay := 500 * time.Millisecond
	t0 := time.Unix(1000, 0)

	// stack-facts §4 step 1: GO labels MIG-capable nodes that lack nvidia.com/mig.config with
	// the default all-disabled, which fresh GPUs already are: success at once.
	d := s.Desired(inv, NodeObservation{Labels: map[string]string{}, Annotations: map[string]string{}, Now: t0}, delay)
	if d.Labels[LabelMIGConfig] != MIGConfigAllDisabled || d.Labels[LabelMIGConfigState] != MIGStateSuccess {
		t.Fatalf("unlabelled node: want mig.config=all-disabled state success, got %v", d.Labels)
	}
	if d.Allocatable[ResourceGPU] != 2 || d.PluginDown != "" {
		t.Fatalf("MIG disabled: want 2 nvidia.com/gpu served, got %v (%s)", d.Allocatable, d.PluginDown)
	}
	labels, ann := labelsAfter(nil, d), d.Annotations

	// stack-facts §4 step 4: a new layout: pending, operands paused (a false stays false), GPUs withdrawn, requeue.
	labels[LabelMIGConfig] = "all-1g.5gb"
	labels["nvidia.com/gpu.deploy.dcgm"] = "false"
	d = s.Desired(inv, NodeObservation{Labels: labels, Annotations: ann, Now: t0}, delay)
	if d.Labels[LabelMIGConfigState] != MIGStatePending || d.Labels[LabelDeployDevicePlugin] != PausedForMIGChange {
		t.Errorf("reconfiguring: want state pending and device plugin paused, got %v", d.Labels)
	}
	if v := labelsAfter(labels, d)["nvidia.com/gpu.deploy.dcgm"]; v != "false" {
		t.Errorf("a deploy label set to false stays false, got %q", v)
	}
	if d.Allocatable[ResourceGPU] != 0 || d.RequeueAfter != delay {
		t.Errorf("reconfiguring: want GPUs withdrawn and a requeue after %s, got %v, %s", delay, d.Allocatable, d.RequeueAfter)
	}
	labels, ann = labelsAfter(labels, d), mergeAnnotations(ann, d.Annotations)

	// After the delay: success, operands back, MIG devices advertised, layout changed.
	d = s.Desired(inv, NodeObservation{Labels: labels, Annotations: ann, Now: t0.Add(delay)}, delay)
	if d.Labels[LabelMIGConfigState] != MIGStateSuccess || d.Labels[LabelDeployDevicePlugin] != "true" || d.Labels["nvidia.com/gpu.deploy.dcgm"] != "false" {
		t.Errorf("applied: want state success, the device plugin back and dcgm still false, got %v", d.Labels)
	}
	if d.Allocatable["nvidia.com/mig-1g.5gb"] != 14 || !d.LayoutChanged || d.Annotations[AnnotationMIGApplied] != "all-1g.5gb" {
		t.Errorf("applied: want 14 nvidia.com/mig-1g.5gb and the layout recorded, got %v changed=%v %v", d.Allocatable, d.LayoutChanged, d.Annotations)
	}
	labels, ann = labelsAfter(labels, d), mergeAnnotations(ann, d.Annotations)

	// stack-facts §4 step 8: a layout the GPU cannot take: pending, then failed. That the old devices
	// are kept is the simulator's assumption (the doc says nothing of the GPUs after a failure).
	labels[LabelMIGConfig] = "all-1g.10gb.me"
	d = s.Desired(inv, NodeObservation{Labels: labels, Annotations: ann, Now: t0.Add(2 * delay)}, delay)
	if d.Labels[LabelMIGConfigState] != MIGStatePending {
		t.Errorf("unfit layout: it passes assert --valid-config, so first pending; got %v", d.Labels)
	}
	labels, ann = labelsAfter(labels, d), mergeAnnotations(ann, d.Annotations)
	d = s.Desired(inv, NodeObservation{Labels: labels, Annotations: ann, Now: t0.Add(3 * delay)}, delay)
	if d.Labels[LabelMIGConfigState] != MIGStateFailed || d.Allocatable["nvidia.com/mig-1g.5gb"] != 14 || d.LayoutChanged || d.Labels[LabelDeployDevicePlugin] != "true" {
		t.Errorf("unfit layout: want state failed, the operands back and the old 14 devices, got %v %v changed=%v", d.Labels, d.Allocatable, d.LayoutChanged)
	}
	labels, ann = labelsAfter(labels, d), mergeAnnotations(ann, d.Annotations)

	// stack-facts §4 step 2: the manager waits for the label to change; the same label runs nothing.
	d = s.Desired(inv, NodeObservation{Labels: labels, Annotations: ann, Now: t0.Add(4 * delay)}, delay)
	if d.Labels[LabelMIGConfigState] != MIGStateFailed || d.RequeueAfter != 0 {
		t.Errorf("failed, label unchanged: want state failed and no new run, got %v requeue %s", d.Labels, d.RequeueAfter)
	}
}

// mergeAnnotations applies the controller's annotation writes ("" deletes).
func mergeAnnotations(have, writes map[string]string) map[string]string {
	out := copyMap(have)
	for k, v := range writes {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// gpusAnn is the annotation of n GPUs in the same MIG state (nil: MIG disabled).
func gpusAnn(n int, devices map[string]int) string {
	gpus := make([]GPUState, n)
	for i := range gpus {
		if devices != nil {
			gpus[i] = GPUState{MIGEnabled: true, Devices: devices}
		}
	}
	return EncodeGPUStates(gpus)
}

// One pass of the MIG manager, from a given node state.
func TestDesiredMIGManager(t *testing.T) {
	const delay = time.Second
	t0 := time.Unix(1000, 0)
	since := t0.Format(time.RFC3339Nano)
	g1 := map[string]int{"1g.5gb": 7}
	// paused are the deploy labels as the manager paused them while dcgm
	// was false and client set.
	paused := map[string]string{
		LabelDeployDevicePlugin: PausedForMIGChange, LabelDeployGFD: PausedForMIGChange,
		"nvidia.com/gpu.deploy.dcgm-exporter": PausedForMIGChange, "nvidia.com/gpu.deploy.dcgm": "false",
		"nvidia.com/gpu.deploy.nvsm": PausedForMIGChange, LabelDeployClient: PausedForMIGChange,
	}
	restored := map[string]string{
		LabelDeployDevicePlugin: "true", LabelDeployGFD: "true", "nvidia.com/gpu.deploy.dcgm-exporter": "true",
		"nvidia.com/gpu.deploy.dcgm": "false", "nvidia.com/gpu.deploy.nvsm": "true", LabelDeployClient: "true",
	}
	with := withLabels
	// pausedNode is such a node: it also has GFD's mig.capable and the
	// Operator's mig-manager label from before the pause.
	pausedNode := with(paused, "nvidia.com/mig.capable", "true", LabelDeployMIGManager, "true")
	tests := []struct {
		name     string
		brokenMP bool // the mig-parted file does not parse
		labels   map[string]string
		ann      map[string]string
		elapsed  time.Duration // since the reconfiguration started
		want     map[string]string
		absent   []string // labels the node must not carry after the pass
		wantAnn  map[string]string
		pending  bool
		changed  bool
		alloc    map[string]int64
	}{
		{
			// stack-facts §4 step 3: MP@bd7160f4 pkg/mig/reconfigure/reconfigure.go validateMigConfig — an unknown
			// name fails at assert --valid-config: failed at once, nothing paused, GPUs unchanged
			name:    "unknown layout fails at once",
			labels:  map[string]string{LabelMIGConfig: "all-9g.99gb", "nvidia.com/gpu.deploy.dcgm": "false"},
			ann:     map[string]string{AnnotationMIGApplied: "all-1g.5gb", AnnotationMIGGPUs: gpusAnn(2, g1)},
			want:    map[string]string{LabelMIGConfigState: MIGStateFailed, LabelDeployDevicePlugin: "true", LabelDeployGFD: "true", "nvidia.com/gpu.deploy.dcgm": "false"},
			wantAnn: map[string]string{AnnotationMIGFailed: "all-9g.99gb", AnnotationMIGApplied: "all-1g.5gb"},
			alloc:   map[string]int64{"nvidia.com/mig-1g.5gb": 14},
		},
		{
			// stack-facts §4 "mig-parted config", blast radius: a file that does not parse fails every run at
			// assert --valid-config, whatever the node selects, at once and with nothing paused
			name: "unparsable file fails a valid-looking layout", brokenMP: true,
			labels:  map[string]string{LabelMIGConfig: "all-1g.5gb"},
			want:    map[string]string{LabelMIGConfigState: MIGStateFailed, LabelDeployDevicePlugin: "true"},
			wantAnn: map[string]string{AnnotationMIGFailed: "all-1g.5gb"},
			alloc:   map[string]int64{ResourceGPU: 2},
		},
		{
			// stack-facts §4 "mig-parted config", blast radius: even all-disabled, which fresh GPUs already are
			name: "unparsable file fails all-disabled", brokenMP: true,
			labels: map[string]string{LabelMIGConfig: MIGConfigAllDisabled},
			want:   map[string]string{LabelMIGConfigState: MIGStateFailed},
			alloc:  map[string]int64{ResourceGPU: 2},
		},
		{
			// stack-facts §4 step 3: already applied: success at once, nothing paused; step 4: the exit
			// through setState still writes the paused set to true, creating gpu.deploy.nvsm=true
			name:    "already applied",
			labels:  map[string]string{LabelMIGConfig: MIGConfigAllDisabled, "nvidia.com/gpu.deploy.dcgm": "false"},
			want:    map[string]string{LabelMIGConfigState: MIGStateSuccess, "nvidia.com/gpu.deploy.nvsm": "true", "nvidia.com/gpu.deploy.dcgm": "false", LabelDeployDevicePlugin: "true"},
			absent:  []string{LabelDeployClient},
			wantAnn: map[string]string{AnnotationMIGApplied: MIGConfigAllDisabled},
			alloc:   map[string]int64{ResourceGPU: 2},
		},
		{
			// stack-facts §4 step 4: MP@bd7160f4 reconfigure.go shutdownKubernetesGPUClients, maybeSetPaused —
			// device-plugin, gpu-feature-discovery, dcgm-exporter, dcgm, nvsm paused (a false stays false,
			// a missing one written), client because the node has it; no GPU resources while paused
			name:    "pending pauses the operands",
			labels:  map[string]string{LabelMIGConfig: "all-1g.5gb", "nvidia.com/gpu.deploy.dcgm": "false", LabelDeployClient: "true"},
			want:    with(paused, LabelMIGConfigState, MIGStatePending),
			pending: true,
			alloc:   map[string]int64{ResourceGPU: 0},
		},
		{
			// stack-facts §4 step 4: gpu.deploy.client is paused only if present (v0.15.0)
			name:    "pending without a client label",
			labels:  map[string]string{LabelMIGConfig: "all-1g.5gb"},
			want:    map[string]string{LabelMIGConfigState: MIGStatePending, "nvidia.com/gpu.deploy.nvsm": PausedForMIGChange, "nvidia.com/gpu.deploy.dcgm": PausedForMIGChange},
			absent:  []string{LabelDeployClient},
			pending: true,
			alloc:   map[string]int64{ResourceGPU: 0},
		},
		{
			// stack-facts §4 step 4: restartKubernetesGPUClients, maybeSetTrue — after the apply the labels go
			// back to true (false kept, client restored because present), state success
			name:    "applied: operands restored",
			labels:  with(pausedNode, LabelMIGConfig, "all-1g.5gb", LabelMIGConfigState, MIGStatePending),
			ann:     map[string]string{AnnotationMIGApplied: MIGConfigAllDisabled, AnnotationMIGSince: since},
			elapsed: delay,
			want:    with(restored, LabelMIGConfigState, MIGStateSuccess),
			wantAnn: map[string]string{AnnotationMIGApplied: "all-1g.5gb", AnnotationMIGGPUs: gpusAnn(2, g1)},
			changed: true,
			alloc:   map[string]int64{"nvidia.com/mig-1g.5gb": 14},
		},
		{
			// stack-facts §4 steps 5 and 8: a layout that does not fit fails at apply, after pending: failed,
			// labels restored (v0.15.0); the GPUs keeping their layout is the simulator's assumption
			name:    "unfit layout fails at apply",
			labels:  with(pausedNode, LabelMIGConfig, "all-1g.10gb.me", LabelMIGConfigState, MIGStatePending),
			ann:     map[string]string{AnnotationMIGApplied: "all-1g.5gb", AnnotationMIGGPUs: gpusAnn(2, g1), AnnotationMIGSince: since},
			elapsed: delay,
			want:    with(restored, LabelMIGConfigState, MIGStateFailed),
			wantAnn: map[string]string{AnnotationMIGFailed: "all-1g.10gb.me", AnnotationMIGApplied: "all-1g.5gb"},
			alloc:   map[string]int64{"nvidia.com/mig-1g.5gb": 14},
		},
		{
			// stack-facts §4 "GPUs a layout does not match ... keep their current MIG mode and devices":
			// devices [0] disables GPU 0 only; GPU 1 keeps its 7 × 1g.5gb
			name:    "GPUs the layout leaves out keep their devices",
			labels:  with(pausedNode, LabelMIGConfig, "first-disabled", LabelMIGConfigState, MIGStatePending),
			ann:     map[string]string{AnnotationMIGApplied: "all-1g.5gb", AnnotationMIGGPUs: gpusAnn(2, g1), AnnotationMIGSince: since},
			elapsed: delay,
			want:    with(restored, LabelMIGConfigState, MIGStateSuccess),
			changed: true,
			alloc:   map[string]int64{ResourceGPU: 1, "nvidia.com/mig-1g.5gb": 7},
		},
		{
			// stack-facts §4 "GPUs a layout does not match": assert requires every GPU to match, so a layout
			// that leaves a GPU out is never already applied, even when its GPU 0 is in it: a new run pauses
			name:    "a layout that leaves GPUs out is never already applied",
			labels:  map[string]string{LabelMIGConfig: "first-1g.5gb"},
			ann:     map[string]string{AnnotationMIGApplied: "all-1g.5gb", AnnotationMIGGPUs: gpusAnn(2, g1)},
			want:    map[string]string{LabelMIGConfigState: MIGStatePending, LabelDeployDevicePlugin: PausedForMIGChange},
			pending: true,
			alloc:   map[string]int64{"nvidia.com/mig-1g.5gb": 0},
		},
		{
			// stack-facts §4 "GPUs a layout does not match": ... every run pauses and re-applies, then ends success
			// (the GPUs did not change: no layout change, no pod loses its devices)
			name:    "re-applying a layout that leaves GPUs out ends success",
			labels:  with(pausedNode, LabelMIGConfig, "first-1g.5gb", LabelMIGConfigState, MIGStatePending),
			ann:     map[string]string{AnnotationMIGApplied: "all-1g.5gb", AnnotationMIGGPUs: gpusAnn(2, g1), AnnotationMIGSince: since},
			elapsed: delay,
			want:    with(restored, LabelMIGConfigState, MIGStateSuccess),
			wantAnn: map[string]string{AnnotationMIGApplied: "first-1g.5gb"},
			alloc:   map[string]int64{"nvidia.com/mig-1g.5gb": 14},
		},
		{
			// stack-facts §4 "GPUs a layout does not match (by device-filter)": a filter matching no GPU of
			// the node is never already applied either
			name:    "device-filter matching no GPU pauses",
			labels:  map[string]string{LabelMIGConfig: "a100-80-only"},
			want:    map[string]string{LabelMIGConfigState: MIGStatePending},
			pending: true,
		},
		{
			// stack-facts §4 step 2: MP@bd7160f4 cmd/nvidia-mig-manager/main.go SyncableMigConfig.Set — an emptied
			// label wakes nothing: the state label stays, no deploy label written (no nvsm)
			name:   "empty label runs nothing",
			labels: map[string]string{LabelMIGConfig: "", LabelMIGConfigState: MIGStateSuccess},
			ann:    map[string]string{AnnotationMIGApplied: "all-1g.5gb", AnnotationMIGGPUs: gpusAnn(2, g1)},
			want:   map[string]string{LabelMIGConfigState: MIGStateSuccess, LabelMIGConfig: ""},
			absent: []string{"nvidia.com/gpu.deploy.nvsm"},
			alloc:  map[string]int64{"nvidia.com/mig-1g.5gb": 14},
		},
		{
			// stack-facts §4 step 2: an emptied label does not stop a run under way; the simulator does not
			// record which layout the run is for, so it ends the run with the GPUs unchanged and the
			// operands restored (a known difference: the real run finishes its layout)
			name:   "label emptied mid-run",
			labels: with(pausedNode, LabelMIGConfig, "", LabelMIGConfigState, MIGStatePending),
			ann:    map[string]string{AnnotationMIGApplied: "all-1g.5gb", AnnotationMIGGPUs: gpusAnn(2, g1), AnnotationMIGSince: since},
			want:   with(restored, LabelMIGConfigState, MIGStateSuccess),
			alloc:  map[string]int64{"nvidia.com/mig-1g.5gb": 14},
		},
		{
			// stack-facts §4 step 2: the manager acts only on a label change: the label its last run failed on
			// runs nothing (failed, nvsm not written)
			name:   "same label after a failure runs nothing",
			labels: map[string]string{LabelMIGConfig: "all-9g.99gb", LabelMIGConfigState: MIGStateFailed},
			ann:    map[string]string{AnnotationMIGApplied: "all-1g.5gb", AnnotationMIGFailed: "all-9g.99gb", AnnotationMIGGPUs: gpusAnn(2, g1)},
			want:   map[string]string{LabelMIGConfigState: MIGStateFailed},
			absent: []string{"nvidia.com/gpu.deploy.nvsm"},
			alloc:  map[string]int64{"nvidia.com/mig-1g.5gb": 14},
		},
		{
			// stack-facts §4 steps 2–3: back to the layout applied before a failed run is a label change: a run,
			// already applied, success at once
			name:    "back to the applied layout after a failure",
			labels:  map[string]string{LabelMIGConfig: "all-1g.5gb", LabelMIGConfigState: MIGStateFailed},
			ann:     map[string]string{AnnotationMIGApplied: "all-1g.5gb", AnnotationMIGFailed: "all-9g.99gb", AnnotationMIGGPUs: gpusAnn(2, g1)},
			want:    map[string]string{LabelMIGConfigState: MIGStateSuccess, "nvidia.com/gpu.deploy.nvsm": "true"},
			wantAnn: map[string]string{AnnotationMIGApplied: "all-1g.5gb"},
			alloc:   map[string]int64{"nvidia.com/mig-1g.5gb": 14},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := migStack(t)
			s.Policy.MIGManagerDefault = ""
			if tc.brokenMP {
				s.MIGParted, s.MIGPartedErr = nil, errors.New("ConfigMap m: data[config.yaml]: unexpected field: x")
			}
			inv := NodeInventory{SKU: mustSKU(t, "a100-40gb"), Count: 2}
			ann := tc.ann
			if ann == nil {
				ann = map[string]string{}
			}
			d := s.Desired(inv, NodeObservation{Labels: tc.labels, Annotations: ann, Now: t0.Add(tc.elapsed)}, delay)
			after := labelsAfter(tc.labels, d)
			checkLabels(t, after, tc.want, tc.absent...)
			for k, v := range tc.wantAnn {
				if got := mergeAnnotations(ann, d.Annotations)[k]; got != v {
					t.Errorf("annotation %s = %q, want %q", k, got, v)
				}
			}
			if tc.want[LabelMIGConfigState] == MIGStateSuccess && mergeAnnotations(ann, d.Annotations)[AnnotationMIGFailed] != "" {
				t.Errorf("state success, but annotation %s is still set", AnnotationMIGFailed)
			}
			if got := d.RequeueAfter > 0; got != tc.pending {
				t.Errorf("pending (requeue) = %v (%s), want %v", got, d.RequeueAfter, tc.pending)
			}
			if !tc.pending && d.Annotations[AnnotationMIGSince] != "" {
				t.Errorf("run over, but %s = %q", AnnotationMIGSince, d.Annotations[AnnotationMIGSince])
			}
			if d.LayoutChanged != tc.changed {
				t.Errorf("LayoutChanged = %v, want %v", d.LayoutChanged, tc.changed)
			}
			for k, v := range tc.alloc {
				if d.Allocatable[k] != v {
					t.Errorf("allocatable %s = %d, want %d (all: %v)", k, d.Allocatable[k], v, d.Allocatable)
				}
			}
		})
	}
}

// The labels the GPU Operator itself writes on a GPU node (stack-facts §6 "Node labels GO writes",
// GOmod@d73a0086 controllers/state_manager.go labelGPUNodes) and the default MIG layout
// (stack-facts §4 step 1).
func TestDesiredOperatorLabels(t *testing.T) {
	goDeploy := map[string]string{}
	for _, l := range OperatorDeployLabels {
		goDeploy[l] = "true"
	}
	tests := []struct {
		name     string
		policy   func(p *ClusterPolicySettings) // nil policy: no ClusterPolicy when noPolicy
		noPolicy bool
		sku      string
		labels   map[string]string
		want     map[string]string
		absent   []string
		state    string // mig.config.state after the pass ("": none)
	}{
		{
			// stack-facts §6: gpu.present=true on a GPU node (NFD's pci-10de label taken as present), and the
			// container-workload deploy labels as "true"; not mig-manager on a GPU that is not MIG-capable
			// (stack-facts §5: L4), not client (GO main only), not nvsm (the MIG manager's)
			name: "L4 node", sku: "l4",
			want:   withLabels(goDeploy, LabelGPUPresent, "true"),
			absent: []string{LabelDeployMIGManager, LabelDeployClient, "nvidia.com/gpu.deploy.nvsm", LabelMIGConfig},
		},
		{
			// stack-facts §6: written only when missing (GOmod@d73a0086): false and paused-for-mig-change are kept
			name: "existing values kept", sku: "l4",
			labels: map[string]string{"nvidia.com/gpu.deploy.driver": "false", "nvidia.com/gpu.deploy.dcgm": PausedForMIGChange, "nvidia.com/gpu.deploy.operator-validator": ""},
			want:   map[string]string{"nvidia.com/gpu.deploy.driver": "false", "nvidia.com/gpu.deploy.dcgm": PausedForMIGChange, "nvidia.com/gpu.deploy.operator-validator": "", LabelDeployDevicePlugin: "true"},
		},
		{
			// stack-facts §6: GO sets gpu.present back to true on a node that has GPUs
			name: "gpu.present false", sku: "l4",
			labels: map[string]string{LabelGPUPresent: "false"},
			want:   map[string]string{LabelGPUPresent: "true"},
		},
		{
			// stack-facts §6: mig-manager on MIG-capable nodes; stack-facts §4 step 1: with migManager.config.default
			// all-disabled, GO labels the node all-disabled, which the manager finds applied
			name: "A100 node, default all-disabled", sku: "a100-40gb",
			policy: func(p *ClusterPolicySettings) { p.MIGManagerDefault = MIGConfigAllDisabled },
			want:   map[string]string{LabelDeployMIGManager: "true", LabelMIGConfig: MIGConfigAllDisabled, LabelGPUPresent: "true"},
			state:  MIGStateSuccess,
		},
		{
			// stack-facts §4 step 1: the label "" counts as missing
			name: "empty mig.config label, default all-disabled", sku: "a100-40gb",
			policy: func(p *ClusterPolicySettings) { p.MIGManagerDefault = MIGConfigAllDisabled },
			labels: map[string]string{LabelMIGConfig: ""},
			want:   map[string]string{LabelMIGConfig: MIGConfigAllDisabled},
			state:  MIGStateSuccess,
		},
		{
			// stack-facts §4 steps 1–2: default "": GO writes no mig.config, and with no label the manager runs
			// nothing: no state, no nvsm
			name: "A100 node, default empty", sku: "a100-40gb",
			policy: func(p *ClusterPolicySettings) { p.MIGManagerDefault = "" },
			want:   map[string]string{LabelDeployMIGManager: "true"},
			absent: []string{LabelMIGConfig, "nvidia.com/gpu.deploy.nvsm"},
		},
		{
			// stack-facts §4 step 1: migManager disabled: no default label, no manager; stack-facts §6: the
			// mig-manager deploy label is written all the same
			name: "MIG manager disabled", sku: "a100-40gb",
			policy: func(p *ClusterPolicySettings) {
				p.MIGManagerEnabled = false
				p.MIGManagerDefault = MIGConfigAllDisabled
			},
			labels: map[string]string{LabelMIGConfigState: MIGStateSuccess},
			want:   map[string]string{LabelDeployMIGManager: "true"},
			absent: []string{LabelMIGConfig},
		},
		{
			// stack-facts §4 step 1 (GOmod@d73a0086 hasMIGCapableGPU reads mig.capable, else the product label):
			// with GFD disabled GO sees no MIG-capable GPU: no mig-manager label, no default layout, so the
			// manager does not run even on a labelled node; gpu.present is GO's and stays (stack-facts §3, §6)
			name: "GFD disabled", sku: "a100-40gb",
			policy: func(p *ClusterPolicySettings) { p.GFDEnabled = false; p.MIGManagerDefault = MIGConfigAllDisabled },
			labels: map[string]string{LabelMIGConfig: "all-1g.5gb"},
			want:   map[string]string{LabelGPUPresent: "true", LabelDeployGFD: "true"},
			absent: []string{LabelDeployMIGManager, "nvidia.com/mig.capable"},
		},
		{
			// stack-facts §4 step 1: GFD not deployed on the node (its deploy label false): GO reads the
			// mig.capable label GFD wrote before, which stays
			name: "GFD not deployed, mig.capable kept", sku: "a100-40gb",
			labels: map[string]string{LabelDeployGFD: "false", "nvidia.com/mig.capable": "true"},
			want:   map[string]string{LabelDeployMIGManager: "true", "nvidia.com/mig.capable": "true"},
			state:  MIGStateSuccess,
		},
		{
			// stack-facts §6 (GOmod@d73a0086 labelGPUNodes is the ClusterPolicy controller's): no ClusterPolicy,
			// no Operator labels
			name: "no ClusterPolicy", sku: "a100-40gb", noPolicy: true,
			absent: []string{LabelGPUPresent, LabelDeployDevicePlugin, LabelDeployMIGManager, LabelMIGConfig},
		},
		{
			// stack-facts §6: deploy labels are the Operator's (or the platform's, e.g. sandbox ones): the
			// simulated stack never removes them, nor gpu.present or the config-selecting labels; a GFD
			// label it no longer publishes goes
			name: "what the stack removes", sku: "l4",
			labels: map[string]string{"nvidia.com/gpu.deploy.sandbox-validator": "true", "nvidia.com/gpu.deploy.nvsm": "true",
				LabelDevicePluginConfig: "x", "nvidia.com/gpu.clique": "stale"},
			want:   map[string]string{"nvidia.com/gpu.deploy.sandbox-validator": "true", "nvidia.com/gpu.deploy.nvsm": "true", LabelDevicePluginConfig: "x"},
			absent: []string{"nvidia.com/gpu.clique"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := migStack(t)
			if tc.policy != nil {
				tc.policy(s.Policy)
			}
			if tc.noPolicy {
				s.Policy = nil
			}
			inv := NodeInventory{SKU: mustSKU(t, tc.sku), Count: 2}
			obs := NodeObservation{Labels: tc.labels, Annotations: map[string]string{}, Now: time.Unix(1000, 0)}
			d := s.Desired(inv, obs, 0)
			after := labelsAfter(tc.labels, d)
			checkLabels(t, after, tc.want, tc.absent...)
			if got := d.Labels[LabelMIGConfigState]; got != tc.state {
				t.Errorf("mig.config.state written = %q, want %q", got, tc.state)
			}
			again := s.Desired(inv, NodeObservation{Labels: after, Annotations: mergeAnnotations(obs.Annotations, d.Annotations), Now: obs.Now}, 0)
			if a2 := labelsAfter(after, again); !maps.Equal(a2, after) {
				t.Errorf("not idempotent: a second pass changes the labels from %v to %v", after, a2)
			}
		})
	}
}

// withLabels is base with the key-value pairs kv added.
func withLabels(base map[string]string, kv ...string) map[string]string {
	out := copyMap(base)
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// The simulator runs the MIG manager only where gpu.deploy.mig-manager is "true", as the
// GPU Operator's DaemonSet selects nodes (stack-facts §6 deploy labels; GOmod@d73a0086
// assets/state-mig-manager/0600_daemonset.yaml, read here unmodified).
func TestMIGManagerDaemonSetSelectsItsDeployLabel(t *testing.T) {
	var ds struct {
		Spec struct {
			Template struct {
				Spec struct {
					NodeSelector map[string]string `json:"nodeSelector"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	const file = "assets/state-mig-manager/0600_daemonset.yaml"
	if err := yaml.Unmarshal(readGPUOperatorFile(t, file), &ds); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if got := ds.Spec.Template.Spec.NodeSelector; !maps.Equal(got, map[string]string{LabelDeployMIGManager: "true"}) {
		t.Errorf("%s nodeSelector = %v, want %s: \"true\"", file, got, LabelDeployMIGManager)
	}
}

// A crashed or undeployed plugin whose resource the kubelet had
// registered: allocatable 0 at once, capacity kept for
// EndpointStopGracePeriod, then 0 with the key kept; a resource never
// registered is absent (kubelet-facts §3).
func TestDesiredPluginDown(t *testing.T) {
	s := migStack(t)
	inv := NodeInventory{SKU: mustSKU(t, "h100-80gb"), Count: 8}
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	registered := map[string]int64{ResourceGPU: 8}
	for name, obs := range map[string]NodeObservation{
		"annotation down":    {Labels: map[string]string{LabelMIGConfig: "all-disabled"}, Annotations: map[string]string{AnnotationMIGApplied: "all-disabled", AnnotationDevicePlugin: DevicePluginDown}},
		"deploy label false": {Labels: map[string]string{LabelMIGConfig: "all-disabled", LabelDeployDevicePlugin: "false"}, Annotations: map[string]string{AnnotationMIGApplied: "all-disabled"}},
		// stack-facts §4 step 5: labels left paused (a run stuck in pending) keep the plugin away until a
		// new run: the manager does not restore them on its own
		"deploy label left paused": {Labels: map[string]string{LabelMIGConfig: "all-disabled", LabelDeployDevicePlugin: PausedForMIGChange}, Annotations: map[string]string{AnnotationMIGApplied: "all-disabled"}},
	} {
		never := s.Desired(inv, obs, time.Second)
		if _, ok := never.Capacity[ResourceGPU]; ok || never.PluginDown == "" {
			t.Errorf("%s, never registered: want %s absent and a reason, got %v / %q", name, ResourceGPU, never.Capacity, never.PluginDown)
		}
		obs.Capacity, obs.Now = registered, t0
		d := s.Desired(inv, obs, time.Second)
		if d.Capacity[ResourceGPU] != 8 || d.Allocatable[ResourceGPU] != 0 || d.PluginDown == "" {
			t.Errorf("%s: want capacity 8, allocatable 0 and a reason, got %v / %v / %q", name, d.Capacity, d.Allocatable, d.PluginDown)
		}
		if d.RequeueAfter != EndpointStopGracePeriod {
			t.Errorf("%s: requeue after %s, want %s (when the capacity drops)", name, d.RequeueAfter, EndpointStopGracePeriod)
		}
		// The memory is on the node; past the grace period capacity is 0
		// and the key stays.
		obs.Annotations = maps.Clone(obs.Annotations)
		obs.Annotations[AnnotationPluginStopped] = d.Annotations[AnnotationPluginStopped]
		obs.Now = t0.Add(EndpointStopGracePeriod)
		late := s.Desired(inv, obs, time.Second)
		if q, ok := late.Capacity[ResourceGPU]; !ok || q != 0 || late.Allocatable[ResourceGPU] != 0 {
			t.Errorf("%s, after %s: want capacity 0 kept as a key, allocatable 0, got %v / %v", name, EndpointStopGracePeriod, late.Capacity, late.Allocatable)
		}
	}
}

// A resource the plugin stops serving while it serves others (a MIG
// layout change): the old profile stays in capacity with 0 allocatable;
// served again, it is as served and the memory of it goes.
func TestKubeletResourcesRemembersWhatItRegistered(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	served := map[string]int64{"nvidia.com/mig-2g.20gb": 3}
	registered := map[string]int64{"nvidia.com/mig-1g.10gb": 7, "nvidia.com/mig-2g.20gb": 3}
	capacity, alloc, stopped, requeue := KubeletResources(served, registered, nil, t0)
	if capacity["nvidia.com/mig-1g.10gb"] != 7 || alloc["nvidia.com/mig-1g.10gb"] != 0 || alloc["nvidia.com/mig-2g.20gb"] != 3 {
		t.Errorf("capacity %v, allocatable %v: want the old profile kept at 7 with 0 allocatable", capacity, alloc)
	}
	if !stopped["nvidia.com/mig-1g.10gb"].Equal(t0) || requeue != EndpointStopGracePeriod {
		t.Errorf("stopped %v, requeue %s", stopped, requeue)
	}
	back := map[string]int64{"nvidia.com/mig-1g.10gb": 7}
	capacity, alloc, stopped, _ = KubeletResources(back, map[string]int64{"nvidia.com/mig-1g.10gb": 7}, stopped, t0.Add(time.Minute))
	if alloc["nvidia.com/mig-1g.10gb"] != 7 || len(stopped) != 0 {
		t.Errorf("served again: allocatable %v, memory %v; want as served, no memory", alloc, stopped)
	}
	if got := DecodePluginStopped(EncodePluginStopped(map[string]time.Time{"x": t0})); !got["x"].Equal(t0) {
		t.Errorf("the memory does not survive its annotation: %v", got)
	}
	if len(DecodePluginStopped("{not json")) != 0 {
		t.Error("an unreadable memory must read as none")
	}
}

// TestDesiredXid: an Xid on one GPU takes that device out of allocatable
// and keeps it in capacity (stack-facts §2, k8s manager.go GetCapacity;
// DP@1b826acc internal/rm/health.go checkHealth), and says which device.
func TestDesiredXid(t *testing.T) {
	s := migStack(t)
	h100 := NodeInventory{SKU: mustSKU(t, "h100-80gb"), Count: 8}
	obs := func(xid string) NodeObservation {
		return NodeObservation{Name: "n", Labels: map[string]string{LabelMIGConfig: "all-disabled"},
			Annotations: map[string]string{AnnotationMIGApplied: "all-disabled", AnnotationXid: xid}}
	}
	tests := []struct {
		name              string
		xid               string
		allocatable, bad  int64
		wantErrAnnotation bool
	}{
		// stack-facts §2: one critical Xid, one GPU withdrawn
		{"xid 79 on GPU 3", "3=79", 7, 1, false},
		// stack-facts §2: Xid 43 is one of the six the plugin ignores
		{"xid 43 ignored", "3=43", 8, 0, false},
		{"two GPUs", "0=79,7=48", 6, 2, false},
		// our API: a malformed annotation is reported, nothing withdrawn
		{"malformed", "GPU0=79", 8, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := s.Desired(h100, obs(tc.xid), 0)
			if d.Capacity[ResourceGPU] != 8 || d.Allocatable[ResourceGPU] != tc.allocatable || int64(len(d.Unhealthy[ResourceGPU])) != tc.bad {
				t.Errorf("capacity %d allocatable %d unhealthy %v; want 8, %d, %d devices", d.Capacity[ResourceGPU], d.Allocatable[ResourceGPU], d.Unhealthy, tc.allocatable, tc.bad)
			}
			if got := d.Annotations[AnnotationXidError] != ""; got != tc.wantErrAnnotation {
				t.Errorf("xid error annotation %q, want set: %v", d.Annotations[AnnotationXidError], tc.wantErrAnnotation)
			}
		})
	}
	// stack-facts §2: DP_DISABLE_HEALTHCHECKS=all in the plugin's env: nothing is withdrawn
	off := migStack(t)
	policy := *off.Policy
	policy.DevicePluginEnv = map[string]string{"DP_DISABLE_HEALTHCHECKS": "all"}
	off.Policy = &policy
	if d := off.Desired(h100, obs("3=79"), 0); d.Allocatable[ResourceGPU] != 8 {
		t.Errorf("health checks off: allocatable %d, want 8", d.Allocatable[ResourceGPU])
	}
}

func TestKubeletVerdicts(t *testing.T) {
	cfg := mustDevicePluginConfig(t, `version: v1
sharing:
  timeSlicing:
    renameByDefault: true
    failRequestsGreaterThanOne: true
    resources: [{name: nvidia.com/gpu, replicas: 4}]
`)
	s := &Stack{Policy: &ClusterPolicySettings{DevicePluginEnabled: true, DevicePluginDefault: "ts", DevicePluginConfig: "cm"}, DevicePlugin: DevicePluginConfigs{"ts": cfg}}
	inv := NodeInventory{SKU: mustSKU(t, "l4"), Count: 1}
	capacity := map[string]int64{"nvidia.com/gpu.shared": 4}
	pod := func(key string, n int64, handler string, mib int64) GPUPod {
		return GPUPod{Key: key, Containers: []ContainerRequest{{Name: "c", Limits: map[string]int64{"nvidia.com/gpu.shared": n}}}, RuntimeHandler: handler, MemoryMiB: mib}
	}
	got := s.KubeletOn(KubeletNode{Name: "n", Capacity: capacity, Inventory: inv}, []GPUPod{
		pod("a", 1, "nvidia", 8000),
		pod("two", 2, "nvidia", 0), // stack-facts §2: DP@1b826acc internal/rm/rm.go ValidateRequest — maximum request size for shared resources is 1
		pod("norc", 1, "", 0),      // no NVIDIA runtime: no GPU visible
		pod("b", 1, "nvidia", 8000),
		pod("c", 1, "nvidia", 8000), // 24000 MiB > 23034: out of memory
	})
	// stack-facts §2: the exact status.message (renameByDefault true).
	if v := got["two"]; v.Outcome != OutcomeAdmissionRejected || v.Message != `Pod was rejected: Allocate failed due to rpc error: code = Unknown desc = invalid allocation request for "nvidia.com/gpu.shared": invalid request: maximum request size for shared resources is 1; found 2, which is unexpected` {
		t.Errorf("two replicas: got %+v", v)
	}
	if v := got["norc"]; v.Outcome != OutcomeNoGPUVisible {
		t.Errorf("no runtime class: got %+v", v)
	}
	if got["a"].Outcome != OutcomeRunning || got["b"].Outcome != OutcomeRunning || got["c"].Outcome != OutcomeOOMKilled {
		t.Errorf("memory: want a and b running, c OOMKilled; got a=%+v b=%+v c=%+v", got["a"], got["b"], got["c"])
	}
	seen := map[string]bool{}
	for _, k := range []string{"a", "b"} {
		for _, d := range got[k].Devices {
			if seen[d] {
				t.Errorf("device %s allocated twice", d)
			}
			seen[d] = true
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// DeviceIDs is what the simulated kubelet allocates from, first free
// first: the kubelet plugin lists the same IDs to a real kubelet.
func TestDeviceIDsAreWhatTheKubeletAllocates(t *testing.T) {
	cfg := mustDevicePluginConfig(t, dpTimeSlicing4Renamed)
	s := &Stack{Policy: &ClusterPolicySettings{DevicePluginEnabled: true, DevicePluginDefault: "ts", DevicePluginConfig: "cm"}, DevicePlugin: DevicePluginConfigs{"ts": cfg}}
	inv := NodeInventory{SKU: mustSKU(t, "l4"), Count: 2}
	capacity := map[string]int64{"nvidia.com/gpu.shared": 8}
	ids := DeviceIDs("n", "nvidia.com/gpu.shared", 8, 4)
	gpu := func(id string) string { g, _, _ := strings.Cut(id, "::"); return g }
	if len(ids) != 8 || !strings.HasSuffix(ids[0], "::0") || !strings.HasSuffix(ids[3], "::3") || gpu(ids[3]) != gpu(ids[0]) || gpu(ids[4]) == gpu(ids[0]) {
		t.Fatalf("DeviceIDs = %v, want replicas ::0..::3 of one GPU, then of another", ids)
	}
	got := s.KubeletOn(KubeletNode{Name: "n", Capacity: capacity, Inventory: inv}, []GPUPod{
		{Key: "a", Containers: []ContainerRequest{{Name: "c", Limits: map[string]int64{"nvidia.com/gpu.shared": 3}}}, RuntimeHandler: RuntimeHandler},
		{Key: "b", Containers: []ContainerRequest{{Name: "c", Limits: map[string]int64{"nvidia.com/gpu.shared": 2}}}, RuntimeHandler: RuntimeHandler},
	})
	if !slices.Equal(got["a"].Devices, ids[:3]) || !slices.Equal(got["b"].Devices, ids[3:5]) {
		t.Errorf("allocated a=%v b=%v, want %v and %v", got["a"].Devices, got["b"].Devices, ids[:3], ids[3:5])
	}
	// stack-facts §2 failRequestsGreaterThanOne: the plugin quotes the
	// advertised (renamed) resource; the kubelet adds the rest.
	want := `invalid allocation request for "nvidia.com/gpu.shared": invalid request: maximum request size for shared resources is 1; found 2`
	if err := SharedRequestTooLarge("nvidia.com/gpu.shared", 2); err.Error() != want {
		t.Errorf("SharedRequestTooLarge = %q, want %q", err, want)
	}
	status := `Pod was rejected: Allocate failed due to rpc error: code = Unknown desc = invalid allocation request for "nvidia.com/gpu.shared": invalid request: maximum request size for shared resources is 1; found 2, which is unexpected`
	if got := AllocateFailedMessage(SharedRequestTooLarge("nvidia.com/gpu.shared", 2)); got != status {
		t.Errorf("AllocateFailedMessage = %q, want the doc's status.message %q", got, status)
	}
	if got := SharedRequestTooLarge("nvidia.com/gpu", 2).Error(); !strings.Contains(got, `"nvidia.com/gpu":`) {
		t.Errorf("renameByDefault false: %q should quote nvidia.com/gpu", got)
	}
}
