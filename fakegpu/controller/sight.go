// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpupool/gpupool/fakegpu"
)

// recordSight writes what each container of a pod on a simulated GPU node
// sees (fakegpu.AnnotationGPUSight), once: when its devices are decided
// (its Allocate done, or its DRA claims prepared), as the runtime would
// when creating the containers. Every pod counts, GPU request or not: the
// NVIDIA runtime reads the container's own environment (access §1).
func (c *Controller) recordSight(ctx context.Context, stack *fakegpu.Stack, node *corev1.Node, inv fakegpu.NodeInventory, p *corev1.Pod, v *fakegpu.Verdict) error {
	if c.opt.SkipDeviceRecords || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return nil
	}
	recorded, done, err := fakegpu.DecodePodSight(p.Annotations)
	if err != nil {
		recorded, done = nil, false
	}
	if done && !restarted(p, recorded) {
		return nil
	}
	gp := c.gpuPod(p)
	if anyGPULimit(p) && (v == nil || v.Outcome == fakegpu.OutcomeAdmissionRejected || len(v.Devices) == 0) {
		return nil // not started, or not yet allocated
	}
	cdi := podCDI(p)
	if len(podClaimNames(p)) > 0 && cdi == nil {
		return nil // claims not prepared yet; their record requeues the pod
	}
	// Images the node's fleet declared: a malformed annotation declares
	// none, and the facts' own images still count.
	images, _ := fakegpu.DecodeImageEnvs(node.Annotations)
	capacity := nvidiaCapacity(node)
	kn := fakegpu.KubeletNode{Name: node.Name, Labels: node.Labels, Capacity: capacity, Inventory: inv}
	var per map[string][]string
	if v != nil {
		per = stack.ContainerDevices(kn, gp.Containers, v.Devices)
	}
	gpus := fakegpu.NodeGPUsOf(node.Name, inv.Count, capacity)
	served := draServedLimits(p)
	sight := fakegpu.PodSight{}
	var unallocated, unseen []string
	each := func(ctrs []corev1.Container) error {
		for _, ctr := range ctrs {
			if was, ok := recorded[ctr.Name]; ok && was.Image == ctr.Image {
				// Started before with this image: its env was resolved
				// then, and a later ConfigMap change does not reach it.
				sight[ctr.Name] = was
				continue
			}
			env, err := c.containerEnv(ctx, p, ctr)
			if err != nil {
				return err
			}
			resp := fakegpu.AllocateResponse{}
			if stack.Policy != nil {
				resp = stack.Policy.Allocate(per[ctr.Name], gpus.GPUs)
			}
			a := fakegpu.ContainerAccess{
				Name: ctr.Name, Handler: gp.RuntimeHandler, Privileged: privileged(ctr),
				Env:    fakegpu.MergeEnv(images.Env(ctr.Image), resp.Env, env),
				Mounts: append(resp.Mounts, devNullMounts(p, ctr)...),
				CDI:    resp.CDI, CDIAnnotations: resp.CDIAnnotations,
				Allocated: fakegpu.AllocatedDevices(per[ctr.Name]),
			}
			if cdi := append(append([]string(nil), resp.CDI...), resp.CDIAnnotations...); len(cdi) > 0 {
				a.Allocated = cdi
			}
			// The DRA driver's CDI devices reach the containers that use a
			// claim, or a limit the scheduler mapped onto one (over-counted
			// for pods of several claims: each such container gets them all).
			if len(ctr.Resources.Claims) > 0 || len(served[ctr.Name]) > 0 {
				a.CDI = append(a.CDI, cdi...)
				a.Allocated = append(a.Allocated, cdi...)
			}
			s := stack.Sees(gpus, a)
			sight[ctr.Name] = fakegpu.ContainerSight{Sees: s.GPUs, Allocated: a.Allocated, Unallocated: s.Unallocated, Via: s.Via, Image: ctr.Image}
			if len(s.Unallocated) > 0 {
				unallocated = append(unallocated, fmt.Sprintf("container %s sees %s, not allocated to it, via %s", ctr.Name, strings.Join(s.Unallocated, ","), s.Via))
			}
			if len(a.Allocated) > 0 && len(s.GPUs) == 0 {
				unseen = append(unseen, fmt.Sprintf("container %s was allocated %s and sees no GPU: %s", ctr.Name, strings.Join(a.Allocated, ","), s.Via))
			}
		}
		return nil
	}
	if err := each(p.Spec.InitContainers); err != nil {
		return err
	}
	if err := each(p.Spec.Containers); err != nil {
		return err
	}
	if err := each(ephemeral(p)); err != nil {
		return err
	}
	b, _ := json.Marshal(sight)
	if err := c.annotate(ctx, p, fakegpu.AnnotationGPUSight, string(b)); err != nil {
		return err
	}
	if len(unallocated) > 0 {
		c.recorder.Eventf(p, corev1.EventTypeWarning, fakegpu.EventGPUVisibleUnallocated, "%s", strings.Join(unallocated, "; "))
		c.trace("fakegpu: pod %s/%s on %s: %s", p.Namespace, p.Name, node.Name, strings.Join(unallocated, "; "))
	}
	if len(unseen) > 0 {
		c.recorder.Eventf(p, corev1.EventTypeWarning, fakegpu.EventAllocatedGPUUnseen, "%s", strings.Join(unseen, "; "))
	}
	return nil
}

// restarted reports a container that starts after the pod's sight was
// recorded: an image a tenant changed after admission (the kubelet
// restarts the container with it, its ENV and a freshly resolved env), or
// an ephemeral container added through pods/ephemeralcontainers. Either
// runs under the same runtime as the pod, so what it sees is judged anew.
func restarted(p *corev1.Pod, recorded fakegpu.PodSight) bool {
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers, ephemeral(p)} {
		for _, ctr := range list {
			if was, ok := recorded[ctr.Name]; !ok || was.Image != ctr.Image {
				return true
			}
		}
	}
	return false
}

// ephemeral is the pod's ephemeral containers as containers: what the
// runtime is given for them is what it is given for any other.
func ephemeral(p *corev1.Pod) []corev1.Container {
	out := make([]corev1.Container, 0, len(p.Spec.EphemeralContainers))
	for _, e := range p.Spec.EphemeralContainers {
		out = append(out, corev1.Container(e.EphemeralContainerCommon))
	}
	return out
}

// podCDI is the pod's recorded DRA CDI devices (nil: none recorded).
func podCDI(p *corev1.Pod) []string {
	v, ok := p.Annotations[fakegpu.AnnotationCDIDevices]
	if !ok {
		return nil
	}
	out := []string{}
	for _, d := range strings.Split(v, ",") {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

func nvidiaCapacity(node *corev1.Node) map[string]int64 {
	capacity := map[string]int64{}
	for name, q := range node.Status.Capacity {
		if strings.HasPrefix(string(name), fakegpu.LabelPrefix) {
			capacity[string(name)] = q.Value()
		}
	}
	return capacity
}

// privileged is what the toolkit counts as privileged: CAP_SYS_ADMIN in
// the bounding set, which privileged: true and capabilities.add SYS_ADMIN
// both give (access §1.5).
func privileged(ctr corev1.Container) bool {
	sc := ctr.SecurityContext
	if sc == nil {
		return false
	}
	if sc.Privileged != nil && *sc.Privileged {
		return true
	}
	if sc.Capabilities != nil {
		for _, cp := range sc.Capabilities.Add {
			if strings.TrimPrefix(strings.ToUpper(string(cp)), "CAP_") == "SYS_ADMIN" {
				return true
			}
		}
	}
	return false
}

// devNullMounts are the container's mounts of a hostPath /dev/null: the
// one way a pod forges a volume-mount request (access §1.11).
func devNullMounts(p *corev1.Pod, ctr corev1.Container) []fakegpu.Mount {
	var out []fakegpu.Mount
	for _, m := range ctr.VolumeMounts {
		for _, vol := range p.Spec.Volumes {
			if vol.Name == m.Name && vol.HostPath != nil && vol.HostPath.Path == "/dev/null" {
				out = append(out, fakegpu.Mount{Source: "/dev/null", Destination: m.MountPath})
			}
		}
	}
	return out
}

// containerEnv resolves a container's env as the kubelet does: envFrom
// sources in order, then env, a later entry of a name replacing an
// earlier one (kubelet-facts §2.1: k8s pkg/kubelet/kubelet_pods.go
// makeEnvironmentVariables).
// A missing source that is not optional keeps the container from starting
// (CreateContainerConfigError); it then sees nothing, so it is left out.
func (c *Controller) containerEnv(ctx context.Context, p *corev1.Pod, ctr corev1.Container) ([]fakegpu.EnvVar, error) {
	var out []fakegpu.EnvVar
	set := func(name, value string) {
		out = slices.DeleteFunc(out, func(e fakegpu.EnvVar) bool { return e.Name == name })
		out = append(out, fakegpu.EnvVar{Name: name, Value: value})
	}
	for _, from := range ctr.EnvFrom {
		data, err := c.sourceData(ctx, p.Namespace, from.ConfigMapRef, from.SecretRef)
		if err != nil {
			return nil, err
		}
		for _, k := range sortedKeys(data) {
			set(from.Prefix+k, data[k])
		}
	}
	for _, e := range ctr.Env {
		if e.ValueFrom == nil {
			set(e.Name, e.Value)
			continue
		}
		switch vf := e.ValueFrom; {
		case vf.ConfigMapKeyRef != nil:
			data, err := c.sourceData(ctx, p.Namespace, &corev1.ConfigMapEnvSource{LocalObjectReference: vf.ConfigMapKeyRef.LocalObjectReference}, nil)
			if err != nil {
				return nil, err
			}
			if v, ok := data[vf.ConfigMapKeyRef.Key]; ok {
				set(e.Name, v)
			}
		case vf.SecretKeyRef != nil:
			data, err := c.sourceData(ctx, p.Namespace, nil, &corev1.SecretEnvSource{LocalObjectReference: vf.SecretKeyRef.LocalObjectReference})
			if err != nil {
				return nil, err
			}
			if v, ok := data[vf.SecretKeyRef.Key]; ok {
				set(e.Name, v)
			}
		case vf.FieldRef != nil:
			if v, ok := fieldValue(p, vf.FieldRef.FieldPath); ok {
				set(e.Name, v)
			}
		}
	}
	return out, nil
}

// sourceData reads a ConfigMap's or Secret's data; a missing one reads as
// empty (optional, or a container that never starts).
func (c *Controller) sourceData(ctx context.Context, ns string, cm *corev1.ConfigMapEnvSource, sec *corev1.SecretEnvSource) (map[string]string, error) {
	out := map[string]string{}
	switch {
	case cm != nil:
		o, err := c.client.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		for k, v := range o.Data {
			out[k] = v
		}
	case sec != nil:
		o, err := c.client.CoreV1().Secrets(ns).Get(ctx, sec.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		for k, v := range o.Data {
			out[k] = string(v)
		}
		for k, v := range o.StringData {
			out[k] = v
		}
	}
	return out, nil
}

// fieldValue is the downward API's value of path for the fields a tenant
// controls.
func fieldValue(p *corev1.Pod, path string) (string, bool) {
	for _, m := range []struct {
		prefix string
		from   map[string]string
	}{{"metadata.annotations['", p.Annotations}, {"metadata.labels['", p.Labels}} {
		if k, ok := strings.CutPrefix(path, m.prefix); ok {
			v, ok := m.from[strings.TrimSuffix(k, "']")]
			return v, ok
		}
	}
	switch path {
	case "metadata.name":
		return p.Name, true
	case "metadata.namespace":
		return p.Namespace, true
	case "spec.nodeName":
		return p.Spec.NodeName, true
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, true
	}
	return "", false
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
