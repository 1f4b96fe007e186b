// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpupool/gpupool/fakegpu"
	"github.com/gpupool/gpupool/fakegpu/kubeletplugin"
	"github.com/gpupool/gpupool/fakegpu/nodestack"
)

// registrations is a fake kubelet's Registration service: it records the
// resources that registered.
type registrations struct {
	pluginapi.UnimplementedRegistrationServer
	mu    sync.Mutex
	names map[string]int
}

func (r *registrations) Register(_ context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names[req.ResourceName]++
	return &pluginapi.Empty{}, nil
}

func (r *registrations) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.names[name]
}

func (r *registrations) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprint(r.names)
}

func waitFor(t *testing.T, what string, cond func() bool, last func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (%s)", what, last())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeFollowsTheCluster runs the binary's loop against fake API
// clients and a fake kubelet: it serves what the ClusterPolicy, its
// ConfigMap and the node's labels select, and follows a label change.
func TestServeFollowsTheCluster(t *testing.T) {
	// Short: a unix socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "fdp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	lis, err := net.Listen("unix", filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		t.Fatal(err)
	}
	kubelet := &registrations{names: map[string]int{}}
	srv := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(srv, kubelet)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        "kind-worker",
		Annotations: map[string]string{fakegpu.AnnotationSKU: "l4", fakegpu.AnnotationGPUs: "2"},
	}}
	configMap := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "dp-config", Namespace: "gpu-operator"},
		Data: map[string]string{
			"exclusive": "version: v1\n",
			"ts-4":      "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n",
		},
	}
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
		"metadata": map[string]any{"name": "cluster-policy"},
		"spec": map[string]any{
			"mig":          map[string]any{"strategy": "none"},
			"devicePlugin": map[string]any{"config": map[string]any{"name": "dp-config", "default": "exclusive"}},
		},
	}}
	cs := kubefake.NewClientset(node, configMap)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{nodestack.ClusterPolicies: "ClusterPolicyList"}, policy)

	ctx, cancel := context.WithCancel(context.Background())
	var serveErr error
	done := make(chan struct{}) // closed when serve has returned serveErr
	go func() {
		defer close(done)
		serveErr = serve(ctx, options{nodeName: node.Name, kubeletDir: dir, namespace: "gpu-operator"}, cs, dyn, nil)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	waitFor(t, "nvidia.com/gpu to register", func() bool { return kubelet.count("nvidia.com/gpu") > 0 }, kubelet.String)

	node.Labels = map[string]string{fakegpu.LabelDevicePluginConfig: "ts-4"}
	if _, err := cs.CoreV1().Nodes().Update(context.Background(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "nvidia.com/gpu.shared to register after the node's config label changed", func() bool { return kubelet.count("nvidia.com/gpu.shared") > 0 }, kubelet.String)
	gone := filepath.Join(dir, kubeletplugin.SocketName("nvidia.com/gpu"))
	waitFor(t, "the nvidia.com/gpu socket to go", func() bool {
		_, err := os.Stat(gone)
		return os.IsNotExist(err)
	}, func() string { return gone + " still exists" })

	cancel()
	select {
	case <-done:
		if serveErr != nil {
			t.Fatalf("serve after cancel: %v", serveErr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for serve to return after its context ended")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "kubelet.sock" {
			t.Errorf("after stopping, %s is left in the device-plugin directory", e.Name())
		}
	}
}
