// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package incluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// Every template renders to the typed objects the installer creates, with
// the parameters where they belong.
func TestRender(t *testing.T) {
	p := Params{Name: "x", Namespace: "ns", Image: "img:1", RealNodes: []string{"n1", "n2"}, OperatorNamespace: "gpu-operator",
		NodeSelector: "!gpupool.dev/run", DefaultMIGConfig: "a: 1\nb:\n  c: 2\n", DeployLabel: "nvidia.com/gpu.deploy.device-plugin",
		DeployOff: []string{"false", "paused-for-mig-change"}, Config: "apiVersion: v1\n---\nkind: Stage\n"}

	objs, err := Render(FakeGPUController, p)
	require.NoError(t, err)
	require.Len(t, objs, 5)
	cm := objs[3].(*corev1.ConfigMap)
	assert.Equal(t, "a: 1\nb:\n  c: 2\n", cm.Data["default-mig-parted-config.yaml"], "file contents kept byte for byte")
	dep := objs[4].(*appsv1.Deployment)
	assert.Equal(t, "img:1", dep.Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, corev1.PullNever, dep.Spec.Template.Spec.Containers[0].ImagePullPolicy)
	assert.Contains(t, dep.Spec.Template.Spec.Containers[0].Args, "!gpupool.dev/run")
	assert.Equal(t, []string{"n1", "n2"}, dep.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values)
	assert.Equal(t, "ns", objs[2].(*rbacv1.ClusterRoleBinding).Subjects[0].Namespace)

	objs, err = Render(FakeDevicePlugin, p)
	require.NoError(t, err)
	require.Len(t, objs, 4)
	ds := objs[3].(*appsv1.DaemonSet)
	term := ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
	assert.Equal(t, "nvidia.com/gpu.deploy.device-plugin", term.MatchExpressions[0].Key)
	assert.Equal(t, []string{"false", "paused-for-mig-change"}, term.MatchExpressions[0].Values)
	assert.True(t, *ds.Spec.Template.Spec.Containers[0].SecurityContext.Privileged)
	assert.Equal(t, corev1.HostPathDirectory, *ds.Spec.Template.Spec.Volumes[0].HostPath.Type)

	objs, err = Render(FakeDRAPlugin, p)
	require.NoError(t, err)
	require.Len(t, objs, 4)
	ds = objs[3].(*appsv1.DaemonSet)
	assert.Equal(t, []string{"n1", "n2"}, ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values)
	var mounts []string
	for _, m := range ds.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounts = append(mounts, m.MountPath)
	}
	assert.Equal(t, []string{"/var/lib/kubelet/plugins", "/var/lib/kubelet/plugins_registry", "/var/run/cdi"}, mounts, "the kubelet's plugin directories and the CDI specs")
	assert.Contains(t, objs[1].(*rbacv1.ClusterRole).Rules, rbacv1.PolicyRule{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims"}, Verbs: []string{"get", "list", "watch"}})

	objs, err = Render(KwokController, p)
	require.NoError(t, err)
	require.Len(t, objs, 5)
	assert.Equal(t, p.Config, objs[3].(*corev1.ConfigMap).Data["kwok.yaml"])
	assert.Equal(t, int32(10247), objs[4].(*appsv1.Deployment).Spec.Template.Spec.Containers[0].ReadinessProbe.HTTPGet.Port.IntVal)

	kwokAffinity := objs[4].(*appsv1.Deployment).Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
	assert.Equal(t, corev1.NodeSelectorRequirement{Key: "type", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"kwok"}}, kwokAffinity.MatchExpressions[0], "never on a KWOK node")

	// Without real nodes named (a cluster gpupool did not make), the
	// controller runs on any node but a KWOK one, pulling its image.
	assert.Equal(t, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, dep.Spec.Template.Spec.Tolerations, "gpupool's own cluster: any node it names")
	p.RealNodes, p.PullPolicy, p.Guest = nil, "IfNotPresent", true
	objs, err = Render(FakeGPUController, p)
	require.NoError(t, err)
	dep = objs[4].(*appsv1.Deployment)
	guestTolerations := []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	assert.Equal(t, guestTolerations, dep.Spec.Template.Spec.Tolerations, "a guest never runs on a cordoned, NotReady or unreachable node")
	objs, err = Render(KwokController, p)
	require.NoError(t, err)
	assert.Equal(t, guestTolerations, objs[4].(*appsv1.Deployment).Spec.Template.Spec.Tolerations)
	objs, err = Render(FakeGPUController, p)
	require.NoError(t, err)
	dep = objs[4].(*appsv1.Deployment)
	assert.Equal(t, corev1.PullIfNotPresent, dep.Spec.Template.Spec.Containers[0].ImagePullPolicy)
	term = dep.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
	assert.Empty(t, term.MatchFields)
	assert.Equal(t, corev1.NodeSelectorRequirement{Key: "type", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"kwok"}}, term.MatchExpressions[0])
	_, err = Render(FakeDevicePlugin, p)
	assert.Error(t, err, "the device plugin runs on named real nodes only")
	_, err = Render(FakeDRAPlugin, p)
	assert.Error(t, err, "so does the DRA plugin")

	_, err = Render(KwokController, Params{})
	assert.Error(t, err, "a template with an empty image renders no valid objects")
}
