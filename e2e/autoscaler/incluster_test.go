// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaler

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

func renderInCluster(t *testing.T, gates map[string]bool) (*unstructured.Unstructured, *appsv1.Deployment, []*unstructured.Unstructured) {
	t.Helper()
	return renderWith(t, InClusterOptions{Image: "gpupool/karpenter-kwok:v1.13.0-0123456789ab", FeatureGates: gates})
}

// renderWith renders opt, with one instance type and the cluster's
// version, and returns the first object, the Deployment and all.
func renderWith(t *testing.T, opt InClusterOptions) (*unstructured.Unstructured, *appsv1.Deployment, []*unstructured.Unstructured) {
	t.Helper()
	opt.InstanceTypes = []InstanceType{{Name: "sim-l4-x1", Offerings: []Offering{OfferingIn("on-demand", "zone-a", 1)}, Architecture: "amd64", OperatingSystems: []string{"linux"}, Resources: map[string]string{"cpu": "8", "nvidia.com/gpu": "1"}}}
	opt.KubeVersion = "v1.37.2"
	objs, err := InClusterObjects(opt)
	require.NoError(t, err)
	var d appsv1.Deployment
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d))
		}
	}
	require.NotEmpty(t, d.Name)
	return objs[0], &d, objs
}

func env(c corev1.Container, name string) []string {
	var out []string
	for _, e := range c.Env {
		if e.Name == name {
			out = append(out, e.Value)
		}
	}
	return out
}

// The chart's own FEATURE_GATES renders "StaticCapacity=," and cannot
// name NodeOverlay (autoscaler-facts §2.6): it is replaced by the
// candidate's gates, or left out for Karpenter's defaults.
func TestInClusterFeatureGates(t *testing.T) {
	_, d, _ := renderInCluster(t, map[string]bool{"NodeOverlay": true, "StaticCapacity": false})
	c := d.Spec.Template.Spec.Containers[0]
	assert.Equal(t, []string{"NodeOverlay=true,StaticCapacity=false"}, env(c, "FEATURE_GATES"))

	_, d, _ = renderInCluster(t, nil)
	assert.Empty(t, env(d.Spec.Template.Spec.Containers[0], "FEATURE_GATES"))
}

// The pod runs the image loaded into the node, reads the instance types
// from the ConfigMap applied before it, and never lands on a KWOK node.
func TestInClusterDeployment(t *testing.T) {
	cm, d, objs := renderInCluster(t, nil)
	assert.Equal(t, "ConfigMap", cm.GetKind(), "the ConfigMap first: the file is read once, at the start")
	data, _, _ := unstructured.NestedString(cm.Object, "data", instanceTypesKey)
	var its []InstanceType
	require.NoError(t, json.Unmarshal([]byte(data), &its))
	assert.Equal(t, "sim-l4-x1", its[0].Name)

	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	assert.Equal(t, "gpupool/karpenter-kwok:v1.13.0-0123456789ab", c.Image, "the tag must be set (autoscaler-facts §2.7)")
	assert.Equal(t, corev1.PullNever, c.ImagePullPolicy)
	assert.Equal(t, []string{"true"}, env(c, "DISABLE_LEADER_ELECTION"))
	path := env(c, "INSTANCE_TYPES_FILE_PATH")
	require.Len(t, path, 1)
	require.Len(t, c.VolumeMounts, 1)
	assert.True(t, strings.HasPrefix(path[0], c.VolumeMounts[0].MountPath+"/"))
	require.Len(t, spec.Volumes, 1)
	assert.Equal(t, cm.GetName(), spec.Volumes[0].ConfigMap.Name)
	assert.Equal(t, []string{"error"}, env(c, "LOG_LEVEL"))
	assert.Equal(t, int32(1), c.ReadinessProbe.PeriodSeconds)

	var kwokExcluded bool
	for _, term := range spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == "type" && e.Operator == corev1.NodeSelectorOpNotIn && len(e.Values) == 1 && e.Values[0] == "kwok" {
				kwokExcluded = true
			}
		}
	}
	assert.True(t, kwokExcluded, "a fleet's KWOK node would only pretend to run it")
	assert.Contains(t, spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})

	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	assert.Equal(t, 1, kinds["ServiceAccount"])
	assert.GreaterOrEqual(t, kinds["ClusterRoleBinding"], 2)
}

func TestInClusterImage(t *testing.T) {
	types := []InstanceType{{Name: "x"}}
	for _, bad := range []string{"no-tag", "registry:5000/karpenter", "karpenter:", ":v1"} {
		_, err := InClusterObjects(InClusterOptions{Image: bad, InstanceTypes: types, KubeVersion: "v1.37.2"})
		assert.ErrorContains(t, err, "not name:tag", bad)
	}
	objs, err := InClusterObjects(InClusterOptions{Image: "registry:5000/karpenter:v1", InstanceTypes: types, KubeVersion: "v1.37.2"})
	require.NoError(t, err)
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			assert.Equal(t, "registry:5000/karpenter:v1", cs[0].(map[string]any)["image"])
		}
	}
}

// In a cluster gpupool did not make, the release is the run's own (its
// objects named and placed by it), the image is pulled if the nodes lack
// it, and the pod tolerates the control plane's taint alone.
func TestInClusterAsTheRunsRelease(t *testing.T) {
	_, d, objs := renderWith(t, InClusterOptions{Release: Release{Name: "gpupool-kp-abc", Namespace: "gpupool-sim-abc"}, Pulled: true, Image: "registry:5000/gpupool/karpenter-kwok:v1"})
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" || o.GetKind() == "Deployment" || o.GetKind() == "ServiceAccount" {
			assert.Equal(t, "gpupool-sim-abc", o.GetNamespace(), o.GetKind())
		}
		if o.GetKind() == "ClusterRole" {
			assert.Contains(t, o.GetName(), "gpupool-kp-abc", "a ClusterRole named for the run's release")
		}
	}
	assert.Equal(t, "gpupool-kp-abc", d.Labels["app.kubernetes.io/instance"], "deploymentOf finds it by this")
	assert.Equal(t, corev1.PullIfNotPresent, d.Spec.Template.Spec.Containers[0].ImagePullPolicy)
	assert.Equal(t, []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}, d.Spec.Template.Spec.Tolerations)

	_, kind, _ := renderInCluster(t, nil)
	assert.Equal(t, corev1.PullNever, kind.Spec.Template.Spec.Containers[0].ImagePullPolicy, "kind's nodes hold the image")
	assert.Equal(t, "kube-system", kind.Namespace)
}

// A Deployment found in the cluster is stopped as Deployed.Stop stops
// one a run started: gone, and its pods with it.
func TestStopDeploymentFound(t *testing.T) {
	sel := map[string]string{"app.kubernetes.io/instance": "gpupool-kp-abc"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "gpupool-kp-abc-karpenter", Namespace: "gpupool-sim-abc"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}}}
	cs := fake.NewClientset(d)
	require.NoError(t, StopDeployment(t.Context(), cs, d))
	_, err := cs.AppsV1().Deployments(d.Namespace).Get(t.Context(), d.Name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the Deployment is deleted: %v", err)
}
