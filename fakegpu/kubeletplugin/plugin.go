// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package kubeletplugin serves the fake GPUs of the fakegpu model to a real
// kubelet, through the kubelet device-plugin API (v1beta1). What a node
// advertises comes from the same model as the simulated KWOK nodes
// (fakegpu.Stack applied to the node's labels and inventory annotations),
// and the device IDs are the ones the simulated kubelet allocates, so a
// suite sees the same resources and IDs on a kind node as on a KWOK node.
//
// Like the real NVIDIA plugin it runs one gRPC server per resource, each
// on its own unix socket in the kubelet's device-plugin directory, and
// registers each with the kubelet; when the kubelet restarts (it wipes the
// directory and recreates kubelet.sock) the servers restart and register
// again.
package kubeletplugin

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpupool/gpupool/fakegpu"
)

const kubeletSocketName = "kubelet.sock"

// Options configure a Plugin.
type Options struct {
	// NodeName is the node the plugin runs on; device IDs derive from it.
	NodeName string
	// Dir is the kubelet's device-plugin directory, holding kubelet.sock
	// (default /var/lib/kubelet/device-plugins).
	Dir string
	// RegisterRetry is the wait between attempts to register with a
	// kubelet that is not answering (default 2s).
	RegisterRetry time.Duration
	// Log receives one line per notable event (nil: silent).
	Log func(format string, args ...any)
}

// Plugin is the device plugin of one node: a server per served resource.
type Plugin struct {
	opt Options

	mu      sync.Mutex
	ctx     context.Context // nil until Start
	cancel  context.CancelFunc
	servers map[string]*resourceServer
	watcher *fsnotify.Watcher
	watched sync.WaitGroup
	stopped bool
}

// New returns a plugin that serves nothing until Start and Update.
func New(opt Options) (*Plugin, error) {
	if opt.NodeName == "" {
		return nil, errors.New("kubeletplugin: NodeName is required (device IDs derive from it)")
	}
	if opt.Dir == "" {
		opt.Dir = pluginapi.DevicePluginPath
	}
	opt.Dir = filepath.Clean(opt.Dir)
	if opt.RegisterRetry <= 0 {
		opt.RegisterRetry = 2 * time.Second
	}
	if opt.Log == nil {
		opt.Log = func(string, ...any) {}
	}
	return &Plugin{opt: opt, servers: map[string]*resourceServer{}}, nil
}

// Start watches the device-plugin directory for a kubelet restart, until
// ctx ends. The servers Update starts run until Stop, which removes their
// sockets: call it when done, as ctx ending alone leaves them.
func (p *Plugin) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx != nil {
		return errors.New("kubeletplugin: already started")
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("kubeletplugin: watching %s: %w", p.opt.Dir, err)
	}
	if err := w.Add(p.opt.Dir); err != nil {
		w.Close()
		return fmt.Errorf("kubeletplugin: watching the kubelet's device-plugin directory %s: %w", p.opt.Dir, err)
	}
	p.ctx, p.cancel = context.WithCancel(ctx)
	p.watcher = w
	p.watched.Add(1)
	go func() {
		defer p.watched.Done()
		p.watchKubelet(p.ctx, w)
	}()
	return nil
}

// watchKubelet restarts every server when kubelet.sock is created: the
// kubelet has restarted, removed the plugins' sockets and forgotten
// their registrations.
func (p *Plugin) watchKubelet(ctx context.Context, w *fsnotify.Watcher) {
	kubeletSocket := filepath.Join(p.opt.Dir, kubeletSocketName)
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if ev.Name == kubeletSocket && ev.Has(fsnotify.Create) {
				p.opt.Log("fakegpu device plugin: %s created (kubelet restarted): restarting the plugin servers", kubeletSocket)
				p.restartAll()
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			p.opt.Log("fakegpu device plugin: watching %s: %v", p.opt.Dir, err)
		}
	}
}

func (p *Plugin) restartAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	for _, name := range sortedNames(p.servers) {
		s := p.servers[name]
		s.stop()
		if err := s.start(p.ctx); err != nil {
			// Dropped: the next Update starts it again.
			p.opt.Log("fakegpu device plugin: restarting %s: %v", name, err)
			delete(p.servers, name)
		}
	}
}

// Update makes the plugin serve what the stack (nil: no GPU Operator
// config) publishes for this node, given its labels and annotations: a
// resource that appears gets a server and registers, one that vanishes is
// stopped (the kubelet then drops its allocatable to 0), and a changed
// device list is streamed to the kubelet through ListAndWatch. It returns
// what is now served; the error names the servers that failed to start.
func (p *Plugin) Update(stack *fakegpu.Stack, nodeLabels, annotations map[string]string) (Plan, error) {
	plan := PlanFor(p.opt.NodeName, stack, nodeLabels, annotations)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx == nil || p.stopped {
		return plan, errors.New("kubeletplugin: Update before Start or after Stop")
	}
	for _, name := range sortedNames(p.servers) {
		if _, keep := plan.Resources[name]; !keep {
			p.servers[name].stop()
			delete(p.servers, name)
			p.opt.Log("fakegpu device plugin: stopped serving %s", name)
		}
	}
	var errs []error
	for _, name := range plan.ResourceNames() {
		res := plan.Resources[name]
		if s, ok := p.servers[name]; ok {
			before, _ := s.current()
			s.set(res)
			if len(before.DeviceIDs) != len(res.DeviceIDs) || before.Replicas != res.Replicas {
				p.opt.Log("fakegpu device plugin: %s now lists %d devices (%s)", name, len(res.DeviceIDs), describe(res))
			}
			continue
		}
		s := newResourceServer(name, p.opt.Dir, res, p.opt.RegisterRetry, p.opt.Log)
		p.opt.Log("fakegpu device plugin: serving %s on %s: %d devices (%s)", name, s.socket(), len(res.DeviceIDs), describe(res))
		if err := s.start(p.ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		p.servers[name] = s
	}
	return plan, errors.Join(errs...)
}

// Stop stops every server, removes the sockets the plugin created and
// ends its goroutines. It is safe to call more than once.
func (p *Plugin) Stop() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	for _, name := range sortedNames(p.servers) {
		p.servers[name].stop()
	}
	p.servers = map[string]*resourceServer{}
	if p.cancel != nil {
		p.cancel()
	}
	w := p.watcher
	p.mu.Unlock()
	// Outside the lock: the watch loop may be waiting for it in restartAll.
	p.watched.Wait()
	if w != nil {
		w.Close()
	}
}

func describe(r Resource) string {
	parts := []string{fmt.Sprintf("replicas %d", r.Replicas)}
	if r.FailRequestsGreaterThanOne {
		parts = append(parts, "failRequestsGreaterThanOne")
	}
	return strings.Join(parts, ", ")
}

func sortedNames(m map[string]*resourceServer) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
