// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"strings"
	"testing"
)

// kubeletStack is a cluster whose default device-plugin config is doc.
func kubeletStack(t *testing.T, doc string) *Stack {
	t.Helper()
	return &Stack{
		Policy:       &ClusterPolicySettings{DevicePluginEnabled: true, DevicePluginDefault: "d", DevicePluginConfig: "cm", ToolkitEnabled: true, ToolkitSetAsDefault: true},
		DevicePlugin: DevicePluginConfigs{"d": mustDevicePluginConfig(t, doc)},
	}
}

const dpTimeSlicingStrict = `version: v1
sharing:
  timeSlicing:
    renameByDefault: true
    failRequestsGreaterThanOne: true
    resources: [{name: nvidia.com/gpu, replicas: 4}]
`

func ctr(name string, res string, n int64) ContainerRequest {
	return ContainerRequest{Name: name, Limits: map[string]int64{res: n}}
}

func initCtr(name string, res string, n int64, sidecar bool) ContainerRequest {
	c := ctr(name, res, n)
	c.Init, c.Restartable = true, sidecar
	return c
}

// TestKubeletAllocatesPerContainer: the kubelet calls Allocate once per
// container, init containers first; failRequestsGreaterThanOne is judged
// on each container's own request.
func TestKubeletAllocatesPerContainer(t *testing.T) {
	const shared = "nvidia.com/gpu.shared"
	tests := []struct {
		name        string
		doc         string
		capacity    map[string]int64
		containers  []ContainerRequest
		wantOutcome string
		wantDevices int // distinct devices the pod holds
		wantMessage string
	}{
		{
			// stack-facts §2: k8s manager.go Allocate, allocateContainerResources; DP@1b826acc
			// internal/rm/rm.go ValidateRequest — two containers asking 1 each are admitted
			name: "two containers one replica each", doc: dpTimeSlicingStrict, capacity: map[string]int64{shared: 4},
			containers:  []ContainerRequest{ctr("a", shared, 1), ctr("b", shared, 1)},
			wantDevices: 2,
		},
		{
			// stack-facts §2: one container asking 2 is rejected, word for word
			name: "one container asks 2", doc: dpTimeSlicingStrict, capacity: map[string]int64{shared: 4},
			containers:  []ContainerRequest{ctr("a", shared, 2)},
			wantOutcome: OutcomeAdmissionRejected,
			wantMessage: `Pod was rejected: Allocate failed due to rpc error: code = Unknown desc = invalid allocation request for "nvidia.com/gpu.shared": invalid request: maximum request size for shared resources is 1; found 2, which is unexpected`,
		},
		{
			// stack-facts §2: init containers included — an init container asking 2 is rejected
			name: "init container asks 2", doc: dpTimeSlicingStrict, capacity: map[string]int64{shared: 4},
			containers:  []ContainerRequest{initCtr("i", shared, 2, false), ctr("a", shared, 1)},
			wantOutcome: OutcomeAdmissionRejected,
			wantMessage: "found 2",
		},
		{
			// stack-facts §2: a sidecar (restartable init container) asking 2 is rejected too
			name: "sidecar asks 2", doc: dpTimeSlicingStrict, capacity: map[string]int64{shared: 4},
			containers:  []ContainerRequest{initCtr("s", shared, 2, true)},
			wantOutcome: OutcomeAdmissionRejected,
		},
		{
			// stack-facts §2: k8s manager.go devicesToAllocate — a non-restartable init
			// container's device is reused by the app container after it
			name: "init device reused", doc: dpTimeSlicingStrict, capacity: map[string]int64{shared: 4},
			containers:  []ContainerRequest{initCtr("i", shared, 1, false), ctr("a", shared, 1)},
			wantDevices: 1,
		},
		{
			// stack-facts §2: a sidecar keeps its device while the app container runs
			name: "sidecar keeps its device", doc: dpTimeSlicingStrict, capacity: map[string]int64{shared: 4},
			containers:  []ContainerRequest{initCtr("s", shared, 1, true), ctr("a", shared, 1)},
			wantDevices: 2,
		},
		{
			// stack-facts §2: without failRequestsGreaterThanOne one container gets 2 replicas
			name: "time-slicing unset allows 2", doc: dpTimeSlicing4Renamed, capacity: map[string]int64{shared: 4},
			containers:  []ContainerRequest{ctr("a", shared, 2)},
			wantDevices: 2,
		},
		{
			// stack-facts §2: exclusive GPUs are never judged by failRequestsGreaterThanOne
			name: "exclusive 2 in one container", doc: "version: v1\n", capacity: map[string]int64{ResourceGPU: 4},
			containers:  []ContainerRequest{ctr("a", ResourceGPU, 2), ctr("b", ResourceGPU, 1)},
			wantDevices: 3,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := kubeletStack(t, tc.doc)
			got := s.KubeletOn(KubeletNode{Name: "n", Capacity: tc.capacity, Inventory: NodeInventory{SKU: mustSKU(t, "l4"), Count: 1}},
				[]GPUPod{{Key: "p", Containers: tc.containers, RuntimeHandler: RuntimeHandler}})["p"]
			if got.Outcome != tc.wantOutcome {
				t.Fatalf("outcome %q (%s), want %q", got.Outcome, got.Message, tc.wantOutcome)
			}
			if tc.wantMessage != "" && !strings.Contains(got.Message, tc.wantMessage) {
				t.Errorf("message %q, want %q", got.Message, tc.wantMessage)
			}
			if tc.wantOutcome == OutcomeRunning && len(got.Devices) != tc.wantDevices {
				t.Errorf("devices %v, want %d distinct", got.Devices, tc.wantDevices)
			}
		})
	}
}

// TestGPUInjected: which runtime handlers give a container its GPU, from
// the ClusterPolicy of the simulated GPU Operator (v25.3.4).
func TestGPUInjected(t *testing.T) {
	on, off := true, false
	tests := []struct {
		name    string
		policy  ClusterPolicySettings
		handler string
		want    bool
	}{
		// stack-facts §6: the nvidia handler injects
		{"nvidia", ClusterPolicySettings{ToolkitEnabled: on, ToolkitSetAsDefault: on}, "nvidia", true},
		// stack-facts §6 (CTK defaultSetAsDefault = true): CDI off, toolkit on — nvidia is
		// containerd's default runtime, so a pod with no RuntimeClass gets its GPU
		{"no handler, nvidia default", ClusterPolicySettings{ToolkitEnabled: on, ToolkitSetAsDefault: on}, "", true},
		// stack-facts §6: toolkit.env NVIDIA_RUNTIME_SET_AS_DEFAULT=false — runc, no GPU
		{"no handler, not default", ClusterPolicySettings{ToolkitEnabled: on, ToolkitSetAsDefault: off}, "", false},
		// stack-facts §6: toolkit.enabled=false on a host whose default runtime is not nvidia
		{"no handler, toolkit disabled", ClusterPolicySettings{ToolkitEnabled: off, ToolkitSetAsDefault: on}, "", false},
		// stack-facts §6: a runc handler ignores NVIDIA_VISIBLE_DEVICES with CDI off
		{"runc, CDI off", ClusterPolicySettings{ToolkitEnabled: on, ToolkitSetAsDefault: on}, "runc", false},
		// stack-facts §6 ("GOmod with cdi.enabled: true"): the plugin's CDI annotations
		// carry the nvidia.cdi.k8s.io/ prefix, read by the nvidia runtime only
		{"runc, CDI on (v25.3.4)", ClusterPolicySettings{ToolkitEnabled: on, ToolkitSetAsDefault: on, CDIEnabled: on}, "runc", false},
		// stack-facts §6: RuntimeClasses nvidia-cdi and nvidia-legacy exist only with CDI on
		{"nvidia-cdi, CDI off", ClusterPolicySettings{ToolkitEnabled: on, ToolkitSetAsDefault: on}, "nvidia-cdi", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Stack{Policy: &tc.policy}
			if got, why := s.GPUInjected(tc.handler); got != tc.want {
				t.Errorf("GPUInjected(%q) = %v (%s), want %v", tc.handler, got, why, tc.want)
			}
		})
	}
}

// TestParseClusterPolicyRuntime reads what GPUInjected needs from a
// ClusterPolicy manifest.
func TestParseClusterPolicyRuntime(t *testing.T) {
	tests := []struct {
		name                       string
		spec                       string
		cdi, toolkit, setAsDefault bool
	}{
		// stack-facts §6: GOmod@d73a0086 CRD — cdi.enabled defaults to false; the
		// toolkit's installer makes nvidia the default runtime
		{"defaults", "{}", false, true, true},
		{"cdi on", "{cdi: {enabled: true}}", true, true, true},
		// stack-facts §6: toolkit.env NVIDIA_RUNTIME_SET_AS_DEFAULT=false
		{"not default", "{toolkit: {env: [{name: NVIDIA_RUNTIME_SET_AS_DEFAULT, value: \"false\"}]}}", false, true, false},
		// stack-facts §6: CONTAINERD_SET_AS_DEFAULT=false does the same
		{"containerd not default", "{toolkit: {env: [{name: CONTAINERD_SET_AS_DEFAULT, value: \"false\"}]}}", false, true, false},
		{"toolkit disabled", "{toolkit: {enabled: false}}", false, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseClusterPolicy([]byte("kind: ClusterPolicy\nspec: " + tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			if p.CDIEnabled != tc.cdi || p.ToolkitEnabled != tc.toolkit || p.ToolkitSetAsDefault != tc.setAsDefault {
				t.Errorf("cdi %v toolkit %v setAsDefault %v, want %v %v %v", p.CDIEnabled, p.ToolkitEnabled, p.ToolkitSetAsDefault, tc.cdi, tc.toolkit, tc.setAsDefault)
			}
		})
	}
}

// TestKubeletNoGPUWithoutInjection: a pod whose runtime does not inject is
// allocated its devices (the resource is consumed) and sees no GPU.
func TestKubeletNoGPUWithoutInjection(t *testing.T) {
	s := kubeletStack(t, "version: v1\n")
	s.Policy.ToolkitSetAsDefault = false
	got := s.KubeletOn(KubeletNode{Name: "n", Capacity: map[string]int64{ResourceGPU: 1}, Inventory: NodeInventory{SKU: mustSKU(t, "l4"), Count: 1}},
		[]GPUPod{{Key: "p", Containers: []ContainerRequest{ctr("a", ResourceGPU, 1)}}})["p"]
	// stack-facts §6: "It silently gets none (pod Running, the resource consumed)"
	if got.Outcome != OutcomeNoGPUVisible || len(got.Devices) != 1 || !strings.Contains(got.Message, "NVIDIA_RUNTIME_SET_AS_DEFAULT") {
		t.Errorf("got %+v, want no GPU visible with its device allocated, naming the toolkit env", got)
	}
}

// TestMPS covers the MPS limits of stack-facts §2.
func TestMPS(t *testing.T) {
	l4, t4 := mustSKU(t, "l4"), mustSKU(t, "t4")
	mps := func(replicas string) *DevicePluginConfig {
		return mustDevicePluginConfig(t, "version: v1\nsharing:\n  mps:\n    resources: [{name: nvidia.com/gpu, replicas: "+replicas+"}]\n")
	}
	tests := []struct {
		name     string
		cfg      *DevicePluginConfig
		strategy string
		sku      SKU
		mig      bool
		wantErr  string
	}{
		// stack-facts §2: DP@1b826acc cmd/mps-control-daemon/mps/device.go assertReplicas,
		// maxClients — 48 per GPU from compute capability 7.5 (L4 is 8.9)
		{"48 on L4", mps("48"), MIGStrategyNone, l4, false, ""},
		{"49 on L4", mps("49"), MIGStrategyNone, l4, false, "invalid MPS configuration: invalid device maximum allowed replicas exceeded: 49 > 48"},
		// stack-facts §2: T4 is 7.5, the boundary is >= 7.5 although the check is named for Volta
		{"48 on T4", mps("48"), MIGStrategyNone, t4, false, ""},
		// stack-facts §2: cmd/nvidia-device-plugin/main.go validateFlags
		{"mixed", mps("2"), MIGStrategyMixed, l4, false, "using --mig-strategy=mixed is not supported with MPS"},
		// stack-facts §2: internal/plugin/mps.go getMPSOptions
		{"MIG devices", mps("2"), MIGStrategySingle, l4, true, "sharing using MPS is not supported for MIG devices"},
		// stack-facts §2: time-slicing is not limited this way
		{"time-slicing 64", mustDevicePluginConfig(t, "version: v1\nsharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 64}]\n"), MIGStrategyNone, l4, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := MPSError(tc.cfg, tc.strategy, tc.sku, tc.mig)
			checkErr(t, err, nonEmpty(tc.wantErr)...)
		})
	}
	// stack-facts §2: daemon.go perDevicePinnedDeviceMemoryLimits, activeThreadPercentage —
	// integer divisions of total memory and 100 by replicas
	if mem, threads := MPSClientLimits(l4, 3); mem != l4.MemoryMiB/3 || threads != 33 {
		t.Errorf("MPSClientLimits(L4, 3) = %d MiB, %d%%; want %d, 33", mem, threads, l4.MemoryMiB/3)
	}
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// TestKubeletMPSMemoryPinned: under MPS a client is pinned to its share of
// the GPU's memory; the pod over it is OOMKilled, its neighbours are not.
func TestKubeletMPSMemoryPinned(t *testing.T) {
	s := kubeletStack(t, "version: v1\nsharing:\n  mps:\n    renameByDefault: true\n    resources: [{name: nvidia.com/gpu, replicas: 2}]\n")
	l4 := mustSKU(t, "l4")
	half, _ := MPSClientLimits(l4, 2)
	pod := func(key string, mib int64) GPUPod {
		return GPUPod{Key: key, Containers: []ContainerRequest{ctr("a", "nvidia.com/gpu.shared", 1)}, RuntimeHandler: RuntimeHandler, MemoryMiB: mib}
	}
	got := s.KubeletOn(KubeletNode{Name: "n", Capacity: map[string]int64{"nvidia.com/gpu.shared": 2}, Inventory: NodeInventory{SKU: l4, Count: 1}},
		[]GPUPod{pod("fits", int64(half)), pod("over", int64(half)+1)})
	// stack-facts §2: daemon.go perDevicePinnedDeviceMemoryLimits
	if got["fits"].Outcome != OutcomeRunning || got["over"].Outcome != OutcomeOOMKilled {
		t.Errorf("fits=%+v over=%+v; want fits running, over OOMKilled", got["fits"], got["over"])
	}
}

// TestUnhealthyDevices: an Xid marks one device per physical GPU
// (stack-facts §2, DP@1b826acc internal/rm/health.go checkHealth).
func TestUnhealthyDevices(t *testing.T) {
	l4, a100 := mustSKU(t, "l4"), mustSKU(t, "a100-40gb")
	tests := []struct {
		name  string
		inv   NodeInventory
		state StackState
		xids  map[int]int
		want  map[string][]string
	}{
		{
			// stack-facts §2: a critical Xid on GPU 1 marks that GPU
			name: "exclusive", inv: NodeInventory{SKU: l4, Count: 2}, xids: map[int]int{1: 79},
			want: map[string][]string{ResourceGPU: {deviceID("n", ResourceGPU, 1, 1)}},
		},
		{
			// stack-facts §2: Xids 13, 31, 43, 45, 68, 109 are not critical
			name: "ignored xid", inv: NodeInventory{SKU: l4, Count: 2}, xids: map[int]int{0: 13, 1: 109},
			want: map[string][]string{},
		},
		{
			// stack-facts §2 (v0.20.0): one replica of the shared GPU, not all four
			name: "time-sliced", inv: NodeInventory{SKU: l4, Count: 2}, xids: map[int]int{0: 48},
			state: StackState{DevicePlugin: mustDevicePluginConfig(t, dpTimeSlicing4Renamed)},
			want:  map[string][]string{"nvidia.com/gpu.shared": {deviceID("n", "nvidia.com/gpu.shared", 3, 4)}},
		},
		{
			// stack-facts §2 (v0.20.0): with MIG one MIG device per parent GPU
			name: "mixed MIG", inv: NodeInventory{SKU: a100, Count: 2}, xids: map[int]int{1: 48},
			state: StackState{MIGStrategy: MIGStrategyMixed, MIG: migAll(2, map[string]int{"1g.5gb": 7})},
			want:  map[string][]string{"nvidia.com/mig-1g.5gb": {deviceID("n", "nvidia.com/mig-1g.5gb", 7, 1)}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := UnhealthyDevices("n", tc.inv, tc.state, tc.xids, nil)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, ids := range tc.want {
				if strings.Join(got[k], ",") != strings.Join(ids, ",") {
					t.Errorf("%s: got %v, want %v", k, got[k], ids)
				}
			}
		})
	}
	// stack-facts §2: getDisabledHealthCheckXids — which Xids count under the plugin's env
	xidRows := []struct {
		env  map[string]string
		xid  int
		want bool
	}{
		{nil, 79, true},
		{nil, 13, false},
		{map[string]string{"DP_DISABLE_HEALTHCHECKS": "all"}, 79, false},
		{map[string]string{"DP_DISABLE_HEALTHCHECKS": "xids"}, 79, false},
		{map[string]string{"DP_DISABLE_HEALTHCHECKS": "79, 48"}, 48, false},
		{map[string]string{"DP_DISABLE_HEALTHCHECKS": "79"}, 48, true},
		{map[string]string{"DP_ENABLE_HEALTHCHECKS": "13"}, 13, true},
		{map[string]string{"DP_DISABLE_HEALTHCHECKS": "all", "DP_ENABLE_HEALTHCHECKS": "79"}, 79, false},
		{map[string]string{"DP_DISABLE_HEALTHCHECKS": "all", "DP_ENABLE_HEALTHCHECKS": "all"}, 79, true},
	}
	for _, r := range xidRows {
		if got := CriticalXid(r.env, r.xid); got != r.want {
			t.Errorf("CriticalXid(%v, %d) = %v, want %v", r.env, r.xid, got, r.want)
		}
	}
	if _, err := ParseXids("0=79,x", 2); err == nil {
		t.Error("ParseXids accepted a malformed entry")
	}
	if _, err := ParseXids("2=79", 2); err == nil || !strings.Contains(err.Error(), "0..1") {
		t.Errorf("ParseXids(2=79) on 2 GPUs: %v, want an error naming the range", err)
	}
}

// TestKubeletAvoidsUnhealthyDevices: new pods get healthy devices only.
func TestKubeletAvoidsUnhealthyDevices(t *testing.T) {
	s := kubeletStack(t, "version: v1\n")
	bad := deviceID("n", ResourceGPU, 0, 1)
	got := s.KubeletOn(KubeletNode{Name: "n", Capacity: map[string]int64{ResourceGPU: 2}, Inventory: NodeInventory{SKU: mustSKU(t, "l4"), Count: 2}, Unhealthy: map[string]bool{bad: true}},
		[]GPUPod{{Key: "p", Containers: []ContainerRequest{ctr("a", ResourceGPU, 1)}, RuntimeHandler: RuntimeHandler}})["p"]
	// stack-facts §2: k8s manager.go GetCapacity — the kubelet allocates healthy devices
	if len(got.Devices) != 1 || got.Devices[0] == bad {
		t.Errorf("got %+v, want the healthy GPU, not %s", got, bad)
	}
}
