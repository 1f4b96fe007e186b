// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/wait"
	"github.com/gpupool/gpupool/e2e/workload"
	"github.com/gpupool/gpupool/fakegpu"
	"github.com/gpupool/gpupool/fakegpu/kubeletplugin"
)

// enlisted is the real node, made a member of a pool for one check.
type enlisted struct {
	node     string
	pool     fleet.Pool
	domain   *fleet.TrustDomain
	ns       string
	resource string
	// advertised is the count the kubelet advertises once enlisted.
	advertised int64
	image      string
	// hadPlugin: the fake device plugin ran on the node before it was
	// enlisted (a DRA pool takes it off).
	hadPlugin bool
	restore   func(context.Context) error
}

// enlist makes the real node a node of the first pool designed for mode,
// and waits until its kubelet advertises the resource the pool is
// designed for.
func enlist(ctx context.Context, t *testing.T, mode string) *enlisted {
	t.Helper()
	return enlistPool(ctx, t, suite.From(ctx).FirstPool(t, mode))
}

// enlistPool makes the real node a node of pool and waits until it serves
// the resource the pool is designed for.
func enlistPool(ctx context.Context, t *testing.T, pool fleet.Pool) *enlisted {
	t.Helper()
	e, err := enlistIn(ctx, suite.From(ctx), pool)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *enlisted) leave(ctx context.Context, t *testing.T) {
	if e == nil || e.restore == nil {
		return
	}
	if err := e.restore(ctx); err != nil {
		t.Errorf("taking %s out of pool %s: %v", e.node, e.pool.Name, err)
		return
	}
	// A DRA pool took the device plugin off the node; what runs next
	// needs it back where it ran.
	if e.pool.DRA != nil && e.hadPlugin {
		if err := harness.WaitDevicePluginReady(ctx, suite.From(ctx), harness.RealNodeTimeout); err != nil {
			t.Errorf("the device plugin after %s left pool %s: %v", e.node, e.pool.Name, err)
		}
	}
}

// probePod is a well-formed pod of the pool pinned to the real node, whose
// container prints the devices it was given.
func (e *enlisted) probePod(check, name string, n int64) *corev1.Pod {
	return workload.New(check, e.ns, name).ForPool(e.pool, e.domain).GPU(e.resource, n).
		NodeSelector(map[string]string{"kubernetes.io/hostname": e.node}).
		Image(e.image).Args("probe", kubeletplugin.EnvDeviceIDs).Pod
}

func TestKubeletRejectsSharedRequestOverOne(t *testing.T) {
	c := checks.KubeletRejectsSharedOverOne
	var e *enlisted
	f := suite.Feature(c).
		Assess("a pod asking for 2 shared GPUs on a real node is scheduled, then fails the kubelet's admission", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			e = enlist(ctx, t, fleet.ModeTimeSlicing)
			pod := e.probePod(c.ID, "two-shared", 2)
			if _, err := expect.Admitted(ctx, r.Client, pod); err != nil {
				t.Fatal(err)
			}
			if _, err := expect.Scheduled(ctx, r.Client, pod.Namespace, pod.Name); err != nil {
				t.Fatal(err)
			}
			// The kubelet admits a pod once, before it starts it
			// (kubelet-facts §1.3): one that runs was admitted, and no wait
			// changes that.
			if _, err := expect.PodReachesUnless(ctx, r.Client, pod.Namespace, pod.Name, "be rejected by the kubelet (phase Failed, reason UnexpectedAdmissionError)", harness.RealNodeTimeout, func(p *corev1.Pod) (bool, string) {
				return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "UnexpectedAdmissionError", expect.Describe(p)
			}, func(p *corev1.Pod) (string, bool) {
				return "the kubelet admitted it and it runs", p.Status.Phase == corev1.PodRunning
			}); err != nil {
				t.Error(err)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			e.leave(ctx, t)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestKubeletAllocatesDistinctGPUs(t *testing.T) {
	c := checks.KubeletAllocatesDistinctGPUs
	var e *enlisted
	f := suite.Feature(c).
		Assess("two GPU pods on a real node of an exclusive pool each see their own GPU in NVIDIA_VISIBLE_DEVICES", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			e = enlist(ctx, t, fleet.ModeExclusive)
			holder := map[string]string{}
			for i := range 2 {
				pod := e.probePod(c.ID, fmt.Sprintf("gpu-%d", i), 1)
				if _, err := expect.Admitted(ctx, r.Client, pod); err != nil {
					t.Fatal(err)
				}
				devices, err := visibleDevices(ctx, r, pod)
				if err != nil {
					t.Fatal(err)
				}
				if len(devices) != 1 {
					t.Errorf("pod %s asked for 1 %s and sees %d devices: %v", pod.Name, e.resource, len(devices), devices)
				}
				for _, d := range devices {
					// A replica of a time-sliced GPU is the same GPU.
					gpu, _, _ := strings.Cut(d, "::")
					if other, dup := holder[gpu]; dup {
						t.Errorf("GPU %s on %s was given to both %s and %s", gpu, e.node, other, pod.Name)
					}
					holder[gpu] = pod.Name
				}
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			e.leave(ctx, t)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// visibleDevices waits for the probe pod to run and returns the devices
// its container was given, from its log.
func visibleDevices(ctx context.Context, r *harness.Run, pod *corev1.Pod) ([]string, error) {
	if _, err := expect.PodReaches(ctx, r.Client, pod.Namespace, pod.Name, "run on the real node", harness.RealNodeTimeout, func(p *corev1.Pod) (bool, string) {
		return p.Status.Phase == corev1.PodRunning, expect.Describe(p)
	}); err != nil {
		return nil, err
	}
	v, err := loggedVariable(ctx, r, pod, kubeletplugin.EnvDeviceIDs)
	if err != nil {
		return nil, err
	}
	if v == "" {
		return nil, fmt.Errorf("pod %s/%s runs without %s: the kubelet gave it no device from the plugin", pod.Namespace, pod.Name, kubeletplugin.EnvDeviceIDs)
	}
	return strings.Split(v, ","), nil
}

// loggedVariable is the value of the environment variable the probe
// container of a running pod printed ("" when unset).
func loggedVariable(ctx context.Context, r *harness.Run, pod *corev1.Pod, name string) (string, error) {
	prefix := name + "="
	var value string
	err := wait.For(ctx, fmt.Sprintf("pod %s/%s to log %s", pod.Namespace, pod.Name, prefix), harness.RealNodeTimeout, func(ctx context.Context) (bool, string, error) {
		b, err := r.Client.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, prefix); ok {
				if v != "<unset>" {
					value = v
				}
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("log so far: %q", string(b)), nil
	})
	return value, err
}

func TestKubeletPluginLossWithdrawsGPUs(t *testing.T) {
	c := checks.KubeletPluginLossWithdrawsGPUs
	var e *enlisted
	f := suite.Feature(c).
		Assess("with the device-plugin pod taken off the real node, its allocatable GPUs drop to 0", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			e = enlist(ctx, t, fleet.ModeExclusive)
			p, err := r.DevicePluginPod(ctx, e.node)
			if err != nil {
				t.Fatal(err)
			}
			// As the GPU Operator takes an operand off a node: the label
			// makes the DaemonSet delete the pod and not start another, so
			// what the kubelet does without a plugin stays observable.
			if err := setPluginDeployed(ctx, r, e.node, false); err != nil {
				t.Fatal(err)
			}
			if err := wait.For(ctx, "the device-plugin pod "+p.Name+" to be deleted", harness.RealNodeTimeout, func(ctx context.Context) (bool, string, error) {
				_, err := r.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
				return apierrors.IsNotFound(err), "still there", nil
			}); err != nil {
				t.Fatal(err)
			}
			if err := r.WaitRealNodeAdvertises(ctx, e.node, map[string]int64{e.resource: 0}); err != nil {
				t.Error(err)
			}
			return ctx
		}).
		Assess("once the DaemonSet runs a new plugin pod, they come back", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if e == nil {
				t.Fatal("the previous assessment failed before enlisting the real node")
			}
			r := suite.From(ctx)
			if err := setPluginDeployed(ctx, r, e.node, true); err != nil {
				t.Fatal(err)
			}
			if err := r.WaitRealNodeAdvertises(ctx, e.node, map[string]int64{e.resource: e.advertised}); err != nil {
				t.Error(err)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if e == nil {
				return ctx
			}
			r := suite.From(ctx)
			if err := setPluginDeployed(ctx, r, e.node, true); err != nil {
				t.Error(err)
			}
			if err := harness.WaitDevicePluginReady(ctx, r, harness.RealNodeTimeout); err != nil {
				t.Error(err)
			}
			e.leave(ctx, t)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// setPluginDeployed labels the node off for the device plugin (false), or
// removes that label.
func setPluginDeployed(ctx context.Context, r *harness.Run, node string, on bool) error {
	var v any = "false"
	if on {
		v = nil
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{fakegpu.LabelDeployDevicePlugin: v}}})
	_, err := r.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, b, metav1.PatchOptions{})
	return err
}
