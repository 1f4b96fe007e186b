// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package workload builds the pods checks submit. A pod is described the
// way a tenant would write it: which pool it aims at (selector and
// tolerations taken from the fleet's data), what it limits, which
// RuntimeClass it names.
package workload

import (
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpupool/gpupool/e2e/fleet"
)

// Labels every check pod carries, so teardown finds them.
const (
	LabelCheck = "gpupool.dev/check"
)

// ServiceAccount is the identity check pods run as: their own, never the
// namespace's default (the harness creates it in every namespace).
const ServiceAccount = "gpupool-workload"

// Image is pinned by digest, as a security floor requires of GPU pods. KWOK
// nodes never pull it.
const Image = "registry.k8s.io/pause:3.10@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a"

// CUDAImage is a CUDA base image: its ENV says NVIDIA_VISIBLE_DEVICES=all
// (access §2.1), which no admission policy can read. Pinned, so
// GPU pods may run it too; KWOK nodes never pull it.
const CUDAImage = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04@sha256:0f6bfcbf267e65123bcc2287e2153dedfc0f24772fb5ce84afe16ac4b2fada95"

// RuntimeClass is the RuntimeClass every GPU pod names under the pool
// contract: the candidate installs it, its admission policies require it.
const RuntimeClass = "nvidia"

// Pod is a pod under construction.
type Pod struct{ *corev1.Pod }

// New starts a pod with one container in ns, labelled with the check id.
func New(check, ns, name string) Pod {
	return Pod{&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			Labels: map[string]string{LabelCheck: check},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName:            ServiceAccount,
			TerminationGracePeriodSeconds: ptr(int64(0)),
			// Pod Security "restricted" compliant, so tenant namespaces
			// that enforce it admit check pods.
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr(true),
				RunAsUser:      ptr(int64(65532)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "main", Image: Image,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}},
			}},
		},
	}}
}

// Limit sets a container limit (extended resources: request = limit).
func (p Pod) Limit(name string, n int64) Pod {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	p.Spec.Containers[0].Resources.Limits[corev1.ResourceName(name)] = q
	return p
}

// InitLimit adds an init container "init", a copy of the main container
// whose only limit is n of name: the device request a kubelet allocates
// first.
func (p Pod) InitLimit(name string, n int64) Pod {
	init := *p.Spec.Containers[0].DeepCopy()
	init.Name = "init"
	init.Resources.Limits = corev1.ResourceList{corev1.ResourceName(name): *resource.NewQuantity(n, resource.DecimalSI)}
	p.Spec.InitContainers = append(p.Spec.InitContainers, init)
	return p
}

// RuntimeClass sets runtimeClassName.
// GPU makes the pod a well-formed GPU pod: the contract's RuntimeClass and
// n of the resource res.
func (p Pod) GPU(res string, n int64) Pod {
	return p.RuntimeClass(RuntimeClass).Limit(res, n)
}

// RuntimeClass names the pod's RuntimeClass.
func (p Pod) RuntimeClass(name string) Pod {
	p.Spec.RuntimeClassName = &name
	return p
}

// NodeSelector adds selector terms.
func (p Pod) NodeSelector(kv map[string]string) Pod {
	if p.Spec.NodeSelector == nil {
		p.Spec.NodeSelector = map[string]string{}
	}
	for k, v := range kv {
		p.Spec.NodeSelector[k] = v
	}
	return p
}

// Tolerate adds a toleration for each taint.
func (p Pod) Tolerate(taints ...corev1.Taint) Pod {
	for _, t := range taints {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{
			Key: t.Key, Operator: corev1.TolerationOpEqual, Value: t.Value, Effect: t.Effect,
		})
	}
	return p
}

// ForPool aims the pod at a pool as its tenants are told to: the pool's
// labels as node selector and tolerations for its taints; with a trust
// domain, that domain's labels and taints too.
func (p Pod) ForPool(pool fleet.Pool, domain *fleet.TrustDomain) Pod {
	p = p.NodeSelector(pool.Labels).Tolerate(pool.Taints...)
	if domain != nil {
		p = p.NodeSelector(domain.Labels).Tolerate(domain.Taints...)
	}
	return p
}

// ClaimFromTemplate gives the pod a ResourceClaim made from template, one
// per pod, and its main container the use of it.
func (p Pod) ClaimFromTemplate(name, template string) Pod {
	p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: name, ResourceClaimTemplateName: &template})
	p.Spec.Containers[0].Resources.Claims = append(p.Spec.Containers[0].Resources.Claims, corev1.ResourceClaim{Name: name})
	return p
}

// ImplicitClassPrefix is how any DeviceClass can be asked for as an
// extended resource, mapped or not (dra-facts §1 "DeviceClass").
const ImplicitClassPrefix = "deviceclass.resource.kubernetes.io/"

// ImplicitDeviceClassResource is the extended resource that asks for a
// device of class.
func ImplicitDeviceClassResource(class string) string { return ImplicitClassPrefix + class }

// ClaimTemplate is a ResourceClaimTemplate asking for count devices of a
// DeviceClass, labelled with the check.
func ClaimTemplate(check, ns, name, class string, count int64) *resourcev1.ResourceClaimTemplate {
	return &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{LabelCheck: check}},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count}}},
		}}},
	}
}

// Without removes a node-selector key.
func (p Pod) Without(selectorKey string) Pod {
	delete(p.Spec.NodeSelector, selectorKey)
	return p
}

func ptr[T any](v T) *T { return &v }

// Unrestricted drops the Pod Security "restricted" settings New adds, as
// a tenant who never heard of them would write the pod.
func (p Pod) Unrestricted() Pod {
	p.Spec.SecurityContext = nil
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].SecurityContext = nil
	}
	return p
}

// Privileged makes the pod privileged with the host's PID namespace, as a
// driver or node agent would run.
func (p Pod) Privileged() Pod {
	p = p.Unrestricted()
	p.Spec.HostPID = true
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
	}
	return p
}

// Image sets the image of every container.
func (p Pod) Image(image string) Pod {
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Image = image
	}
	return p
}

// ServiceAccountName sets the pod's service account.
func (p Pod) ServiceAccountName(name string) Pod {
	p.Spec.ServiceAccountName = name
	return p
}

// Args sets the arguments of every container (its image's entrypoint runs them).
func (p Pod) Args(args ...string) Pod {
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Args = args
	}
	return p
}
