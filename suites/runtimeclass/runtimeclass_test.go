package runtimeclass

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/fakegpu"
)

func TestNVIDIARuntimeGivesGPU(t *testing.T) {
	c := checks.NVIDIARuntimeGivesGPU
	f := harness.Feature(c).
		Assess("a well-formed GPU pod on each GPU pool runs with its allocated devices", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := harness.From(ctx)
			var pods []*corev1.Pod
			for _, p := range r.Fleet.Spec.Pools {
				if !p.GPU() {
					continue
				}
				pod, err := harness.WellFormedPod(ctx, r, c.ID, p, p.Name+"-runs")
				if err != nil {
					t.Fatal(err)
				}
				created, err := expect.Admitted(ctx, r.Client, pod)
				if err != nil {
					t.Fatal(err)
				}
				pods = append(pods, created)
			}
			for _, pod := range pods {
				got, err := expect.PodReaches(ctx, r.Client, pod.Namespace, pod.Name, "run with GPU devices and stay up", 10*time.Second, func(p *corev1.Pod) (bool, string) {
					return p.Status.Phase == corev1.PodRunning && p.Annotations[fakegpu.AnnotationVisibleDevices] != "" && !waiting(p), expect.Describe(p)
				})
				if err != nil {
					t.Errorf("%v: %s", err, waitingMessage(got))
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func waiting(p *corev1.Pod) bool { return waitingMessage(p) != "" }

func waitingMessage(p *corev1.Pod) string {
	if p == nil {
		return ""
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason == fakegpu.OutcomeNoGPUVisible {
			return w.Message
		}
	}
	return ""
}
