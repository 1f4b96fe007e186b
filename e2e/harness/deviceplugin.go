package harness

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/incluster"
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
