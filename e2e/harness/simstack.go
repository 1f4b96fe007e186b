// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/incluster"
	"github.com/gpupool/gpupool/e2e/upstream"
)

// StackImages are images of gpupool's simulated stack that a cluster's
// nodes can pull (hack/build-kind-images.sh builds them; push them where
// the cluster pulls from).
type StackImages struct {
	// Kwok is the kwok controller (gpupool/kwok: kwok's own binary).
	Kwok string
	// FakeGPU is cmd/fakegpu-controller (gpupool/fakegpu-controller).
	FakeGPU string
	// Karpenter, if set, is the run's Karpenter (gpupool/karpenter-kwok),
	// installed from its chart in the stack's namespace to scale the
	// fleet's autoscaled pools.
	Karpenter string
}

// simulatedStackName names the namespace, Deployments and RBAC objects of
// the run's simulated stack in the cluster: unique to the run, so two
// runs' stacks never share an object.
func simulatedStackName() string { return "gpupool-sim-" + runHash() }

// installSimulatedStack runs, in a namespace of the run's, a kwok
// controller and a fakegpu controller for the nodes sel selects (the
// run's alone), on the cluster's own nodes but never a KWOK, cordoned or
// NotReady one, and waits
// until both are available. Every object carries the run's label and
// LabelStack, so RemoveOwned removes them, after the run's nodes and pods.
func (r *Run) installSimulatedStack(ctx context.Context, img StackImages, sel string) error {
	name := simulatedStackName()
	migDefault, err := upstream.GPUOperatorFile(upstream.DefaultMIGPartedConfig)
	if err != nil {
		return err
	}
	kwok, err := cluster.KwokObjects(name+"-kwok", name, img.Kwok, string(corev1.PullIfNotPresent), sel, true)
	if err != nil {
		return err
	}
	gpu, err := incluster.Render(incluster.FakeGPUController, incluster.Params{
		Name: name + "-fakegpu", Namespace: name, Image: img.FakeGPU, PullPolicy: string(corev1.PullIfNotPresent), Guest: true,
		OperatorNamespace: r.operatorNamespace(), NodeSelector: sel, DefaultMIGConfig: string(migDefault),
	})
	if err != nil {
		return err
	}
	objs := append([]runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}}, kwok...)
	objs = append(objs, gpu...)
	for _, o := range objs {
		m, err := meta.Accessor(o)
		if err != nil {
			return err
		}
		labels := m.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[LabelRun], labels[fleet.LabelManagedBy], labels[LabelStack] = RunID(), fleet.ManagedBy, "true"
		m.SetLabels(labels)
	}
	if err := cluster.CreateIfMissing(ctx, r.Client, objs...); err != nil {
		return fmt.Errorf("installing the simulated stack in %s: %w", r.Cluster.Name, err)
	}
	r.gpuStackInCluster = true
	for _, d := range []string{name + "-kwok", name + "-fakegpu"} {
		if err := cluster.WaitDeploymentAvailable(ctx, r.Client, name, d, 2*time.Minute); err != nil {
			return fmt.Errorf("the simulated stack in %s (are the images pullable there?): %w", r.Cluster.Name, err)
		}
	}
	return nil
}
