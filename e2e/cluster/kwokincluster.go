package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/gpupool/gpupool/e2e/wait"
)

const (
	kwokNamespace = "kube-system"
	kwokName      = "kwok-controller"
)

// kwokConfig is the in-cluster kwok controller's configuration: only nodes
// annotated as fake are its (the kind node has a real kubelet), with the
// Stages kwokctl gives the embedded cluster.
func kwokConfig() string {
	var b strings.Builder
	b.WriteString(`apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  manageAllNodes: false
  manageNodesWithAnnotationSelector: kwok.x-k8s.io/node=fake
  nodeLeaseDurationSeconds: 40
  # kwokctl fills these in; the kwok binary alone has no defaults for them.
  nodeLeaseParallelism: 4
  podPlayStageParallelism: 4
  nodePlayStageParallelism: 4
  enablePodsOnNodeSyncStreamWatch: true
  nodePort: 10247
  cidr: 10.0.0.0/16
`)
	for _, s := range kwokDefaultStages {
		b.WriteString("---\n")
		b.WriteString(strings.TrimPrefix(s, "---\n"))
		if !strings.HasSuffix(s, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// installKwok runs the kwok controller in the cluster from a local image
// and waits until it is available.
func installKwok(ctx context.Context, client kubernetes.Interface, image string, timeout time.Duration) error {
	labels := map[string]string{"app": kwokName}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: kwokName, Namespace: kwokNamespace}}
	// What kwok's own RBAC (kustomize/rbac) grants the controller, for the
	// parts it uses here.
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: kwokName},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "patch", "update"}},
			{APIGroups: []string{""}, Resources: []string{"nodes/status", "pods/status"}, Verbs: []string{"patch", "update"}},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "patch", "update", "delete"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create", "get", "list", "watch", "patch", "update"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: kwokName},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: kwokName},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: kwokName, Namespace: kwokNamespace}},
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kwok", Namespace: kwokNamespace},
		Data:       map[string]string{"kwok.yaml": kwokConfig()},
	}
	one := int32(1)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: kwokName, Namespace: kwokNamespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: kwokName,
					// The only real node is the control plane.
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{
						Name:            "kwok-controller",
						Image:           image,
						ImagePullPolicy: corev1.PullNever,
						Args:            []string{"--config=/etc/kwok/kwok.yaml", "--node-ip=$(POD_IP)"},
						Env: []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
						VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/kwok", ReadOnly: true}},
						// Available means serving, not merely started.
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(10247)}},
							PeriodSeconds: 2,
						},
					}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
						ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "kwok"}}}}},
				},
			},
		},
	}
	if err := CreateIfMissing(ctx, client, sa, role, binding, cm, dep); err != nil {
		return fmt.Errorf("installing the kwok controller: %w", err)
	}
	if err := WaitDeploymentAvailable(ctx, client, kwokNamespace, kwokName, timeout); err != nil {
		return err
	}
	return keepDaemonSetsOffKwokNodes(ctx, client)
}

// keepDaemonSetsOffKwokNodes gives kube-system's DaemonSets (kube-proxy)
// the affinity kwok's docs ask of DaemonSets: not onto nodes labelled
// type=kwok, where nothing would run them and a fleet of thousands would
// make thousands of pods.
func keepDaemonSetsOffKwokNodes(ctx context.Context, client kubernetes.Interface) error {
	dss, err := client.AppsV1().DaemonSets(kwokNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	patch := []byte(`{"spec":{"template":{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":` +
		`{"nodeSelectorTerms":[{"matchExpressions":[{"key":"type","operator":"NotIn","values":["kwok"]}]}]}}}}}}}`)
	for _, ds := range dss.Items {
		if ds.Spec.Template.Spec.Affinity != nil {
			continue // someone chose already
		}
		if _, err := client.AppsV1().DaemonSets(ds.Namespace).Patch(ctx, ds.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("keeping DaemonSet %s off KWOK nodes: %w", ds.Name, err)
		}
	}
	return nil
}

// WaitDeploymentAvailable waits until every replica of a Deployment is
// available, and says what its pods are doing when it times out.
func WaitDeploymentAvailable(ctx context.Context, client kubernetes.Interface, ns, name string, timeout time.Duration) error {
	return wait.For(ctx, fmt.Sprintf("deployment %s/%s to be available", ns, name), timeout, func(ctx context.Context) (bool, string, error) {
		d, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		if d.Status.AvailableReplicas >= want {
			return true, "", nil
		}
		return false, fmt.Sprintf("%d of %d available; pods: %s", d.Status.AvailableReplicas, want, podsState(ctx, client, ns, d.Spec.Selector.MatchLabels)), nil
	})
}

// podsState describes pods briefly: phase and the first waiting reason.
func podsState(ctx context.Context, client kubernetes.Interface, ns string, sel map[string]string) string {
	var parts []string
	var s []string
	for k, v := range sel {
		s = append(s, k+"="+v)
	}
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: strings.Join(s, ",")})
	if err != nil {
		return err.Error()
	}
	for _, p := range pods.Items {
		st := string(p.Status.Phase)
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				st += " (" + w.Reason + ": " + w.Message + ")"
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
				st += " (" + c.Reason + ": " + c.Message + ")"
			}
		}
		parts = append(parts, p.Name+" "+st)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// WaitPodsReady waits until want pods matching sel in ns are Ready.
func WaitPodsReady(ctx context.Context, client kubernetes.Interface, ns string, sel map[string]string, want int, timeout time.Duration) error {
	var s []string
	for k, v := range sel {
		s = append(s, k+"="+v)
	}
	return wait.For(ctx, fmt.Sprintf("%d pods %s in %s to be Ready", want, strings.Join(s, ","), ns), timeout, func(ctx context.Context) (bool, string, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: strings.Join(s, ",")})
		if err != nil {
			return false, "", err
		}
		ready := 0
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
					ready++
				}
			}
		}
		return ready >= want, fmt.Sprintf("%d ready; pods: %s", ready, podsState(ctx, client, ns, sel)), nil
	})
}

// CreateIfMissing creates each object, leaving alone any that exists.
func CreateIfMissing(ctx context.Context, client kubernetes.Interface, objs ...any) error {
	for _, o := range objs {
		var err error
		opts := metav1.CreateOptions{}
		switch o := o.(type) {
		case *corev1.ServiceAccount:
			_, err = client.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, opts)
		case *corev1.ConfigMap:
			_, err = client.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, opts)
		case *rbacv1.ClusterRole:
			_, err = client.RbacV1().ClusterRoles().Create(ctx, o, opts)
		case *rbacv1.ClusterRoleBinding:
			_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, o, opts)
		case *appsv1.Deployment:
			_, err = client.AppsV1().Deployments(o.Namespace).Create(ctx, o, opts)
		case *appsv1.DaemonSet:
			_, err = client.AppsV1().DaemonSets(o.Namespace).Create(ctx, o, opts)
		default:
			return fmt.Errorf("CreateIfMissing: unsupported object %T", o)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}
