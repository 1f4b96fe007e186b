package harness

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/fakegpu"
)

// DevicePluginName names the fake device plugin's DaemonSet, its service
// account and its RBAC objects.
const DevicePluginName = "gpupool-fake-device-plugin"

// DevicePluginLabels select the fake device plugin's pods.
var DevicePluginLabels = map[string]string{"app": DevicePluginName}

// installDevicePlugin runs cmd/fake-device-plugin on the cluster's real
// nodes, in the GPU Operator's namespace as the real plugin runs, and waits
// until every one of its pods is ready.
func (r *Run) installDevicePlugin(ctx context.Context, image string) error {
	ns := r.operatorNamespace()
	c := r.Client
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DevicePluginName, Namespace: ns}}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: DevicePluginName},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"nvidia.com"}, Resources: []string{"clusterpolicies"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: DevicePluginName},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: DevicePluginName},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: DevicePluginName, Namespace: ns}},
	}
	hostPathDir := corev1.HostPathDirectory
	privileged := true
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: DevicePluginName, Namespace: ns, Labels: DevicePluginLabels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: DevicePluginLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: DevicePluginLabels},
				Spec: corev1.PodSpec{
					ServiceAccountName: DevicePluginName,
					// Only nodes with a real kubelet: KWOK nodes have none.
					// As the GPU Operator's DaemonSet: a node labelled off (or
					// paused by the MIG manager) runs no plugin.
					Affinity: realNodesOnly(r.Cluster.RealNodes, corev1.NodeSelectorRequirement{
						Key: fakegpu.LabelDeployDevicePlugin, Operator: corev1.NodeSelectorOpNotIn,
						Values: []string{"false", fakegpu.PausedForMIGChange}}),
					// Whatever pool a check turns the node into, the plugin stays.
					Tolerations:       []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					PriorityClassName: "system-node-critical",
					Containers: []corev1.Container{{
						Name:            "device-plugin",
						Image:           image,
						ImagePullPolicy: corev1.PullNever,
						Args:            []string{"--namespace", ns},
						Env: []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
						// The kubelet's socket directory is root's.
						SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
						VolumeMounts:    []corev1.VolumeMount{{Name: "device-plugins", MountPath: "/var/lib/kubelet/device-plugins"}},
					}},
					Volumes: []corev1.Volume{{Name: "device-plugins", VolumeSource: corev1.VolumeSource{
						HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/kubelet/device-plugins", Type: &hostPathDir}}}},
				},
			},
		},
	}
	if err := cluster.CreateIfMissing(ctx, c, sa, role, binding, ds); err != nil {
		return fmt.Errorf("installing the fake device plugin: %w", err)
	}
	return WaitDevicePluginReady(ctx, r, 2*time.Minute)
}

// WaitDevicePluginReady waits until the fake device plugin runs, ready, on
// every real node.
func WaitDevicePluginReady(ctx context.Context, r *Run, timeout time.Duration) error {
	return cluster.WaitPodsReady(ctx, r.Client, r.operatorNamespace(), DevicePluginLabels, len(r.Cluster.RealNodes), timeout)
}

// operatorNamespace is where the GPU Operator's objects live (the
// fakegpu controller's default too).
func (r *Run) operatorNamespace() string { return "gpu-operator" }

// DevicePluginPod returns the fake device plugin's pod on node.
func (r *Run) DevicePluginPod(ctx context.Context, node string) (*corev1.Pod, error) {
	pods, err := r.Client.CoreV1().Pods(r.operatorNamespace()).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(DevicePluginLabels).String(),
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
	})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil {
			return &pods.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no fake device plugin pod on node %s", node)
}

// ProbeImage is the fake device plugin's image pinned by digest, as the
// node's kubelet knows it: kind-only checks run their GPU pods from it
// ("probe" mode prints the environment the device plugin gave them), and
// a pinned-images policy admits it.
func (r *Run) ProbeImage(ctx context.Context, node string) (string, error) {
	p, err := r.DevicePluginPod(ctx, node)
	if err != nil {
		return "", err
	}
	if len(p.Status.ContainerStatuses) == 0 {
		return "", fmt.Errorf("fake device plugin pod %s has no container status yet", p.Name)
	}
	_, digest, ok := strings.Cut(p.Status.ContainerStatuses[0].ImageID, "@")
	if !ok {
		return "", fmt.Errorf("fake device plugin pod %s: image ID %q has no digest", p.Name, p.Status.ContainerStatuses[0].ImageID)
	}
	repo := p.Spec.Containers[0].Image
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	return repo + "@" + digest, nil
}
