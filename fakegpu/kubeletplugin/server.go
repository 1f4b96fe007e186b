// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package kubeletplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpupool/gpupool/fakegpu"
)

// EnvVisibleDevices is the variable the NVIDIA container runtime reads to
// pick the GPUs a container sees (the plugin's envvar strategy).
const EnvVisibleDevices = "NVIDIA_VISIBLE_DEVICES"

// EnvDeviceIDs is the fake plugin's own variable, not NVIDIA's: the
// device IDs Allocate was given, which the kind-only checks read from
// their probe containers whatever the list strategy hides them in.
const EnvDeviceIDs = "FAKEGPU_DEVICE_IDS"

// SocketName is the socket the plugin serves resource on, in the kubelet's
// device-plugin directory: one per resource, as the real plugin does, with
// a fakegpu- prefix so it never takes the real plugin's nvidia-*.sock.
func SocketName(resource string) string {
	return "fakegpu-" + strings.ReplaceAll(strings.TrimPrefix(resource, fakegpu.LabelPrefix), "/", "-") + ".sock"
}

// resourceServer is the device plugin for one resource: a gRPC server on
// its own socket, registered with the kubelet.
type resourceServer struct {
	resource string
	dir      string
	log      func(format string, args ...any)
	retry    time.Duration

	mu  sync.Mutex
	res Resource
	// changed is closed (and replaced) when res changes, waking every
	// ListAndWatch stream.
	changed chan struct{}

	// The serving generation; replaced by each start.
	grpc       *grpc.Server
	serveDone  chan struct{}
	stopRegist context.CancelFunc
	regDone    chan struct{}
}

func newResourceServer(resource, dir string, res Resource, retry time.Duration, log func(string, ...any)) *resourceServer {
	return &resourceServer{resource: resource, dir: dir, res: res, retry: retry, log: log, changed: make(chan struct{})}
}

func (s *resourceServer) socket() string { return filepath.Join(s.dir, SocketName(s.resource)) }

// set replaces the devices served; ListAndWatch streams the change.
func (s *resourceServer) set(res Resource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Equal(s.res.DeviceIDs, res.DeviceIDs) && slices.Equal(s.res.Unhealthy, res.Unhealthy) && s.res.Replicas == res.Replicas && s.res.FailRequestsGreaterThanOne == res.FailRequestsGreaterThanOne {
		return
	}
	s.res = res
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *resourceServer) current() (Resource, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.res, s.changed
}

// start listens on the resource's socket and serves, then registers with
// the kubelet in the background (retrying until it succeeds or stop): the
// kubelet calls back on the socket as soon as it accepts a registration.
func (s *resourceServer) start(ctx context.Context) error {
	path := s.socket()
	// A socket left by an earlier run would make the listen fail.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: removing stale socket: %w", s.resource, err)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("%s: %w", s.resource, err)
	}
	s.grpc = grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(s.grpc, &devicePlugin{s: s})
	s.serveDone = make(chan struct{})
	go func(srv *grpc.Server, done chan struct{}) {
		defer close(done)
		if err := srv.Serve(lis); err != nil {
			s.log("fakegpu device plugin: %s: serving on %s stopped: %v", s.resource, path, err)
		}
	}(s.grpc, s.serveDone)

	regCtx, cancel := context.WithCancel(ctx)
	s.stopRegist, s.regDone = cancel, make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		s.registerUntilDone(regCtx)
	}(s.regDone)
	return nil
}

// stop ends the serving generation (ListAndWatch streams close, which the
// kubelet takes as the plugin gone) and removes the socket.
func (s *resourceServer) stop() {
	if s.grpc == nil {
		return
	}
	s.stopRegist()
	<-s.regDone
	s.grpc.Stop()
	<-s.serveDone
	s.grpc = nil
	// Close unlinks the socket; this covers a kubelet that replaced it.
	if err := os.Remove(s.socket()); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log("fakegpu device plugin: %s: removing socket: %v", s.resource, err)
	}
}

// registerUntilDone registers the resource with the kubelet, retrying:
// the kubelet may not be up yet, or be restarting.
func (s *resourceServer) registerUntilDone(ctx context.Context) {
	for attempt := 1; ; attempt++ {
		err := s.register(ctx)
		if err == nil {
			s.log("fakegpu device plugin: registered %s with the kubelet (endpoint %s)", s.resource, SocketName(s.resource))
			return
		}
		if ctx.Err() != nil {
			return
		}
		if attempt == 1 {
			s.log("fakegpu device plugin: registering %s with the kubelet failed, retrying every %s: %v", s.resource, s.retry, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.retry):
		}
	}
}

func (s *resourceServer) register(ctx context.Context) error {
	kubelet := filepath.Join(s.dir, kubeletSocketName)
	conn, err := grpc.NewClient("unix://"+kubelet, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", kubelet, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     SocketName(s.resource),
		ResourceName: s.resource,
		Options:      pluginOptions(),
	})
	if err != nil {
		return fmt.Errorf("Register at %s: %w", kubelet, err)
	}
	return nil
}

func pluginOptions() *pluginapi.DevicePluginOptions {
	return &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true}
}

// devicePlugin is the kubelet-facing gRPC service of one resourceServer.
type devicePlugin struct {
	pluginapi.UnimplementedDevicePluginServer
	s *resourceServer
}

func (p *devicePlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return pluginOptions(), nil
}

// ListAndWatch sends the device list, then a new one whenever it changes.
// A device is unhealthy when an injected Xid marked it (fakegpu.AnnotationXid):
// the kubelet then keeps it in capacity and drops it from allocatable.
func (p *devicePlugin) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	for {
		res, changed := p.s.current()
		devices := make([]*pluginapi.Device, len(res.DeviceIDs))
		for i, id := range res.DeviceIDs {
			health := pluginapi.Healthy
			if slices.Contains(res.Unhealthy, id) {
				health = pluginapi.Unhealthy
			}
			devices[i] = &pluginapi.Device{ID: id, Health: health}
		}
		if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: devices}); err != nil {
			return fmt.Errorf("%s: sending the device list: %w", p.s.resource, err)
		}
		select {
		case <-changed:
		case <-stream.Context().Done():
			return nil
		}
	}
}

// GetPreferredAllocation prefers the devices the kubelet must include,
// then the available ones in list order: the choice the simulated kubelet
// makes (the first free IDs).
func (p *devicePlugin) GetPreferredAllocation(_ context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	res, _ := p.s.current()
	out := &pluginapi.PreferredAllocationResponse{}
	for _, cr := range req.ContainerRequests {
		chosen := slices.Clone(cr.MustIncludeDeviceIDs)
		available := map[string]bool{}
		for _, id := range cr.AvailableDeviceIDs {
			available[id] = true
		}
		for _, id := range cr.MustIncludeDeviceIDs {
			delete(available, id)
		}
		for _, id := range res.DeviceIDs {
			if len(chosen) >= int(cr.AllocationSize) {
				break
			}
			if available[id] {
				chosen = append(chosen, id)
			}
		}
		out.ContainerResponses = append(out.ContainerResponses, &pluginapi.ContainerPreferredAllocationResponse{DeviceIDs: chosen})
	}
	return out, nil
}

// Allocate gives each container the devices the kubelet picked as the
// real plugin does under the ClusterPolicy's strategies (the variable,
// /dev/null mounts, CDI names; access §3.2), and records the IDs in
// EnvDeviceIDs. A plain error reaches the kubelet as gRPC code
// Unknown, and the kubelet fails the pod with UnexpectedAdmissionError.
func (p *devicePlugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	res, _ := p.s.current()
	known := map[string]bool{}
	for _, id := range res.DeviceIDs {
		known[id] = true
	}
	out := &pluginapi.AllocateResponse{}
	for _, cr := range req.ContainerRequests {
		ids := cr.DevicesIds
		for _, id := range ids {
			if !known[id] {
				return nil, fmt.Errorf("invalid allocation request for %q: unknown device: %s", p.s.resource, id)
			}
		}
		if res.FailRequestsGreaterThanOne && len(ids) > 1 {
			return nil, fakegpu.SharedRequestTooLarge(p.s.resource, int64(len(ids)))
		}
		out.ContainerResponses = append(out.ContainerResponses, answer(res, ids))
	}
	return out, nil
}

// answer is one container's Allocate response for ids.
func answer(res Resource, ids []string) *pluginapi.ContainerAllocateResponse {
	out := &pluginapi.ContainerAllocateResponse{Envs: map[string]string{EnvDeviceIDs: strings.Join(ids, ",")}}
	if res.Policy == nil {
		out.Envs[EnvVisibleDevices] = strings.Join(ids, ",")
		return out
	}
	a := res.Policy.Allocate(ids, res.GPUs)
	for _, e := range a.Env {
		out.Envs[e.Name] = e.Value
	}
	for _, m := range a.Mounts {
		out.Mounts = append(out.Mounts, &pluginapi.Mount{HostPath: m.Source, ContainerPath: m.Destination, ReadOnly: true})
	}
	for _, d := range a.CDI {
		out.CdiDevices = append(out.CdiDevices, &pluginapi.CDIDevice{Name: d})
	}
	if len(a.CDIAnnotations) > 0 {
		// One annotation naming every device (access §3.2); the prefix is
		// CDI_ANNOTATION_PREFIX, cdi.k8s.io/ unless the Operator sets it
		// (access §4).
		prefix := res.Policy.DevicePluginEnv["CDI_ANNOTATION_PREFIX"]
		if prefix == "" {
			prefix = "cdi.k8s.io/"
		}
		first, _, _ := strings.Cut(ids[0], "::")
		out.Annotations = map[string]string{prefix + "nvidia-device-plugin_" + first: strings.Join(a.CDIAnnotations, ",")}
	}
	return out
}

func (p *devicePlugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}
