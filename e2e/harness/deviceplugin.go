// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/incluster"
	"github.com/gpupool/gpupool/e2e/wait"
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
	objs, err := incluster.Render(incluster.FakeDevicePlugin, incluster.Params{
		Name: DevicePluginName, Namespace: r.operatorNamespace(), Image: image, RealNodes: r.Cluster.RealNodes,
		DeployLabel: fakegpu.LabelDeployDevicePlugin, DeployOff: []string{"false", fakegpu.PausedForMIGChange},
	})
	if err != nil {
		return err
	}
	if err := cluster.CreateIfMissing(ctx, r.Client, objs...); err != nil {
		if apierrors.IsNotFound(err) {
			if _, nerr := r.Client.CoreV1().Namespaces().Get(ctx, r.operatorNamespace(), metav1.GetOptions{}); apierrors.IsNotFound(nerr) {
				return fmt.Errorf("installing the fake device plugin: the candidate creates no namespace %s, where the GPU Operator runs and, on kind, the fake device plugin with it: add one", r.operatorNamespace())
			}
		}
		return fmt.Errorf("installing the fake device plugin: %w", err)
	}
	return WaitDevicePluginReady(ctx, r, 2*time.Minute)
}

// WaitDevicePluginReady waits until the fake device plugin runs, ready, on
// every real node.
func WaitDevicePluginReady(ctx context.Context, r *Run, timeout time.Duration) error {
	return cluster.WaitPodsReady(ctx, r.Client, r.operatorNamespace(), DevicePluginLabels, len(r.Cluster.RealNodes), timeout)
}

// DRAPluginName names the fake DRA kubelet plugin's DaemonSet, its service
// account and its RBAC objects.
const DRAPluginName = "gpupool-fake-dra-plugin"

// DRAPluginLabels select the fake DRA plugin's pods.
var DRAPluginLabels = map[string]string{"app": DRAPluginName}

// installDRAPlugin runs cmd/fake-dra-plugin on the cluster's real nodes
// and waits until every one of its pods is ready. It publishes nothing
// until a check enlists its node in a DRA pool.
func (r *Run) installDRAPlugin(ctx context.Context, image string) error {
	objs, err := incluster.Render(incluster.FakeDRAPlugin, incluster.Params{
		Name: DRAPluginName, Namespace: r.operatorNamespace(), Image: image, RealNodes: r.Cluster.RealNodes,
	})
	if err != nil {
		return err
	}
	if err := cluster.CreateIfMissing(ctx, r.Client, objs...); err != nil {
		return fmt.Errorf("installing the fake DRA plugin: %w", err)
	}
	return cluster.WaitPodsReady(ctx, r.Client, r.operatorNamespace(), DRAPluginLabels, len(r.Cluster.RealNodes), 2*time.Minute)
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
// a pinned-images policy admits it. The digest comes from the plugin's pod
// on the node or, where none runs (a pool that turns the plugin off), from
// the images the node reports.
func (r *Run) ProbeImage(ctx context.Context, node string) (string, error) {
	ds, err := r.Client.AppsV1().DaemonSets(r.operatorNamespace()).Get(ctx, DevicePluginName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("the fake device plugin's DaemonSet %s: %w", DevicePluginName, err)
	}
	image := ds.Spec.Template.Spec.Containers[0].Image
	if p, err := r.DevicePluginPod(ctx, node); err == nil && len(p.Status.ContainerStatuses) > 0 {
		if _, digest, ok := strings.Cut(p.Status.ContainerStatuses[0].ImageID, "@"); ok {
			return repository(image) + "@" + digest, nil
		}
	}
	pinned, err := r.pinnedOnNode(ctx, node, image)
	if err != nil {
		return "", fmt.Errorf("%w, and no fake device plugin pod runs there", err)
	}
	return pinned, nil
}

// CUDAProbeTag starts the tag hack/build-kind-images.sh gives the probe
// under a CUDA image's name and ENV (NVIDIA_VISIBLE_DEVICES=all, access
// §2.1), which the kind provider loads into the real nodes.
const CUDAProbeTag = "nvidia/cuda:gpupool-probe-"

// CUDAProbeImage is that image, pinned by its digest on node: the image a
// tenant runs its GPU code from. A suite finds it in the node's status,
// as the suites run apart from the process that loaded it. The kubelet
// refreshes the image list it reports every 30 s (kubelet-facts §4.1), so
// an image loaded as the cluster came up may show only that much later:
// it is awaited for up to probeImageWait.
func (r *Run) CUDAProbeImage(ctx context.Context, node string) (string, error) {
	var found string
	err := wait.For(ctx, fmt.Sprintf("node %s to list image %s* in its status", node, CUDAProbeTag), probeImageWait, func(ctx context.Context) (bool, string, error) {
		n, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		for _, img := range n.Status.Images {
			for _, name := range img.Names {
				if i := strings.Index(name, CUDAProbeTag); i >= 0 && (i == 0 || name[i-1] == '/') {
					found = name[i:]
					return true, "", nil
				}
			}
		}
		return false, fmt.Sprintf("%d images listed, none of them it", len(n.Status.Images)), nil
	})
	if err != nil {
		return "", fmt.Errorf("%w (was it loaded? rerun make build-kind)", err)
	}
	return r.pinnedOnNode(ctx, node, found)
}

// probeImageWait bounds the wait for a loaded image to show in a node's
// status: the kubelet's 30 s image-list refresh, then its next status
// update.
const probeImageWait = 90 * time.Second

// pinnedOnNode is image by the digest node reports for it.
func (r *Run) pinnedOnNode(ctx context.Context, node, image string) (string, error) {
	n, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	for _, img := range n.Status.Images {
		if !slices.ContainsFunc(img.Names, func(name string) bool { return strings.HasSuffix(name, "/"+image) || name == image }) {
			continue
		}
		for _, name := range img.Names {
			if _, digest, ok := strings.Cut(name, "@"); ok {
				return repository(image) + "@" + digest, nil
			}
		}
	}
	return "", fmt.Errorf("node %s lists no digest of image %s", node, image)
}

// repository is an image reference without its tag.
func repository(image string) string {
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[:i]
	}
	return image
}
