package fakegpu

import (
	"slices"
	"strings"
	"testing"
	"time"
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
`

func migStack(t *testing.T) *Stack {
	return &Stack{
		Policy:    &ClusterPolicySettings{MIGStrategy: MIGStrategyMixed, DevicePluginEnabled: true, GFDEnabled: true, MIGManagerEnabled: true, MIGManagerDefault: "all-disabled"},
		MIGParted: mustMIGPartedConfig(t, testMIGConfig),
	}
}

// The MIG manager protocol (MP: cmd/nvidia-mig-manager, pkg/mig/reconfigure;
// GO: controllers), step by step through Desired.
func TestDesiredWalksTheMIGProtocol(t *testing.T) {
	s := migStack(t)
	inv := NodeInventory{SKU: mustSKU(t, "a100-40gb"), Count: 2}
	delay := 500 * time.Millisecond
	t0 := time.Unix(1000, 0)

	// GO labels MIG-capable nodes that lack nvidia.com/mig.config with the default.
	d := s.Desired(inv, NodeObservation{Labels: map[string]string{}, Annotations: map[string]string{}, Now: t0}, delay)
	if d.Labels[LabelMIGConfig] != "all-disabled" || d.Labels[LabelMIGConfigState] != MIGStateSuccess {
		t.Fatalf("unlabelled node: want mig.config=all-disabled state success, got %v", d.Labels)
	}
	if d.Allocatable[ResourceGPU] != 2 || d.PluginDown != "" {
		t.Fatalf("MIG disabled: want 2 nvidia.com/gpu served, got %v (%s)", d.Allocatable, d.PluginDown)
	}

	// A new layout: pending, operands paused, GPUs withdrawn, requeue.
	labels := map[string]string{LabelMIGConfig: "all-1g.5gb", LabelDeployDevicePlugin: "true", "nvidia.com/gpu.deploy.dcgm": "false"}
	ann := map[string]string{AnnotationMIGApplied: "all-disabled"}
	d = s.Desired(inv, NodeObservation{Labels: labels, Annotations: ann, Now: t0}, delay)
	if d.Labels[LabelMIGConfigState] != MIGStatePending || d.Labels[LabelDeployDevicePlugin] != PausedForMIGChange {
		t.Errorf("reconfiguring: want state pending and device plugin paused, got %v", d.Labels)
	}
	if _, touched := d.Labels["nvidia.com/gpu.deploy.dcgm"]; touched {
		t.Errorf("a deploy label set to false stays false, got %q", d.Labels["nvidia.com/gpu.deploy.dcgm"])
	}
	if d.Allocatable[ResourceGPU] != 0 || d.RequeueAfter != delay {
		t.Errorf("reconfiguring: want GPUs withdrawn and a requeue after %s, got %v, %s", delay, d.Allocatable, d.RequeueAfter)
	}
	since := d.Annotations[AnnotationMIGSince]

	// After the delay: success, operands back, MIG devices advertised, layout changed.
	for k, v := range d.Labels {
		labels[k] = v
	}
	ann[AnnotationMIGSince] = since
	d = s.Desired(inv, NodeObservation{Labels: labels, Annotations: ann, Now: t0.Add(delay)}, delay)
	if d.Labels[LabelMIGConfigState] != MIGStateSuccess || d.Labels[LabelDeployDevicePlugin] != "true" {
		t.Errorf("applied: want state success and the device plugin back, got %v", d.Labels)
	}
	if d.Allocatable["nvidia.com/mig-1g.5gb"] != 14 || !d.LayoutChanged || d.Annotations[AnnotationMIGApplied] != "all-1g.5gb" {
		t.Errorf("applied: want 14 nvidia.com/mig-1g.5gb and the layout recorded, got %v changed=%v %v", d.Allocatable, d.LayoutChanged, d.Annotations)
	}

	// A layout the GPU cannot take ends failed and keeps the old devices.
	labels[LabelMIGConfig] = "all-1g.10gb.me"
	ann = map[string]string{AnnotationMIGApplied: "all-1g.5gb", AnnotationMIGSince: t0.Format(time.RFC3339Nano)}
	d = s.Desired(inv, NodeObservation{Labels: labels, Annotations: ann, Now: t0.Add(delay)}, delay)
	if d.Labels[LabelMIGConfigState] != MIGStateFailed || d.Allocatable["nvidia.com/mig-1g.5gb"] != 14 || d.LayoutChanged {
		t.Errorf("unfit layout: want state failed and the old 14 devices, got %v %v changed=%v", d.Labels, d.Allocatable, d.LayoutChanged)
	}
}

// A crashed or undeployed plugin: the kubelet keeps capacity, allocatable 0.
func TestDesiredPluginDown(t *testing.T) {
	s := migStack(t)
	inv := NodeInventory{SKU: mustSKU(t, "h100-80gb"), Count: 8}
	for name, obs := range map[string]NodeObservation{
		"annotation down":    {Labels: map[string]string{LabelMIGConfig: "all-disabled"}, Annotations: map[string]string{AnnotationMIGApplied: "all-disabled", AnnotationDevicePlugin: DevicePluginDown}},
		"deploy label false": {Labels: map[string]string{LabelMIGConfig: "all-disabled", LabelDeployDevicePlugin: "false"}, Annotations: map[string]string{AnnotationMIGApplied: "all-disabled"}},
	} {
		d := s.Desired(inv, obs, time.Second)
		if d.Capacity[ResourceGPU] != 8 || d.Allocatable[ResourceGPU] != 0 || d.PluginDown == "" {
			t.Errorf("%s: want capacity 8, allocatable 0 and a reason, got %v / %v / %q", name, d.Capacity, d.Allocatable, d.PluginDown)
		}
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
		return GPUPod{Key: key, Limits: map[string]int64{"nvidia.com/gpu.shared": n}, RuntimeHandler: handler, MemoryMiB: mib}
	}
	got := s.Kubelet("n", nil, capacity, inv, []GPUPod{
		pod("a", 1, "nvidia", 8000),
		pod("two", 2, "nvidia", 0), // DP: internal/rm — maximum request size for shared resources is 1
		pod("norc", 1, "", 0),      // no NVIDIA runtime: no GPU visible
		pod("b", 1, "nvidia", 8000),
		pod("c", 1, "nvidia", 8000), // 24000 MiB > 23034: out of memory
	})
	// nvidia-stack-facts.md, the exact status.message (renameByDefault true).
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
	got := s.Kubelet("n", nil, capacity, inv, []GPUPod{
		{Key: "a", Limits: map[string]int64{"nvidia.com/gpu.shared": 3}, RuntimeHandler: RuntimeHandler},
		{Key: "b", Limits: map[string]int64{"nvidia.com/gpu.shared": 2}, RuntimeHandler: RuntimeHandler},
	})
	if !slices.Equal(got["a"].Devices, ids[:3]) || !slices.Equal(got["b"].Devices, ids[3:5]) {
		t.Errorf("allocated a=%v b=%v, want %v and %v", got["a"].Devices, got["b"].Devices, ids[:3], ids[3:5])
	}
	// nvidia-stack-facts.md §"failRequestsGreaterThanOne": the plugin quotes
	// the advertised (renamed) resource; the kubelet adds the rest.
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
