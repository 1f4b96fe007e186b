// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package explore tries the pool contract against pods a tenant could
// write, not only the ones the suites spell out. A generator (built on
// pgregory.net/rapid, which also shrinks a failing pod to a minimal one)
// draws pod shapes over every dimension a tenant controls; an oracle per
// rule judges what the cluster did with each through the API (the
// admission verdict, the node the pod landed on, the pods beside it),
// never by reading the candidate's policy text.
package explore

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gpupool/gpupool/e2e/workload"
)

// How a pod comes to exist: created by the tenant, or from the pod
// template of a workload whose controller creates it (admission then
// judges the controller's request, under the controller's identity).
const (
	ViaPod         = "Pod"
	ViaDeployment  = "Deployment"
	ViaJob         = "Job"
	ViaStatefulSet = "StatefulSet"
)

// Vias lists the ways in drawing order (the first is what a shrunk
// counterexample falls back to).
var Vias = []string{ViaPod, ViaDeployment, ViaJob, ViaStatefulSet}

// LabelShape marks every object exploration creates, so cleanup finds
// them and a controller's pods can be told apart.
const LabelShape = "gpupool.dev/explore-shape"

// LabelRule names the rule a shape was drawn for (its objects and pods).
const LabelRule = "gpupool.dev/explore-rule"

// Shape is one tenant-written pod and how it is submitted.
type Shape struct {
	Via string
	Pod *corev1.Pod
	// Choices says, in words, where the shape departs from a well-formed
	// pod of its pool ("GPU limit in a sidecar init container").
	Choices []string
	// Updates are made to the pod once admitted (and placed, for a
	// placement rule), in order: the rule must hold after them too.
	Updates []Update
}

// String is the shape in one line, for logs.
func (s Shape) String() string {
	what := s.Via + " " + s.Pod.Namespace + "/" + s.Pod.Name
	if len(s.Choices) == 0 {
		return what + " (well-formed)"
	}
	return what + ": " + strings.Join(s.Choices, "; ")
}

// Object is what the tenant submits: the pod itself, or a workload whose
// pod template it is.
func (s Shape) Object() runtime.Object {
	pod := s.Pod.DeepCopy()
	if s.Via == ViaPod || s.Via == "" {
		pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		return pod
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{LabelShape: pod.Name}}
	meta := metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, Labels: pod.Labels}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelShape: pod.Name}, Annotations: pod.Annotations}, Spec: pod.Spec}
	for k, v := range pod.Labels {
		tmpl.Labels[k] = v
	}
	one := int32(1)
	switch s.Via {
	case ViaDeployment:
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
		return &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta,
			Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: sel, Template: tmpl}}
	case ViaStatefulSet:
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
		return &appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}, ObjectMeta: meta,
			Spec: appsv1.StatefulSetSpec{Replicas: &one, Selector: sel, Template: tmpl, ServiceName: pod.Name}}
	case ViaJob:
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
		zero := int32(0)
		return &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: meta,
			Spec: batchv1.JobSpec{Parallelism: &one, Completions: &one, BackoffLimit: &zero, Template: tmpl}}
	}
	panic("explore: unknown way in " + s.Via)
}

// Reproduction is a multi-document YAML that `kubectl apply -f` turns
// into the violation on a cluster `gpupool up` made: the objects the
// shape needs that the candidate does not provide (a namespace, the
// service account, a RuntimeClass), the pods that were already there
// (neighbours on a shared node), then the shape itself.
func Reproduction(header string, s Shape, needs []runtime.Object, neighbours []*corev1.Pod) ([]byte, error) {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(header), "\n") {
		b.WriteString("# " + line + "\n")
	}
	docs := append([]runtime.Object{}, needs...)
	for _, n := range neighbours {
		docs = append(docs, clean(n, true))
	}
	obj := s.Object()
	if p, ok := obj.(*corev1.Pod); ok {
		obj = clean(p, false)
	}
	if v := encodeUpdates(s.Updates); v != "" {
		if m, err := meta.Accessor(obj); err == nil {
			m.SetAnnotations(map[string]string{AnnotationUpdates: v})
		}
	}
	docs = append(docs, obj)
	for i, d := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		y, err := compactYAML(d)
		if err != nil {
			return nil, err
		}
		b.Write(y)
	}
	return []byte(b.String()), nil
}

// clean keeps what a person writes of a pod: its name, namespace, labels
// and spec, without what the apiserver filled in (defaults, the service
// account token volume, DefaultTolerationSeconds' tolerations).
func clean(p *corev1.Pod, fromServer bool) *corev1.Pod {
	out := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}
	out.Name, out.Namespace = p.Name, p.Namespace
	// gpupool's bookkeeping labels (check, rule, shape) reproduce nothing.
	for k, v := range p.Labels {
		if !strings.HasPrefix(k, "gpupool.dev/") {
			if out.Labels == nil {
				out.Labels = map[string]string{}
			}
			out.Labels[k] = v
		}
	}
	spec := p.Spec.DeepCopy()
	token := map[string]bool{}
	var vols []corev1.Volume
	for _, v := range spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			token[v.Name] = true
			continue
		}
		vols = append(vols, v)
	}
	spec.Volumes = vols
	for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range list {
			c := &list[i]
			var mounts []corev1.VolumeMount
			for _, m := range c.VolumeMounts {
				if !token[m.Name] {
					mounts = append(mounts, m)
				}
			}
			c.VolumeMounts = mounts
			c.TerminationMessagePath, c.TerminationMessagePolicy, c.ImagePullPolicy = "", "", ""
			// Requests the apiserver copied from limits (a shape's own
			// are the tenant's choice).
			if fromServer && apiequality.Semantic.DeepEqual(c.Resources.Requests, c.Resources.Limits) {
				c.Resources.Requests = nil
			}
		}
	}
	var tols []corev1.Toleration
	for _, t := range spec.Tolerations {
		if t.Effect == corev1.TaintEffectNoExecute && t.TolerationSeconds != nil &&
			(t.Key == "node.kubernetes.io/not-ready" || t.Key == "node.kubernetes.io/unreachable") {
			continue
		}
		tols = append(tols, t)
	}
	spec.Tolerations = tols
	spec.DeprecatedServiceAccount = ""
	spec.DNSPolicy, spec.SchedulerName = "", ""
	spec.EnableServiceLinks, spec.PreemptionPolicy, spec.Priority = nil, nil, nil
	if spec.RestartPolicy == corev1.RestartPolicyAlways {
		spec.RestartPolicy = ""
	}
	if spec.TerminationGracePeriodSeconds != nil && *spec.TerminationGracePeriodSeconds == 0 {
		spec.TerminationGracePeriodSeconds = nil // the harness's, for fast cleanup
	}
	out.Spec = *spec
	return out
}

// Needs returns the objects a reproduction must create besides the pods:
// the shape's namespace when the harness made it, the harness's service
// account wherever the shape or a neighbour runs under it, a RuntimeClass
// the harness made, and the ResourceClaimTemplate the shape claims from.
func Needs(s Shape, neighbours []*corev1.Pod, harnessNamespaces map[string]bool, harnessRuntimeClasses map[string]*nodev1.RuntimeClass, serviceAccount string, claims []ClaimSpace) []runtime.Object {
	var out []runtime.Object
	ns := s.Pod.Namespace
	if harnessNamespaces[ns] {
		out = append(out, &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	seen := map[string]bool{}
	for _, p := range append([]*corev1.Pod{s.Pod}, neighbours...) {
		if p.Spec.ServiceAccountName == serviceAccount && !seen[p.Namespace] {
			seen[p.Namespace] = true
			out = append(out, &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: metav1.ObjectMeta{Name: serviceAccount, Namespace: p.Namespace}})
		}
	}
	for _, pc := range s.Pod.Spec.ResourceClaims {
		for _, c := range claims {
			if pc.ResourceClaimTemplateName != nil && *pc.ResourceClaimTemplateName == c.Template {
				t := workload.ClaimTemplate("", ns, c.Template, c.Class, 1)
				t.TypeMeta = metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaimTemplate"}
				t.Labels = nil
				out = append(out, t)
			}
		}
	}
	// The ConfigMap or Secret an envFrom names (Space.EnvSource).
	for _, c := range append(append([]corev1.Container(nil), s.Pod.Spec.InitContainers...), s.Pod.Spec.Containers...) {
		for _, from := range c.EnvFrom {
			data := map[string]string{"NVIDIA_VISIBLE_DEVICES": "all"}
			switch {
			case from.ConfigMapRef != nil:
				out = append(out, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
					ObjectMeta: metav1.ObjectMeta{Name: from.ConfigMapRef.Name, Namespace: ns}, Data: data})
			case from.SecretRef != nil:
				out = append(out, &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
					ObjectMeta: metav1.ObjectMeta{Name: from.SecretRef.Name, Namespace: ns}, StringData: data})
			}
		}
	}
	if rc := s.Pod.Spec.RuntimeClassName; rc != nil {
		if obj, ok := harnessRuntimeClasses[*rc]; ok {
			c := obj.DeepCopy()
			c.TypeMeta = metav1.TypeMeta{APIVersion: "node.k8s.io/v1", Kind: "RuntimeClass"}
			c.ObjectMeta = metav1.ObjectMeta{Name: c.Name}
			out = append(out, c)
		}
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func describeList(slot string) string {
	switch slot {
	case slotInit:
		return "an init container"
	case slotSidecar:
		return "a sidecar (restartable init container)"
	}
	return "a container"
}
