package harness

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/gpupool/gpupool/e2e/cluster"
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
	ns, labels := gpuStackNamespace, map[string]string{"app": GPUStackName}
	read := []string{"get", "list", "watch"}
	write := []string{"get", "list", "watch", "patch", "update"}
	objs := []any{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: GPUStackName, Namespace: ns}},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: GPUStackName},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: write},
				{APIGroups: []string{""}, Resources: []string{"nodes/status", "pods/status"}, Verbs: []string{"patch", "update"}},
				{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
				{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: read},
				{APIGroups: []string{"nvidia.com"}, Resources: []string{"clusterpolicies"}, Verbs: read},
				{APIGroups: []string{"node.k8s.io"}, Resources: []string{"runtimeclasses"}, Verbs: read},
			},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: GPUStackName},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: GPUStackName},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: GPUStackName, Namespace: ns}},
		},
		// The Operator's built-in mig-parted config, as the in-process
		// controller gets it.
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: GPUStackName + "-default-mig", Namespace: ns},
			Data:       map[string]string{"default-mig-parted-config.yaml": string(migDefault)},
		},
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: GPUStackName, Namespace: ns, Labels: labels},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						ServiceAccountName: GPUStackName,
						Affinity:           realNodesOnly(r.Cluster.RealNodes),
						Tolerations:        []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
						Containers: []corev1.Container{{
							Name:            "controller",
							Image:           image,
							ImagePullPolicy: corev1.PullNever,
							Args: []string{"--namespace", r.operatorNamespace(),
								"--default-mig-config", "/etc/fakegpu/default-mig-parted-config.yaml",
								"--node-selector", ownNodes},
							VolumeMounts: []corev1.VolumeMount{{Name: "default-mig", MountPath: "/etc/fakegpu", ReadOnly: true}},
						}},
						Volumes: []corev1.Volume{{Name: "default-mig", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: GPUStackName + "-default-mig"}}}}},
					},
				},
			},
		},
	}
	if err := cluster.CreateIfMissing(ctx, r.Client, objs...); err != nil {
		return fmt.Errorf("installing the fakegpu controller: %w", err)
	}
	r.gpuStackInCluster = true
	return cluster.WaitDeploymentAvailable(ctx, r.Client, ns, GPUStackName, 2*time.Minute)
}

// realNodesOnly is an affinity to the nodes with a real kubelet (KWOK
// nodes run nothing), that also match labels.
func realNodesOnly(nodes []string, labels ...corev1.NodeSelectorRequirement) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields:      []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: nodes}},
			MatchExpressions: labels,
		}}},
	}}
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
	nodes, err := r.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
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
	return behind == 0, fmt.Sprintf("%d of %d GPU nodes reconciled against the current GPU Operator config by the in-cluster fakegpu controller", total-behind, total), nil
}
