// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package sharing

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/wait"
	"github.com/gpupool/gpupool/e2e/workload"
	"github.com/gpupool/gpupool/fakegpu"
)

// The simulated kubelet judges a pod within a second of kwok starting it.
const kubeletTimeout = 10 * time.Second

func TestExclusiveGPUsNotShared(t *testing.T) {
	c := checks.ExclusiveGPUsNotShared
	f := suite.Feature(c).
		Assess("a full exclusive node's pods hold distinct GPUs and one more pod stays Pending", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			p := r.FirstPool(t, fleet.ModeExclusive)
			res, perNode, err := r.Intended(p)
			if err != nil {
				t.Fatal(err)
			}
			nodes, err := r.PoolNodes(ctx, p.Name, nil)
			if err != nil {
				t.Fatal(err)
			}
			node := nodes[0].Name
			var pods []*corev1.Pod
			for i := int64(0); i <= perNode; i++ {
				pod := workload.New(c.ID, suite.Namespace(ctx), fmt.Sprintf("gpu-%d", i)).ForPool(p, nil).GPU(res, 1).
					NodeSelector(map[string]string{"kubernetes.io/hostname": node})
				got, err := expect.Admitted(ctx, r.Client, pod.Pod)
				if err != nil {
					t.Fatal(err)
				}
				pods = append(pods, got)
			}
			// Which pod is left over is the scheduler's choice; that one is left is the contract.
			bound, pending, err := waitBound(ctx, r, pods, int(perNode))
			if err != nil {
				t.Fatal(err)
			}
			if err := expect.PendingWith(ctx, r.Client, pending.Namespace, pending.Name, "Insufficient "+res); err != nil {
				t.Error(err)
			}
			holder := map[string]string{}
			for _, pod := range bound {
				got, err := expect.PodReaches(ctx, r.Client, pod.Namespace, pod.Name, "be allocated its GPU", kubeletTimeout, func(p *corev1.Pod) (bool, string) {
					return p.Annotations[fakegpu.AnnotationVisibleDevices] != "", expect.Describe(p)
				})
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range strings.Split(got.Annotations[fakegpu.AnnotationVisibleDevices], ",") {
					if other, dup := holder[d]; dup {
						t.Errorf("GPU %s on %s was given to both %s and %s", d, node, other, got.Name)
					}
					holder[d] = got.Name
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestFailRequestsGreaterThanOne(t *testing.T) {
	c := checks.FailRequestsGreaterThanOne
	f := suite.Feature(c).
		Assess("a pod asking for 2 shared GPUs in one container, main or init, is scheduled, then fails kubelet admission", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			p := r.FirstPool(t, fleet.ModeTimeSlicing)
			res, err := r.IntendedResource(p)
			if err != nil {
				t.Fatal(err)
			}
			ns, domain, err := suite.NamespaceFor(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			// The kubelet calls Allocate per container, init containers
			// included (stack-facts §2): a tenant who asks for 2 in an init
			// container is refused as one who asks in the main container.
			shapes := []workload.Pod{
				workload.New(c.ID, ns, p.Name+"-two-replicas").ForPool(p, domain).GPU(res, 2),
				workload.New(c.ID, ns, p.Name+"-two-in-init").ForPool(p, domain).GPU(res, 1).InitLimit(res, 2),
			}
			for _, pod := range shapes {
				if _, err := expect.Admitted(ctx, r.Client, pod.Pod); err != nil {
					t.Fatal(err)
				}
			}
			for _, pod := range shapes {
				if _, err := expect.Scheduled(ctx, r.Client, ns, pod.Name); err != nil {
					t.Fatal(err)
				}
				got, err := expect.PodReaches(ctx, r.Client, ns, pod.Name, "fail kubelet admission with UnexpectedAdmissionError", kubeletTimeout, func(p *corev1.Pod) (bool, string) {
					return p.Status.Phase == corev1.PodFailed, expect.Describe(p)
				})
				if err != nil {
					t.Errorf("%v: pod %s was given 2 slices of a time-sliced GPU in one container", err, pod.Name)
					continue
				}
				if got.Status.Reason != fakegpu.OutcomeAdmissionRejected || !strings.Contains(got.Status.Message, "maximum request size for shared resources is 1") {
					t.Errorf("pod %s: expected reason %s with the device plugin's message, got %q: %q", pod.Name, fakegpu.OutcomeAdmissionRejected, got.Status.Reason, got.Status.Message)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestGPUMemoryBounded(t *testing.T) {
	c := checks.GPUMemoryBounded
	f := suite.Feature(c).
		Assess("pods within their share of a time-sliced GPU run; the one that oversubscribes it is denied or OOMKilled", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			p := r.FirstPool(t, fleet.ModeTimeSlicing)
			res, err := r.IntendedResource(p)
			if err != nil {
				t.Fatal(err)
			}
			sku, err := fakegpu.LookupSKU(p.SKU)
			if err != nil {
				t.Fatal(err)
			}
			ns, domain, err := suite.NamespaceFor(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			nodes, err := r.PoolNodes(ctx, p.Name, domain)
			if err != nil {
				t.Fatal(err)
			}
			// One physical GPU: a single-GPU node, its replicas all there.
			node := nodes[0].Name
			replicas := p.Replicated().Replicas
			share := int64(sku.MemoryMiB / replicas)
			onNode := map[string]string{"kubernetes.io/hostname": node}
			memPod := func(name string, mib int64) *corev1.Pod {
				pod := workload.New(c.ID, ns, name).ForPool(p, domain).GPU(res, 1).NodeSelector(onNode)
				pod.Annotations = map[string]string{fakegpu.AnnotationGPUMemory: fmt.Sprint(mib)}
				return pod.Pod
			}
			running := func(pod *corev1.Pod) error {
				_, err := expect.PodReaches(ctx, r.Client, pod.Namespace, pod.Name, "run with its GPU", kubeletTimeout, func(p *corev1.Pod) (bool, string) {
					return p.Status.Phase == corev1.PodRunning && p.Annotations[fakegpu.AnnotationVisibleDevices] != "" && !oomKilled(p), expect.Describe(p)
				})
				return err
			}
			// replicas-1 pods at their fair share: the GPU is not full yet.
			for i := 0; i < replicas-1; i++ {
				pod, err := expect.Admitted(ctx, r.Client, memPod(fmt.Sprintf("share-%d", i), share))
				if err != nil {
					t.Fatal(err)
				}
				if err := running(pod); err != nil {
					t.Fatalf("a pod within its share of the GPU (%d MiB of %d): %v", share, sku.MemoryMiB, err)
				}
			}
			// The last replica asks for two shares' worth of memory.
			over := memPod("oversubscribes", 2*share)
			created, err := r.Client.CoreV1().Pods(ns).Create(ctx, over, metav1.CreateOptions{})
			if err != nil {
				t.Logf("the candidate denies the oversubscribing pod at admission: %v", err)
				return ctx
			}
			got, err := expect.PodReaches(ctx, r.Client, ns, created.Name, "be OOMKilled", kubeletTimeout, func(p *corev1.Pod) (bool, string) {
				return oomKilled(p), expect.Describe(p)
			})
			if err != nil {
				t.Errorf("a pod declaring %d MiB on a GPU whose other %d pods hold %d MiB of %d: %v", 2*share, replicas-1, int64(replicas-1)*share, sku.MemoryMiB, err)
				return ctx
			}
			t.Logf("flagged: %s was OOMKilled: %s", got.Name, oomMessage(got))
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func oomKilled(p *corev1.Pod) bool { return oomMessage(p) != "" }

func oomMessage(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if t != nil && t.Reason == fakegpu.OutcomeOOMKilled {
				return t.Message
			}
		}
	}
	return ""
}

// waitBound waits until n of the pods are bound and returns them and one
// that is not.
func waitBound(ctx context.Context, r *harness.Run, pods []*corev1.Pod, n int) (bound []*corev1.Pod, pending *corev1.Pod, err error) {
	err = wait.For(ctx, fmt.Sprintf("%d of %d pods to be scheduled", n, len(pods)), expect.ScheduleTimeout, func(ctx context.Context) (bool, string, error) {
		bound, pending = nil, nil
		for _, p := range pods {
			got, err := r.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			if got.Spec.NodeName != "" {
				bound = append(bound, got)
			} else {
				pending = got
			}
		}
		return len(bound) >= n, fmt.Sprintf("%d bound", len(bound)), nil
	})
	if err == nil && pending == nil {
		err = fmt.Errorf("all %d pods were scheduled onto a node with %d GPUs", len(pods), n)
	}
	return bound, pending, err
}
