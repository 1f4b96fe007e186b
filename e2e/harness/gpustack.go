// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"

	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/incluster"
	"github.com/gpupool/gpupool/e2e/upstream"
	"github.com/gpupool/gpupool/fakegpu"
	"github.com/gpupool/gpupool/fakegpu/controller"
)

// GPUStackName names the in-cluster fakegpu controller's Deployment, its
// service account and RBAC objects.
const GPUStackName = "gpupool-fakegpu-controller"

const gpuStackNamespace = "kube-system"

// installGPUStackInCluster runs cmd/fakegpu-controller in the cluster (on a
// real node: KWOK nodes run nothing), with the GPU Operator's default
// mig-parted config mounted, and waits until it is available.
func (r *Run) installGPUStackInCluster(ctx context.Context, image string) error {
	migDefault, err := upstream.GPUOperatorFile(upstream.DefaultMIGPartedConfig)
	if err != nil {
		return err
	}
	objs, err := incluster.Render(incluster.FakeGPUController, incluster.Params{
		Name: GPUStackName, Namespace: gpuStackNamespace, Image: image, RealNodes: r.Cluster.RealNodes,
		OperatorNamespace: r.operatorNamespace(), NodeSelector: ownNodes, DefaultMIGConfig: string(migDefault),
	})
	if err != nil {
		return err
	}
	if err := cluster.CreateIfMissing(ctx, r.Client, objs...); err != nil {
		return fmt.Errorf("installing the fakegpu controller: %w", err)
	}
	r.gpuStackInCluster = true
	return cluster.WaitDeploymentAvailable(ctx, r.Client, gpuStackNamespace, GPUStackName, 2*time.Minute)
}

// gpuStackSyncedInCluster tells, from outside, whether the in-cluster
// controller has reconciled every GPU node against the GPU Operator config
// the cluster holds now: each node carries the observed-config value of
// the live objects' versions, and no MIG reconfiguration is pending.
func (r *Run) gpuStackSyncedInCluster(ctx context.Context) (bool, string, error) {
	dyn, err := dynamic.NewForConfig(r.Cluster.REST)
	if err != nil {
		return false, "", err
	}
	policies, configMaps := map[string]string{}, map[string]string{}
	cps, err := dyn.Resource(controller.ClusterPolicies).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, "", err
	}
	for _, cp := range cps.Items {
		policies[cp.GetName()] = cp.GetResourceVersion()
	}
	cms, err := r.Client.CoreV1().ConfigMaps(r.operatorNamespace()).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, "", err
	}
	for _, cm := range cms.Items {
		configMaps[cm.Name] = cm.ResourceVersion
	}
	want := controller.ObservedConfig(controller.ConfigKey(policies, configMaps))
	nodes, err := r.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: r.stackNodes()})
	if err != nil {
		return false, "", err
	}
	total, behind := 0, 0
	for _, n := range nodes.Items {
		if _, ok := n.Annotations[fakegpu.AnnotationSKU]; !ok {
			continue
		}
		total++
		if n.Annotations[fakegpu.AnnotationObservedConfig] != want || n.Labels[fakegpu.LabelMIGConfigState] == fakegpu.MIGStatePending {
			behind++
		}
	}
	seen := fmt.Sprintf("%d of %d GPU nodes reconciled against the current GPU Operator config by the in-cluster fakegpu controller", total-behind, total)
	if behind > 0 {
		seen += " (" + r.gpuStackPods(ctx) + ")"
	}
	return behind == 0, seen, nil
}

// gpuStackPods says how the in-cluster fakegpu controller's pods are, for
// a wait that times out on it: "pod X Running, ready, 0 restarts".
func (r *Run) gpuStackPods(ctx context.Context) string {
	d, err := r.Client.AppsV1().Deployments(gpuStackNamespace).Get(ctx, GPUStackName, metav1.GetOptions{})
	if err != nil {
		return "its Deployment: " + err.Error()
	}
	pods, err := r.Client.CoreV1().Pods(gpuStackNamespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(d.Spec.Selector.MatchLabels).String()})
	if err != nil {
		return "its pods: " + err.Error()
	}
	var out []string
	for _, p := range pods.Items {
		state := string(p.Status.Phase)
		for _, cs := range p.Status.ContainerStatuses {
			state += fmt.Sprintf(", ready %t, %d restarts", cs.Ready, cs.RestartCount)
			if t := cs.LastTerminationState.Terminated; t != nil {
				state += fmt.Sprintf(", last ended %s (exit %d)", t.Reason, t.ExitCode)
			}
		}
		out = append(out, "pod "+p.Name+" "+state)
	}
	if len(out) == 0 {
		return "no controller pod"
	}
	return strings.Join(out, "; ")
}
