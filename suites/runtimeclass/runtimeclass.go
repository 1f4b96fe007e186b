// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package runtimeclass

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/workload"
	"github.com/gpupool/gpupool/fakegpu"
)

func TestNVIDIARuntimeGivesGPU(t *testing.T) {
	c := checks.NVIDIARuntimeGivesGPU
	f := suite.Feature(c).
		Assess("a well-formed GPU pod on each GPU pool runs with its allocated devices", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			var pods []*corev1.Pod
			for _, p := range r.Fleet.Spec.Pools {
				if !p.GPU() {
					continue
				}
				pod, err := suite.WellFormedPod(ctx, r, c.ID, p, p.Name+"-runs")
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
				// The simulated kubelet writes the devices and whether the
				// container can use them in one update: devices without a
				// no-GPU verdict are final.
				got, err := expect.PodReaches(ctx, r.Client, pod.Namespace, pod.Name, "run with GPU devices it can use", 10*time.Second, func(p *corev1.Pod) (bool, string) {
					if why := p.Annotations[fakegpu.AnnotationNoGPU]; why != "" {
						return false, "allocated devices it cannot use: " + why
					}
					// Device-plugin devices, or the CDI devices of a DRA claim.
					devices := p.Annotations[fakegpu.AnnotationVisibleDevices] + p.Annotations[fakegpu.AnnotationCDIDevices]
					return p.Status.Phase == corev1.PodRunning && devices != "" && !waiting(p), expect.Describe(p)
				})
				if err != nil {
					t.Errorf("%v: %s", err, waitingMessage(got))
					continue
				}
				if why := got.Annotations[fakegpu.AnnotationNoGPU]; why != "" {
					t.Errorf("expected pod %s to use its GPU, but %s", got.Name, why)
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

func TestRuntimeClassExistsNotDefault(t *testing.T) {
	c := checks.RuntimeClassExistsNotDefault
	f := suite.Feature(c).
		Assess("RuntimeClass nvidia exists with handler nvidia", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			rc, err := r.Client.NodeV1().RuntimeClasses().Get(ctx, workload.RuntimeClass, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("expected RuntimeClass nvidia, but: %v", err)
			}
			if rc.Handler != fakegpu.RuntimeHandler {
				t.Errorf("expected RuntimeClass nvidia to use handler %q, but it uses %q", fakegpu.RuntimeHandler, rc.Handler)
			}
			return ctx
		}).
		Assess("a CPU pod that names no RuntimeClass is admitted without one", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			got, err := expect.Admitted(ctx, r.Client, workload.New(c.ID, suite.Namespace(ctx), "cpu-no-runtimeclass").Pod)
			if err != nil {
				t.Fatal(err)
			}
			if rc := got.Spec.RuntimeClassName; rc != nil {
				t.Errorf("expected no runtimeClassName on a CPU pod, but admission set %q", *rc)
			}
			return ctx
		}).
		Assess("a pod naming a RuntimeClass that does not exist is denied", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			pod := workload.New(c.ID, suite.Namespace(ctx), "missing-runtimeclass").RuntimeClass("gpupool-no-such-runtimeclass")
			if err := expect.Denied(ctx, r.Client, pod.Pod, `RuntimeClass "gpupool-no-such-runtimeclass" not found`); err != nil {
				t.Error(err)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
