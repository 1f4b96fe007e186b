// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package kubeletplugin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpupool/gpupool/fakegpu"
)

const testNode = "kind-worker"

// waitTimeout bounds every wait for the plugin or the fake kubelet.
const waitTimeout = 10 * time.Second

// fakeKubelet is the kubelet's Registration service on kubelet.sock in a
// device-plugin directory. It records every registration.
type fakeKubelet struct {
	pluginapi.UnimplementedRegistrationServer
	dir string

	mu            sync.Mutex
	registrations []*pluginapi.RegisterRequest
	srv           *grpc.Server
	serveDone     chan struct{}
}

// pluginDir returns a fresh device-plugin directory. It is short on
// purpose: a unix socket path must fit in 108 bytes, which a deep
// t.TempDir() plus a socket name like fakegpu-mig-1g.5gb.sock can exceed.
func pluginDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func startFakeKubelet(t *testing.T, dir string) *fakeKubelet {
	t.Helper()
	k := &fakeKubelet{dir: dir}
	k.listen(t)
	t.Cleanup(k.stop)
	return k
}

func (k *fakeKubelet) listen(t *testing.T) {
	t.Helper()
	lis, err := net.Listen("unix", filepath.Join(k.dir, kubeletSocketName))
	if err != nil {
		t.Fatalf("fake kubelet: %v", err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(srv, k)
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(lis) }()
	k.mu.Lock()
	k.srv, k.serveDone = srv, done
	k.mu.Unlock()
}

func (k *fakeKubelet) stop() {
	k.mu.Lock()
	srv, done := k.srv, k.serveDone
	k.srv = nil
	k.mu.Unlock()
	if srv != nil {
		srv.Stop() // closing the listener unlinks kubelet.sock
		<-done
	}
}

// restart does what a restarting kubelet does to the directory: its
// socket goes, the plugins' sockets are removed, kubelet.sock is created
// again.
func (k *fakeKubelet) restart(t *testing.T) {
	t.Helper()
	k.stop()
	entries, err := os.ReadDir(k.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Remove(filepath.Join(k.dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	k.listen(t)
}

func (k *fakeKubelet) Register(_ context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.registrations = append(k.registrations, req)
	return &pluginapi.Empty{}, nil
}

// registered returns how many times each resource has registered.
func (k *fakeKubelet) registered() map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]int{}
	for _, r := range k.registrations {
		out[r.ResourceName]++
	}
	return out
}

// waitRegistered waits until each resource has registered at least n times.
func (k *fakeKubelet) waitRegistered(t *testing.T, n int, resources ...string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%v to register with the fake kubelet %d time(s)", resources, n), func() (bool, string) {
		got := k.registered()
		for _, r := range resources {
			if got[r] < n {
				return false, fmt.Sprintf("registrations so far: %v", got)
			}
		}
		return true, ""
	})
}

// waitFor polls cond until it holds or waitTimeout passes; on timeout the
// test fails naming what it awaited and cond's last word.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s (%s)", waitTimeout, what, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pluginClient is the kubelet's side of one resource's plugin socket.
func pluginClient(t *testing.T, dir, resource string) pluginapi.DevicePluginClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, SocketName(resource)), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pluginapi.NewDevicePluginClient(conn)
}

// deviceStream is a ListAndWatch stream, read in the background.
type deviceStream struct {
	lists  chan []string
	cancel context.CancelFunc
}

func watchDevices(t *testing.T, c pluginapi.DevicePluginClient) *deviceStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := c.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatalf("ListAndWatch: %v", err)
	}
	s := &deviceStream{lists: make(chan []string, 16), cancel: cancel}
	go func() {
		defer close(s.lists)
		for {
			resp, err := stream.Recv()
			if err != nil {
				return
			}
			var ids []string
			for _, d := range resp.Devices {
				if d.Health != pluginapi.Healthy {
					ids = append(ids, d.ID+" ("+d.Health+")")
					continue
				}
				ids = append(ids, d.ID)
			}
			s.lists <- ids
		}
	}()
	return s
}

// next returns the next device list the stream sends.
func (s *deviceStream) next(t *testing.T, what string) []string {
	t.Helper()
	select {
	case ids, ok := <-s.lists:
		if !ok {
			t.Fatalf("ListAndWatch stream ended while waiting for %s", what)
		}
		return ids
	case <-time.After(waitTimeout):
		t.Fatalf("timed out after %s waiting for ListAndWatch to send %s", waitTimeout, what)
	}
	return nil
}

// waitEnded waits for the plugin to close the stream.
func (s *deviceStream) waitEnded(t *testing.T, what string) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		select {
		case _, ok := <-s.lists:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("timed out after %s waiting for the plugin to end %s", waitTimeout, what)
		}
	}
}

// --- the GPU Operator config under test ---

const (
	dpConfigMap  = "device-plugin-config"
	migConfigMap = "mig-parted-config"
)

// stack is a ClusterPolicy with the given MIG strategy whose device-plugin
// ConfigMap holds configs (default key "exclusive"), plus a mig-parted
// ConfigMap, as StackFromObjects reads them from a cluster.
func stack(t *testing.T, migStrategy string, configs map[string]string) *fakegpu.Stack {
	t.Helper()
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
		"metadata": map[string]any{"name": "cluster-policy"},
		"spec": map[string]any{
			"mig":          map[string]any{"strategy": migStrategy},
			"devicePlugin": map[string]any{"config": map[string]any{"name": dpConfigMap, "default": "exclusive"}},
			"migManager":   map[string]any{"config": map[string]any{"name": migConfigMap}},
		},
	}}
	data := map[string]any{"exclusive": "version: v1\n"}
	for k, v := range configs {
		data[k] = v
	}
	configMap := func(name string, data map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "gpu-operator"},
			"data":     data,
		}}
	}
	mig := configMap(migConfigMap, map[string]any{"config.yaml": `version: v1
mig-configs:
  all-disabled:
  - devices: all
    mig-enabled: false
  all-1g.5gb:
  - devices: all
    mig-enabled: true
    mig-devices: {"1g.5gb": 7}
  all-balanced:
  - devices: all
    mig-enabled: true
    mig-devices: {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}
`})
	s, err := fakegpu.StackFromObjects([]*unstructured.Unstructured{policy, configMap(dpConfigMap, data), mig}, nil)
	if err != nil {
		t.Fatalf("StackFromObjects: %v", err)
	}
	return s
}

func timeSlicing(replicas int, rename, failOverOne bool) string {
	return fmt.Sprintf(`version: v1
sharing:
  timeSlicing:
    renameByDefault: %t
    failRequestsGreaterThanOne: %t
    resources:
    - name: nvidia.com/gpu
      replicas: %d
`, rename, failOverOne, replicas)
}

func gpuNode(sku string, gpus int) map[string]string {
	return map[string]string{fakegpu.AnnotationSKU: sku, fakegpu.AnnotationGPUs: fmt.Sprint(gpus)}
}

// startPlugin runs a plugin against a fake kubelet in a fresh directory.
func startPlugin(t *testing.T) (*Plugin, *fakeKubelet, string) {
	t.Helper()
	dir := pluginDir(t)
	k := startFakeKubelet(t, dir)
	// A trailing slash, as in pluginapi.DevicePluginPath, must not matter.
	p, err := New(Options{NodeName: testNode, Dir: dir + "/", RegisterRetry: 50 * time.Millisecond, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p, k, dir
}

func update(t *testing.T, p *Plugin, s *fakegpu.Stack, labels, annotations map[string]string) Plan {
	t.Helper()
	plan, err := p.Update(s, labels, annotations)
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	return plan
}

// TestServesWhatTheModelAdvertises: each resource the model advertises
// registers under its name, and ListAndWatch lists the IDs the simulated
// kubelet allocates from.
func TestServesWhatTheModelAdvertises(t *testing.T) {
	tests := []struct {
		name        string
		migStrategy string
		configs     map[string]string
		labels      map[string]string
		applied     string // the MIG layout the MIG manager applied
		sku         string
		gpus        int
		want        map[string]int64 // resource -> devices
		replicas    map[string]int
	}{
		{
			name: "exclusive", migStrategy: fakegpu.MIGStrategyNone,
			sku: "l4", gpus: 2,
			want: map[string]int64{"nvidia.com/gpu": 2},
		},
		{
			name: "time-slicing renamed", migStrategy: fakegpu.MIGStrategyNone,
			configs: map[string]string{"ts-4": timeSlicing(4, true, false)},
			labels:  map[string]string{fakegpu.LabelDevicePluginConfig: "ts-4"},
			sku:     "l4", gpus: 2,
			want:     map[string]int64{"nvidia.com/gpu.shared": 8},
			replicas: map[string]int{"nvidia.com/gpu.shared": 4},
		},
		{
			name: "MIG mixed", migStrategy: fakegpu.MIGStrategyMixed,
			labels:  map[string]string{fakegpu.LabelMIGConfig: "all-1g.5gb"},
			applied: "all-1g.5gb",
			sku:     "a100-40gb", gpus: 2,
			want: map[string]int64{"nvidia.com/mig-1g.5gb": 14},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := stack(t, tc.migStrategy, tc.configs)
			annotations := gpuNode(tc.sku, tc.gpus)
			if tc.applied != "" {
				annotations[fakegpu.AnnotationMIGApplied] = tc.applied
			}
			// The plugin must serve what the KWOK nodes advertise.
			inv, _, err := fakegpu.Inventory(annotations)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Node(tc.labels, inv).Resources; !maps.Equal(got, tc.want) {
				t.Fatalf("the model advertises %v, the test expects %v", got, tc.want)
			}

			p, k, dir := startPlugin(t)
			plan := update(t, p, s, tc.labels, annotations)
			if plan.Down != "" {
				t.Fatalf("plugin down: %s", plan.Down)
			}
			names := slices.Sorted(maps.Keys(tc.want))
			k.waitRegistered(t, 1, names...)
			if got := slices.Sorted(maps.Keys(k.registered())); !slices.Equal(got, names) {
				t.Errorf("registered %v, want %v", got, names)
			}
			for _, name := range names {
				for _, r := range k.registrationsOf(name) {
					if r.Version != pluginapi.Version || r.Endpoint != SocketName(name) || !r.Options.GetGetPreferredAllocationAvailable() {
						t.Errorf("registration %v: want version %s, endpoint %s, GetPreferredAllocationAvailable", r, pluginapi.Version, SocketName(name))
					}
				}
				want := fakegpu.DeviceIDs(testNode, name, tc.want[name], tc.replicas[name])
				got := watchDevices(t, pluginClient(t, dir, name)).next(t, "the device list of "+name)
				if !slices.Equal(got, want) {
					t.Errorf("%s: ListAndWatch lists %v, want %v", name, got, want)
				}
			}
		})
	}
}

func (k *fakeKubelet) registrationsOf(resource string) []*pluginapi.RegisterRequest {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []*pluginapi.RegisterRequest
	for _, r := range k.registrations {
		if r.ResourceName == resource {
			out = append(out, r)
		}
	}
	return out
}

func TestAllocateSetsVisibleDevices(t *testing.T) {
	p, k, dir := startPlugin(t)
	update(t, p, stack(t, fakegpu.MIGStrategyNone, nil), nil, gpuNode("l4", 4))
	k.waitRegistered(t, 1, fakegpu.ResourceGPU)
	c := pluginClient(t, dir, fakegpu.ResourceGPU)
	ids := fakegpu.DeviceIDs(testNode, fakegpu.ResourceGPU, 4, 1)

	opts, err := c.GetDevicePluginOptions(context.Background(), &pluginapi.Empty{})
	if err != nil || !opts.GetPreferredAllocationAvailable {
		t.Errorf("GetDevicePluginOptions = %v, %v; want GetPreferredAllocationAvailable", opts, err)
	}
	// The kubelet asks which of the free devices to take: the first ones.
	pref, err := c.GetPreferredAllocation(context.Background(), &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{
		{AvailableDeviceIDs: []string{ids[3], ids[1], ids[2]}, AllocationSize: 2},
	}})
	if err != nil {
		t.Fatalf("GetPreferredAllocation: %v", err)
	}
	if got := pref.ContainerResponses[0].DeviceIDs; !slices.Equal(got, []string{ids[1], ids[2]}) {
		t.Errorf("GetPreferredAllocation = %v, want the first free in list order %v", got, ids[1:3])
	}

	resp, err := c.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
		{DevicesIds: []string{ids[1], ids[2]}},
		{DevicesIds: []string{ids[0]}},
	}})
	if err != nil {
		t.Fatalf("Allocate: %v", err)
	}
	for i, want := range []string{ids[1] + "," + ids[2], ids[0]} {
		if got := resp.ContainerResponses[i].Envs[EnvVisibleDevices]; got != want {
			t.Errorf("container %d: %s = %q, want %q", i, EnvVisibleDevices, got, want)
		}
	}

	if _, err := c.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
		{DevicesIds: []string{"GPU-not-on-this-node"}},
	}}); err == nil || !strings.Contains(err.Error(), "unknown device") {
		t.Errorf("Allocate of a device the plugin does not list: err = %v, want unknown device", err)
	}
}

// TestAllocateSharedOverOne: under failRequestsGreaterThanOne, Allocate of
// two replicas fails with the upstream message (the kubelet then fails the
// pod with UnexpectedAdmissionError); without it the container gets both.
func TestAllocateSharedOverOne(t *testing.T) {
	for _, tc := range []struct {
		name        string
		failOverOne bool
		rename      bool
		resource    string
	}{
		{"failRequestsGreaterThanOne", true, false, "nvidia.com/gpu"},
		{"failRequestsGreaterThanOne renamed", true, true, "nvidia.com/gpu.shared"},
		{"without failRequestsGreaterThanOne", false, false, "nvidia.com/gpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, k, dir := startPlugin(t)
			s := stack(t, fakegpu.MIGStrategyNone, map[string]string{"ts": timeSlicing(4, tc.rename, tc.failOverOne)})
			update(t, p, s, map[string]string{fakegpu.LabelDevicePluginConfig: "ts"}, gpuNode("l4", 1))
			k.waitRegistered(t, 1, tc.resource)
			ids := fakegpu.DeviceIDs(testNode, tc.resource, 4, 4)
			resp, err := pluginClient(t, dir, tc.resource).Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
				{DevicesIds: ids[:2]},
			}})
			if !tc.failOverOne {
				if err != nil {
					t.Fatalf("Allocate of 2 replicas: %v", err)
				}
				// The runtime is handed the GPU once, its replica suffix
				// stripped (access §3.2); the fake's own record keeps both.
				physical, _, _ := strings.Cut(ids[0], "::")
				if got := resp.ContainerResponses[0].Envs[EnvVisibleDevices]; got != physical {
					t.Errorf("%s = %q, want %q", EnvVisibleDevices, got, physical)
				}
				if got, want := resp.ContainerResponses[0].Envs[EnvDeviceIDs], ids[0]+","+ids[1]; got != want {
					t.Errorf("%s = %q, want %q", EnvDeviceIDs, got, want)
				}
				return
			}
			// The plugin's part only: the real kubelet composes the rest
			// (stack-facts §2, failRequestsGreaterThanOne).
			want := fmt.Sprintf(`invalid allocation request for %q: invalid request: maximum request size for shared resources is 1; found 2`, tc.resource)
			if err == nil {
				t.Fatalf("Allocate of 2 replicas succeeded (%v), want %q", resp, want)
			}
			st, _ := status.FromError(err)
			if st.Message() != want || st.Message() != fakegpu.SharedRequestTooLarge(tc.resource, 2).Error() {
				t.Errorf("Allocate error = %q, want %q", st.Message(), want)
			}
			// What the kubelet writes into the pod, as the simulated kubelet does.
			if got := "Allocate failed due to " + err.Error(); !strings.Contains(got, "rpc error: code = Unknown desc = "+want) {
				t.Errorf("kubelet message %q lacks the simulated kubelet's wording", got)
			}
		})
	}
}

func TestReregistersWhenKubeletRestarts(t *testing.T) {
	p, k, dir := startPlugin(t)
	// A balanced MIG layout under mixed: three resources, three sockets.
	s := stack(t, fakegpu.MIGStrategyMixed, nil)
	node := gpuNode("a100-40gb", 1)
	node[fakegpu.AnnotationMIGApplied] = "all-balanced"
	update(t, p, s, map[string]string{fakegpu.LabelMIGConfig: "all-balanced"}, node)
	want := map[string]int64{"nvidia.com/mig-1g.5gb": 2, "nvidia.com/mig-2g.10gb": 1, "nvidia.com/mig-3g.20gb": 1}
	names := slices.Sorted(maps.Keys(want))
	k.waitRegistered(t, 1, names...)
	before := watchDevices(t, pluginClient(t, dir, names[0]))
	before.next(t, "the device list before the kubelet restart")

	k.restart(t)
	k.waitRegistered(t, 2, names...)
	// The restarted servers closed the streams of the old kubelet.
	before.waitEnded(t, "the stream opened before the restart")
	for _, name := range names {
		got := watchDevices(t, pluginClient(t, dir, name)).next(t, "the device list of "+name+" after the kubelet restart")
		if want := fakegpu.DeviceIDs(testNode, name, want[name], 0); !slices.Equal(got, want) {
			t.Errorf("%s: after the restart ListAndWatch lists %v, want %v", name, got, want)
		}
	}
	if got := k.registered(); got[names[0]] != 2 {
		t.Errorf("registrations after one kubelet restart: %v, want 2 each", got)
	}
}

func TestUpdateStreamsNewDevices(t *testing.T) {
	p, k, dir := startPlugin(t)
	s := stack(t, fakegpu.MIGStrategyNone, map[string]string{
		"ts-2":         timeSlicing(2, false, false),
		"ts-4":         timeSlicing(4, false, false),
		"ts-4-renamed": timeSlicing(4, true, false),
	})
	node := gpuNode("l4", 1)
	update(t, p, s, map[string]string{fakegpu.LabelDevicePluginConfig: "ts-2"}, node)
	k.waitRegistered(t, 1, fakegpu.ResourceGPU)
	stream := watchDevices(t, pluginClient(t, dir, fakegpu.ResourceGPU))
	if got, want := stream.next(t, "the first device list"), fakegpu.DeviceIDs(testNode, fakegpu.ResourceGPU, 2, 2); !slices.Equal(got, want) {
		t.Fatalf("ts-2: ListAndWatch lists %v, want %v", got, want)
	}

	// Same resource, more replicas: the open stream gets the new list.
	update(t, p, s, map[string]string{fakegpu.LabelDevicePluginConfig: "ts-4"}, node)
	if got, want := stream.next(t, "the device list after switching to ts-4"), fakegpu.DeviceIDs(testNode, fakegpu.ResourceGPU, 4, 4); !slices.Equal(got, want) {
		t.Errorf("ts-4: ListAndWatch lists %v, want %v", got, want)
	}

	// Renamed: nvidia.com/gpu goes (its stream ends, its socket is
	// removed), nvidia.com/gpu.shared registers.
	plan := update(t, p, s, map[string]string{fakegpu.LabelDevicePluginConfig: "ts-4-renamed"}, node)
	if got := plan.ResourceNames(); !slices.Equal(got, []string{"nvidia.com/gpu.shared"}) {
		t.Errorf("plan serves %v, want [nvidia.com/gpu.shared]", got)
	}
	k.waitRegistered(t, 1, "nvidia.com/gpu.shared")
	stream.waitEnded(t, "the nvidia.com/gpu stream")
	if _, err := os.Stat(filepath.Join(dir, SocketName(fakegpu.ResourceGPU))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket of the vanished nvidia.com/gpu: stat err = %v, want it removed", err)
	}

	// A config that does not exist: the plugin is down and serves nothing.
	plan = update(t, p, s, map[string]string{fakegpu.LabelDevicePluginConfig: "missing"}, node)
	if plan.Down == "" || len(plan.Resources) != 0 {
		t.Errorf("config key missing: plan = %+v, want down with nothing served", plan)
	}
	if _, err := os.Stat(filepath.Join(dir, SocketName("nvidia.com/gpu.shared"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket of nvidia.com/gpu.shared with the plugin down: stat err = %v, want it removed", err)
	}
}

func TestStopRemovesSockets(t *testing.T) {
	p, k, dir := startPlugin(t)
	update(t, p, stack(t, fakegpu.MIGStrategyNone, nil), nil, gpuNode("l4", 1))
	k.waitRegistered(t, 1, fakegpu.ResourceGPU)
	p.Stop()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != kubeletSocketName {
			t.Errorf("after Stop %s is left in the device-plugin directory", e.Name())
		}
	}
	if _, err := p.Update(nil, nil, nil); err == nil {
		t.Error("Update after Stop succeeded, want an error")
	}
}

// TestPlanFollowsTheMIGManager: the plugin serves the MIG layout the MIG
// manager applied, and nothing while it applies another.
func TestPlanFollowsTheMIGManager(t *testing.T) {
	s := stack(t, fakegpu.MIGStrategyMixed, nil)
	node := gpuNode("a100-40gb", 1)
	want1g := []string{"nvidia.com/mig-1g.5gb"}
	want := func(what string, plan Plan, names []string) {
		t.Helper()
		if got := plan.ResourceNames(); !slices.Equal(got, names) {
			t.Errorf("%s: serves %v (down: %q), want %v", what, got, plan.Down, names)
		}
	}

	node[fakegpu.AnnotationMIGApplied] = "all-1g.5gb"
	want("layout applied", PlanFor(testNode, s, map[string]string{fakegpu.LabelMIGConfig: "all-1g.5gb"}, node), want1g)

	pending := PlanFor(testNode, s, map[string]string{fakegpu.LabelMIGConfig: "all-balanced"}, node)
	want("change pending", pending, nil)
	if !strings.Contains(pending.Down, "all-balanced") {
		t.Errorf("change pending: Down = %q, want it to name the layout being applied", pending.Down)
	}
	paused := map[string]string{fakegpu.LabelMIGConfig: "all-1g.5gb", fakegpu.LabelDeployDevicePlugin: fakegpu.PausedForMIGChange}
	want("paused by the MIG manager", PlanFor(testNode, s, paused, node), nil)

	node[fakegpu.AnnotationMIGApplied] = "all-balanced"
	want("new layout applied", PlanFor(testNode, s, map[string]string{fakegpu.LabelMIGConfig: "all-balanced"}, node),
		[]string{"nvidia.com/mig-1g.5gb", "nvidia.com/mig-2g.10gb", "nvidia.com/mig-3g.20gb"})

	// A fresh node: its GPUs have MIG off, which all-disabled asks for.
	want("fresh node, all-disabled", PlanFor(testNode, s, nil, gpuNode("a100-40gb", 1)), []string{"nvidia.com/gpu"})
}

func TestPlanNotAGPUNode(t *testing.T) {
	plan := PlanFor(testNode, stack(t, fakegpu.MIGStrategyNone, nil), nil, nil)
	if plan.Down == "" || len(plan.Resources) != 0 {
		t.Errorf("node without inventory: plan = %+v, want down", plan)
	}
	plan = PlanFor(testNode, nil, nil, gpuNode("l4", 1))
	if !strings.Contains(plan.Down, "ClusterPolicy") {
		t.Errorf("no GPU Operator config: Down = %q, want it to name the ClusterPolicy", plan.Down)
	}
}

// Allocate answers as the real plugin does under each list strategy
// (access §3.2): the runtime reads what the strategy puts there.
func TestAllocateFollowsTheListStrategy(t *testing.T) {
	ids := []string{"GPU-a::0", "GPU-a::1", "GPU-b::0"}
	for _, tc := range []struct {
		strategy   string
		env        string
		mounts     []string
		annotation bool
	}{
		{"envvar", "GPU-a,GPU-b", nil, false},
		{"volume-mounts", fakegpu.VolumeMountDir, []string{fakegpu.VolumeMountDir + "/GPU-a", fakegpu.VolumeMountDir + "/GPU-b"}, false},
		{"cdi-annotations", "", nil, true},
	} {
		policy := &fakegpu.ClusterPolicySettings{DevicePluginEnv: map[string]string{"DEVICE_LIST_STRATEGY": tc.strategy}}
		got := answer(Resource{Policy: policy, GPUs: []string{"GPU-a", "GPU-b"}}, ids)
		if got.Envs[EnvVisibleDevices] != tc.env {
			t.Errorf("%s: %s = %q, want %q", tc.strategy, EnvVisibleDevices, got.Envs[EnvVisibleDevices], tc.env)
		}
		if got.Envs[EnvDeviceIDs] != strings.Join(ids, ",") {
			t.Errorf("%s: %s = %q, want the IDs Allocate was given", tc.strategy, EnvDeviceIDs, got.Envs[EnvDeviceIDs])
		}
		var mounts []string
		for _, m := range got.Mounts {
			if m.HostPath != "/dev/null" || !m.ReadOnly {
				t.Errorf("%s: mount %+v, want /dev/null read-only", tc.strategy, m)
			}
			mounts = append(mounts, m.ContainerPath)
		}
		if strings.Join(mounts, " ") != strings.Join(tc.mounts, " ") {
			t.Errorf("%s: mounts %q, want %q", tc.strategy, mounts, tc.mounts)
		}
		if (len(got.Annotations) > 0) != tc.annotation {
			t.Errorf("%s: annotations %v", tc.strategy, got.Annotations)
		}
	}
}
