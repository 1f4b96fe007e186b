package explain

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func gpuNode(name string, capacity, allocatable int64) corev1.Node {
	q := func(n int64) corev1.ResourceList {
		return corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(n, resource.DecimalSI)}
	}
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"gpupool.dev/pool": "p"}},
		Status: corev1.NodeStatus{Capacity: q(capacity), Allocatable: q(allocatable)}}
}

func gpuPod(name, node string, main, init int64) corev1.Pod {
	lim := func(n int64) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(n, resource.DecimalSI)}}
	}
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node,
		Containers: []corev1.Container{{Name: "main", Resources: lim(main)}}}}
	if init > 0 {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: lim(init)}}
	}
	return p
}

func TestGPURequestsCountInitContainers(t *testing.T) {
	p := gpuPod("p", "", 1, 3)
	if got := GPURequests(&p)["nvidia.com/gpu"]; got != 3 {
		t.Errorf("GPURequests = %d, want 3 (the init container's, held while it runs)", got)
	}
}

func TestPendingNamesUnhealthyGPUs(t *testing.T) {
	running := gpuPod("running", "n", 7, 0)
	pending := gpuPod("pending", "", 1, 0)
	got := Pod(&pending, Cluster{Nodes: []corev1.Node{gpuNode("n", 8, 7)}, Pods: []corev1.Pod{running}})
	if got.Category != PoolFull || !strings.Contains(got.Message, "1 of its 8 unhealthy") {
		t.Errorf("got %s, want pool-full naming 1 of 8 GPUs unhealthy", got)
	}
	healthy := Pod(&pending, Cluster{Nodes: []corev1.Node{gpuNode("n", 7, 7)}, Pods: []corev1.Pod{running}})
	if strings.Contains(healthy.Message, "unhealthy") {
		t.Errorf("no GPU is unhealthy, but: %s", healthy)
	}
}
