// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/gpupool/gpupool/fakegpu"
	"github.com/gpupool/gpupool/fakegpu/nodestack"
)

func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (last seen: %s)", what, seen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeAnswersTheKubelet runs the binary's loop against fake API
// clients and calls it as the kubelet does, over its gRPC socket: it
// publishes the node's devices through upstream's helper, prepares a claim
// allocated from them with the driver's CDI ids, unprepares it, and
// withdraws the devices when the node leaves its DRA pool.
func TestServeAnswersTheKubelet(t *testing.T) {
	// Short: a unix socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "fdra")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kind-worker", UID: "node-uid",
		Annotations: map[string]string{fakegpu.AnnotationSKU: "h100-80gb", fakegpu.AnnotationGPUs: "2", fakegpu.AnnotationDRA: fakegpu.DRAWholeGPU}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "p", UID: "pod-uid"}}
	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "p-gpu", UID: "0b6c3f2e-8d41-4c1e-9a57-2f1d3e4c5b6a"},
		Status: resourcev1.ResourceClaimStatus{
			Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
				{Request: "gpu", Driver: fakegpu.DRADriver, Pool: node.Name, Device: "gpu-1"}}}},
			ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: "pod-uid"}},
		}}
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": map[string]any{"name": "cluster-policy"},
		"spec": map[string]any{"mig": map[string]any{"strategy": "none"}},
	}}
	cs := kubefake.NewClientset(node, pod, claim)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{nodestack.ClusterPolicies: "ClusterPolicyList"}, policy)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	o := options{nodeName: node.Name, namespace: "gpu-operator", pluginsDir: filepath.Join(dir, "p"), registryDir: filepath.Join(dir, "r"), cdiDir: filepath.Join(dir, "cdi")}
	if err := os.MkdirAll(o.registryDir, 0o755); err != nil {
		t.Fatal(err)
	}
	go func() { done <- serve(ctx, o, cs, dyn) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	devices := func() (bool, string) {
		list, err := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		n := 0
		for _, s := range list.Items {
			n += len(s.Spec.Devices)
		}
		return n == 2, fmt.Sprintf("%d slices, %d devices", len(list.Items), n)
	}
	waitFor(t, "the node's 2 GPUs to be published", devices)

	sock := filepath.Join(o.pluginsDir, fakegpu.DRADriver, "dra.sock")
	waitFor(t, "the plugin's socket", func() (bool, string) { _, err := os.Stat(sock); return err == nil, sock })
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	kubelet := drapb.NewDRAPluginClient(conn)
	ref := &drapb.Claim{Namespace: claim.Namespace, Name: claim.Name, Uid: string(claim.UID)}
	resp, err := kubelet.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{ref}})
	if err != nil {
		t.Fatal(err)
	}
	got := resp.Claims[string(claim.UID)]
	if got == nil || got.Error != "" || len(got.Devices) != 1 {
		t.Fatalf("NodePrepareResources answered %v, want one device", resp.Claims)
	}
	if want := fakegpu.CDIDeviceID(string(claim.UID), "gpu-1"); got.Devices[0].DeviceName != "gpu-1" || got.Devices[0].CdiDeviceIds[0] != want {
		t.Errorf("prepared %v, want gpu-1 with CDI id %s (dra-facts §4)", got.Devices[0], want)
	}
	p, err := cs.CoreV1().Pods("team-a").Get(ctx, "p", metav1.GetOptions{})
	if err != nil || p.Annotations[fakegpu.AnnotationCDIDevices] != fakegpu.CDIDeviceID(string(claim.UID), "gpu-1") {
		t.Errorf("pod p records CDI devices %q (%v), want the prepared one", p.Annotations[fakegpu.AnnotationCDIDevices], err)
	}
	un, err := kubelet.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{ref}})
	if err != nil || un.Claims[string(claim.UID)].GetError() != "" {
		t.Fatalf("NodeUnprepareResources: %v, %v", un, err)
	}

	// The node leaves its DRA pool: the helper removes its slices.
	delete(node.Annotations, fakegpu.AnnotationDRA)
	if _, err := cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the node's slices to go", func() (bool, string) {
		list, err := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 0, fmt.Sprintf("%d slices", len(list.Items))
	})
}
