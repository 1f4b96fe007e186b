// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"context"
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
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/wait"
	"github.com/gpupool/gpupool/e2e/workload"
	"github.com/gpupool/gpupool/fakegpu"
	"github.com/gpupool/gpupool/fakegpu/kubeletplugin"
)

func TestKubeletPreparesDRAClaims(t *testing.T) {
	c := checks.KubeletDRAClaimsPrepared
	var e *enlisted
	f := suite.Feature(c).
		Assess("on a real node of a DRA pool, a claim pod, a pod limiting the pool's resource and one limiting the class's own resource each run with a device the DRA plugin prepared, no GPU handed out twice", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			r := suite.From(ctx)
			e = enlistPool(ctx, t, r.FirstDRAPool(t))
			class, err := r.DeviceClassMapping(ctx, e.resource)
			if err != nil {
				t.Fatal(err)
			}
			tmpl := workload.ClaimTemplate(c.ID, e.ns, "kubelet-one-gpu", class, 1)
			if _, err := r.Client.ResourceV1().ResourceClaimTemplates(e.ns).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating ResourceClaimTemplate %s/%s: %v", e.ns, tmpl.Name, err)
			}
			claimPod := workload.New(c.ID, e.ns, "dra-claim").ForPool(e.pool, e.domain).RuntimeClass(workload.RuntimeClass).
				ClaimFromTemplate("gpu", tmpl.Name).NodeSelector(map[string]string{"kubernetes.io/hostname": e.node}).
				Image(e.image).Args("probe", kubeletplugin.EnvDeviceIDs).Pod
			limitPod := e.probePod(c.ID, "dra-limit", 1)
			// The class's own extended resource: another way a tenant asks.
			implicitPod := workload.New(c.ID, e.ns, "dra-implicit").ForPool(e.pool, e.domain).GPU(workload.ImplicitDeviceClassResource(class), 1).
				NodeSelector(map[string]string{"kubernetes.io/hostname": e.node}).
				Image(e.image).Args("probe", kubeletplugin.EnvDeviceIDs).Pod
			uuids, err := draUUIDs(ctx, r, e.node)
			if err != nil {
				t.Fatal(err)
			}
			holder := map[string]string{}
			for _, pod := range []*corev1.Pod{claimPod, limitPod, implicitPod} {
				if _, err := expect.Admitted(ctx, r.Client, pod); err != nil {
					t.Fatal(err)
				}
				// A pod served some other way still counts its GPUs.
				gpus, err := heldGPUs(ctx, r, pod, uuids)
				if err != nil {
					t.Error(err)
				}
				for _, g := range gpus {
					if other, dup := holder[g]; dup {
						t.Errorf("GPU %s on %s was handed to both %s and %s (dra-facts §6.2)", g, e.node, other, pod.Name)
					}
					holder[g] = pod.Name
				}
			}
			return ctx
		}).
		Assess("once they are deleted, their devices are unprepared: a pod asking every device of the node runs with all of them", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if e == nil {
				t.Fatal("the previous assessment failed before enlisting the real node")
			}
			r := suite.From(ctx)
			if err := deleteGracefully(ctx, r, e.ns, "dra-claim", "dra-limit", "dra-implicit"); err != nil {
				t.Fatal(err)
			}
			uuids, err := draUUIDs(ctx, r, e.node)
			if err != nil {
				t.Fatal(err)
			}
			all := e.probePod(c.ID, "dra-all", e.advertised)
			if _, err := expect.Admitted(ctx, r.Client, all); err != nil {
				t.Fatal(err)
			}
			gpus, err := heldGPUs(ctx, r, all, uuids)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(gpus)) != e.advertised {
				t.Errorf("pod %s asked for all %d devices of %s and holds %d: %v", all.Name, e.advertised, e.node, len(gpus), gpus)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if e == nil {
				return ctx
			}
			r := suite.From(ctx)
			// Gracefully: forced, the devices would still be prepared
			// when whatever runs next on the node is given them.
			if err := deleteGracefully(ctx, r, e.ns, "dra-claim", "dra-limit", "dra-implicit", "dra-all"); err != nil {
				t.Error(err)
			}
			e.leave(ctx, t)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// deleteGracefully deletes the pods and waits until they and their
// ResourceClaims are gone. Not
// forced: a pod deleted with grace 0 leaves the API at once, the
// resourceclaim controller deallocates its claims and the scheduler hands
// their devices to the next pod while the kubelet still runs its
// containers with the devices prepared (seen on kind; the DRA plugin then
// refuses the new claim until the kubelet unprepares the old one). A
// graceful deletion ends only once the kubelet has unprepared them.
func deleteGracefully(ctx context.Context, r *harness.Run, ns string, names ...string) error {
	grace := int64(5) // the probe exits at once on SIGTERM
	owned := map[types.UID]bool{}
	for _, n := range names {
		if p, err := r.Client.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{}); err == nil {
			owned[p.UID] = true
		}
		if err := r.Client.CoreV1().Pods(ns).Delete(ctx, n, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	err := wait.For(ctx, fmt.Sprintf("pods %v to be deleted by the kubelet", names), harness.RealNodeTimeout, func(ctx context.Context) (bool, string, error) {
		var left []string
		for _, n := range names {
			p, err := r.Client.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return false, "", err
			default:
				left = append(left, n+" ("+expect.Describe(p)+")")
			}
		}
		return len(left) == 0, "left: " + strings.Join(left, ", "), nil
	})
	if err != nil {
		return err
	}
	// The next shape starts from the devices these claims held.
	return expect.ClaimsGone(ctx, r.Client, owned)
}

// draUUIDs maps the devices the node's DRA plugin publishes to their GPU
// uuids.
func draUUIDs(ctx context.Context, r *harness.Run, node string) (map[string]string, error) {
	devs, err := r.DRADevices(ctx, node)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, d := range devs {
		if a, ok := d.Attributes["uuid"]; ok && a.StringValue != nil {
			out[d.Name] = *a.StringValue
		}
	}
	return out, nil
}

// heldGPUs waits for the pod to run on the real node and returns the GPUs
// it holds: those the DRA plugin prepared for it (the CDI devices it
// recorded on the pod), and any the device plugin gave it (its probe
// prints NVIDIA_VISIBLE_DEVICES). A pod with no DRA device is an error:
// on a DRA node the kubelet served it some other way.
func heldGPUs(ctx context.Context, r *harness.Run, pod *corev1.Pod, uuids map[string]string) ([]string, error) {
	p, err := expect.PodReaches(ctx, r.Client, pod.Namespace, pod.Name, "run on the real node with its claims prepared", harness.RealNodeTimeout, func(p *corev1.Pod) (bool, string) {
		return p.Status.Phase == corev1.PodRunning, expect.Describe(p)
	})
	if err != nil {
		return nil, err
	}
	env, err := loggedVariable(ctx, r, pod, kubeletplugin.EnvDeviceIDs)
	if err != nil {
		return nil, err
	}
	var gpus []string
	if env != "" {
		for _, d := range strings.Split(env, ",") {
			gpu, _, _ := strings.Cut(d, "::") // a time-sliced replica is its GPU
			gpus = append(gpus, gpu)
		}
	}
	ids := p.Annotations[fakegpu.AnnotationCDIDevices]
	if ids == "" {
		return gpus, fmt.Errorf("pod %s runs on %s of a DRA pool with no device prepared by the DRA kubelet plugin (%s %q, %s=%q): the kubelet served it through a device plugin", pod.Name, p.Spec.NodeName, fakegpu.AnnotationCDIDevices, ids, kubeletplugin.EnvDeviceIDs, env)
	}
	for _, id := range strings.Split(ids, ",") {
		_, dev, ok := fakegpu.CDIDevice(id)
		if !ok {
			return gpus, fmt.Errorf("pod %s: CDI device %q is not the driver's k8s.gpu.nvidia.com/claim=<claimUID>-<device>", pod.Name, id)
		}
		uuid, ok := uuids[dev]
		if !ok {
			return gpus, fmt.Errorf("pod %s was prepared device %s, which node %s does not publish", pod.Name, dev, p.Spec.NodeName)
		}
		gpus = append(gpus, uuid)
	}
	return gpus, nil
}
