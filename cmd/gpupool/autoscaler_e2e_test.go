// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpupool/gpupool/e2e/autoscaler"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/wait"
)

// A real Karpenter, run beside the embedded cluster in a network namespace
// of its own, answers a Pending GPU pod with a KWOK node of the NodePool
// whose instance type offers the GPU, labelled and tainted as the NodePool
// says; stopped, it leaves no process behind. (#28's first step: the
// autoscaler runs here; the pools, the stack's take-over and the checks
// come next.)
func TestKarpenterScalesAPendingGPUPod(t *testing.T) {
	state := t.TempDir()
	env := append(os.Environ(), "GPUPOOL_STATE="+state)
	kubeconfig, stop := upCluster(t, gpupoolBin, repoRoot, env, "--candidate", filepath.Join(repoRoot, "manifests", "candidates", "broken-no-admission-policy"))
	defer stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	cs := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Karpenter's CRDs, as its release ships them (embedded).
	crds, err := autoscaler.CRDs()
	require.NoError(t, err)
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, crd := range crds {
		create(ctx, t, dyn, crdGVR, "", crd.Object)
	}
	for _, name := range []string{"nodepools.karpenter.sh", "nodeclaims.karpenter.sh", "kwoknodeclasses.karpenter.kwok.sh"} {
		require.NoError(t, wait.For(ctx, "CRD "+name+" to be established", time.Minute, func(ctx context.Context) (bool, string, error) {
			u, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
					return true, "", nil
				}
			}
			return false, "not established", nil
		}))
	}

	h100, err := autoscaler.InstanceTypeFor(fleet.Pool{Name: "gpu-h100-autoscaled", SKU: "h100-80gb", GPUsPerNode: 8})
	require.NoError(t, err)
	k, err := autoscaler.Start(autoscaler.Options{Self: gpupoolBin, Kubeconfig: kubeconfig, Server: cfg.Host, InstanceTypes: []autoscaler.InstanceType{h100}})
	require.NoError(t, err)
	defer func() {
		require.NoError(t, k.Stop(context.Background()))
		out, _ := exec.Command("pgrep", "-f", autoscaler.Binary()).Output()
		require.Empty(t, strings.TrimSpace(string(out)), "no Karpenter process outlives Stop")
	}()

	nodeClass := map[string]any{"apiVersion": "karpenter.kwok.sh/v1alpha1", "kind": "KWOKNodeClass", "metadata": map[string]any{"name": "default"}}
	create(ctx, t, dyn, schema.GroupVersionResource{Group: "karpenter.kwok.sh", Version: "v1alpha1", Resource: "kwoknodeclasses"}, "", nodeClass)
	nodePool := map[string]any{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": map[string]any{"name": "gpu-h100-autoscaled"},
		"spec": map[string]any{
			"limits": map[string]any{"nvidia.com/gpu": "16"},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"sku": "h100", "gpupool.dev/pool": "gpu-h100-autoscaled"}},
				"spec": map[string]any{
					"nodeClassRef": map[string]any{"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"},
					"taints":       []any{map[string]any{"key": "sku", "value": "h100", "effect": "NoSchedule"}},
					"requirements": []any{map[string]any{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": []any{h100.Name}}},
				},
			},
		}}
	create(ctx, t, dyn, schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}, "", nodePool)

	// A GPU pod the rest of the candidate admits: pinned image, its own
	// ServiceAccount, RuntimeClass nvidia.
	_, err = cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "gpupool-workload"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	nvidia := "nvidia"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "wants-an-h100", Namespace: "default"},
		Spec: corev1.PodSpec{
			RuntimeClassName:   &nvidia,
			ServiceAccountName: "gpupool-workload",
			NodeSelector:       map[string]string{"sku": "h100"},
			Tolerations:        []corev1.Toleration{{Key: "sku", Operator: corev1.TolerationOpEqual, Value: "h100", Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}},
		},
	}
	_, err = cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)

	// Registered: the NodePool's taint synced and Karpenter's
	// unregistered taint gone, in one write (autoscaler-facts §4.5).
	var made *corev1.Node
	err = wait.For(ctx, "Karpenter to make and register a node of NodePool gpu-h100-autoscaled for the Pending pod", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		if err := k.Err(); err != nil {
			return false, "", err
		}
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=gpu-h100-autoscaled"})
		if err != nil {
			return false, "", err
		}
		if len(nodes.Items) == 0 {
			return false, "no node of the pool yet", nil
		}
		made = &nodes.Items[0]
		return made.Labels["karpenter.sh/registered"] == "true", fmt.Sprintf("node %s, taints %v", made.Name, made.Spec.Taints), nil
	})
	require.NoError(t, err, "karpenter log: %s", k.Log())
	require.Equal(t, "h100", made.Labels["sku"], "the NodePool's labels")
	require.Equal(t, h100.Name, made.Labels[corev1.LabelInstanceTypeStable])
	var taints []string
	for _, tn := range made.Spec.Taints {
		taints = append(taints, tn.Key+"="+tn.Value)
	}
	require.Contains(t, taints, "sku=h100", "the NodePool's taint")
	require.NotContains(t, taints, "karpenter.sh/unregistered=", "registered")
	t.Logf("Karpenter made node %s (%v)", made.Name, made.Status.Allocatable)

	// The nodes go while Karpenter runs: its finalizer needs it
	// (autoscaler-facts §4.6).
	np := schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
	require.NoError(t, dyn.Resource(np).Delete(ctx, "gpu-h100-autoscaled", metav1.DeleteOptions{}))
	require.NoError(t, cs.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{}))
	err = wait.For(ctx, "the node Karpenter made to be gone with its NodePool", time.Minute, func(ctx context.Context) (bool, string, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool"})
		if err != nil {
			return false, "", err
		}
		var left []string
		for _, n := range nodes.Items {
			left = append(left, n.Name)
		}
		return len(left) == 0, strings.Join(left, ", "), nil
	})
	require.NoError(t, err, "karpenter log: %s", k.Log())
}

func create(ctx context.Context, t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string, obj map[string]any) {
	t.Helper()
	_, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	require.NoError(t, err)
}
