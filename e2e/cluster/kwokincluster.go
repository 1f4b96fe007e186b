// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	kwokv1alpha1 "sigs.k8s.io/kwok/pkg/apis/config/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/gpupool/gpupool/e2e/incluster"
	"github.com/gpupool/gpupool/e2e/wait"
)

const (
	kwokNamespace = "kube-system"
	kwokName      = "kwok-controller"
)

// kwokConfig is the in-cluster kwok controller's configuration, from
// kwok's typed config/v1alpha1, with the Stages kwokctl gives the embedded
// cluster. It manages the nodes labelSelector selects, or with "" the
// nodes annotated as fake (the kind node has a real kubelet).
func kwokConfig(labelSelector string) (string, error) {
	no, yes := false, true
	c := kwokv1alpha1.KwokConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: kwokv1alpha1.GroupVersion.String(), Kind: kwokv1alpha1.KwokConfigurationKind},
		Options: kwokv1alpha1.KwokConfigurationOptions{
			ManageAllNodes:                    &no,
			ManageNodesWithAnnotationSelector: "kwok.x-k8s.io/node=fake",
			NodeLeaseDurationSeconds:          40,
			// kwokctl fills these in; the kwok binary alone has no
			// defaults for them.
			NodeLeaseParallelism:            4,
			PodPlayStageParallelism:         4,
			NodePlayStageParallelism:        4,
			EnablePodsOnNodeSyncStreamWatch: &yes,
			NodePort:                        10247,
			CIDR:                            "10.0.0.0/16",
		},
	}
	if labelSelector != "" {
		c.Options.ManageNodesWithAnnotationSelector = ""
		c.Options.ManageNodesWithLabelSelector = labelSelector
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		return "", err
	}
	docs := []string{string(b)}
	for _, s := range kwokDefaultStages {
		docs = append(docs, strings.TrimPrefix(s, "---\n"))
	}
	return strings.Join(docs, "\n---\n"), nil
}

// KwokObjects are the objects that run a kwok controller in a cluster as a
// Deployment named name in namespace, from image, managing the nodes
// labelSelector selects ("": those annotated kwok.x-k8s.io/node=fake);
// guest: in a cluster gpupool did not make (incluster.Params.Guest).
func KwokObjects(name, namespace, image, pullPolicy, labelSelector string, guest bool) ([]runtime.Object, error) {
	config, err := kwokConfig(labelSelector)
	if err != nil {
		return nil, err
	}
	return incluster.Render(incluster.KwokController, incluster.Params{Name: name, Namespace: namespace, Image: image, PullPolicy: pullPolicy, Config: config, Guest: guest})
}

// installKwok runs the kwok controller in the cluster from a local image
// and waits until it is available.
func installKwok(ctx context.Context, client kubernetes.Interface, image string, timeout time.Duration) error {
	objs, err := KwokObjects(kwokName, kwokNamespace, image, "", "", false)
	if err != nil {
		return err
	}
	if err := CreateIfMissing(ctx, client, objs...); err != nil {
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
func CreateIfMissing(ctx context.Context, client kubernetes.Interface, objs ...runtime.Object) error {
	for _, o := range objs {
		var err error
		opts := metav1.CreateOptions{}
		switch o := o.(type) {
		case *corev1.Namespace:
			_, err = client.CoreV1().Namespaces().Create(ctx, o, opts)
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
