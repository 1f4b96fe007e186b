// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package explore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// What a tenant may change in a pod after admission that a rule cares
// about (pod-update-facts): a container's image (the one field of a
// container the API lets an update change); an ephemeral container added
// through the pods/ephemeralcontainers subresource, as `kubectl debug`
// does; and, for a pod it created behind a scheduling gate of its own,
// where the pod goes: tolerations added, nodeSelector entries added,
// required node affinity set where there was none, and the gate removed,
// all in one update. Runtime, resources and identity are immutable.
const (
	// UpdateImage sets a container's image.
	UpdateImage = "image"
	// UpdateEphemeral adds an ephemeral container.
	UpdateEphemeral = "ephemeral-container"
	// UpdateRetarget changes a gated pod's placement and ungates it.
	UpdateRetarget = "retarget"
)

// TenantGate is the scheduling gate a retargeting shape is created with:
// a name of the tenant's choosing, as any creator may set one
// (pod-update-facts §1.4).
const TenantGate = "tenant.example.com/hold"

// AnnotationUpdates on a corpus case's pod lists the updates to make once
// it is admitted (JSON []Update): a reproduction's way of carrying them.
// It is taken off the pod before the pod is submitted.
const AnnotationUpdates = "explore.gpupool.dev/after-admission"

// Update is one change a tenant makes to its admitted pod.
type Update struct {
	Kind string `json:"kind"`
	// Container (UpdateImage) is the container whose image changes.
	Container string `json:"container,omitempty"`
	Image     string `json:"image,omitempty"`
	// Ephemeral (UpdateEphemeral) is the container added.
	Ephemeral *corev1.EphemeralContainer `json:"ephemeral,omitempty"`
	// Tolerations, NodeSelector and Affinity (UpdateRetarget) are added
	// to the gated pod; Affinity becomes its required node affinity,
	// which it had none of. Why says where they aim, for people.
	Tolerations  []corev1.Toleration  `json:"tolerations,omitempty"`
	NodeSelector map[string]string    `json:"nodeSelector,omitempty"`
	Affinity     *corev1.NodeSelector `json:"requiredNodeAffinity,omitempty"`
	Why          string               `json:"why,omitempty"`
}

// String says the update as a kubectl command would do it.
func (u Update) String() string {
	switch u.Kind {
	case UpdateImage:
		return fmt.Sprintf("then sets container %s's image to %s", u.Container, u.Image)
	case UpdateEphemeral:
		return fmt.Sprintf("then adds ephemeral container %s (image %s%s)", u.Ephemeral.Name, u.Ephemeral.Image, ephemeralWords(u.Ephemeral))
	case UpdateRetarget:
		var w []string
		if len(u.Tolerations) > 0 {
			w = append(w, fmt.Sprintf("%d tolerations", len(u.Tolerations)))
		}
		if len(u.NodeSelector) > 0 {
			w = append(w, fmt.Sprintf("nodeSelector %v", u.NodeSelector))
		}
		if u.Affinity != nil {
			w = append(w, "required node affinity")
		}
		return fmt.Sprintf("then, still gated, adds %s (%s) and removes its gate", strings.Join(w, ", "), u.Why)
	}
	return "then " + u.Kind
}

func ephemeralWords(c *corev1.EphemeralContainer) string {
	var w []string
	for _, e := range c.Env {
		w = append(w, fmt.Sprintf("env %s=%s", e.Name, e.Value))
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.Privileged != nil && *sc.Privileged {
			w = append(w, "privileged")
		}
		if sc.Capabilities != nil && len(sc.Capabilities.Add) > 0 {
			w = append(w, fmt.Sprintf("adds %v", sc.Capabilities.Add))
		}
	}
	if len(w) == 0 {
		return ""
	}
	return ", " + strings.Join(w, ", ")
}

// encodeUpdates is AnnotationUpdates' value ("" for none).
func encodeUpdates(us []Update) string {
	if len(us) == 0 {
		return ""
	}
	b, _ := json.Marshal(us)
	return string(b)
}

// takeUpdates removes AnnotationUpdates from p and returns what it said.
func takeUpdates(p *corev1.Pod) ([]Update, error) {
	v, ok := p.Annotations[AnnotationUpdates]
	if !ok {
		return nil, nil
	}
	delete(p.Annotations, AnnotationUpdates)
	if len(p.Annotations) == 0 {
		p.Annotations = nil
	}
	var us []Update
	if err := json.Unmarshal([]byte(v), &us); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", AnnotationUpdates, err)
	}
	for i, u := range us {
		ok := false
		switch u.Kind {
		case UpdateImage:
			ok = u.Container != "" && u.Image != ""
		case UpdateEphemeral:
			ok = u.Ephemeral != nil
		case UpdateRetarget:
			ok = len(u.Tolerations)+len(u.NodeSelector) > 0 || u.Affinity != nil
		}
		if !ok {
			return nil, fmt.Errorf("annotation %s: update %d: want kind %s with container and image, %s with ephemeral, or %s with tolerations, nodeSelector or requiredNodeAffinity", AnnotationUpdates, i, UpdateImage, UpdateEphemeral, UpdateRetarget)
		}
	}
	return us, nil
}

// applyUpdates makes the shape's updates to its admitted pod p as its
// tenant would. It returns the pod as the apiserver has it after them,
// and admission's refusal of the first update refused ("" none): the
// updates after a refused one are not made.
func (c *Cluster) applyUpdates(ctx context.Context, p *corev1.Pod, us []Update) (*corev1.Pod, string, error) {
	for _, u := range us {
		cur, err := c.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && (cur.Status.Phase == corev1.PodFailed || cur.Status.Phase == corev1.PodSucceeded)) {
			// Gone or ended (a kubelet refused it): nothing of it runs
			// again, so no update changes what it sees or runs.
			return p, "", nil
		}
		if err != nil {
			return p, "", err
		}
		// The kubelet writes the pod's status meanwhile: a conflict is
		// tried again on the pod as it is now.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			return c.update(ctx, p, u)
		})
		if denied, ok := refusal(err); ok {
			got, gerr := c.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(gerr) {
				return p, denied, nil
			} else if gerr != nil {
				return p, denied, gerr
			}
			return got, denied, nil
		}
		if apierrors.IsNotFound(err) {
			// Gone between the look and the update (a StatefulSet deletes
			// the pod a kubelet refused): as above, nothing of it runs.
			return p, "", nil
		}
		if err != nil {
			return p, "", fmt.Errorf("updating pod %s/%s (%s): %w", p.Namespace, p.Name, u, err)
		}
	}
	got, err := c.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// Gone since its last update (a StatefulSet deleting the pod its
		// kubelet refused, the autoscaler draining its node): judged as
		// it was, which awaitSight then finds gone.
		return p, "", nil
	} else if err != nil {
		return p, "", err
	}
	return got, "", nil
}

// update makes one update to the pod as the apiserver has it now.
func (c *Cluster) update(ctx context.Context, p *corev1.Pod, u Update) error {
	cur, err := c.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	switch u.Kind {
	case UpdateImage:
		for i := range cur.Spec.Containers {
			if cur.Spec.Containers[i].Name == u.Container {
				cur.Spec.Containers[i].Image = u.Image
			}
		}
		for i := range cur.Spec.InitContainers {
			if cur.Spec.InitContainers[i].Name == u.Container {
				cur.Spec.InitContainers[i].Image = u.Image
			}
		}
		_, err = c.Client.CoreV1().Pods(p.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
	case UpdateEphemeral:
		cur.Spec.EphemeralContainers = append(cur.Spec.EphemeralContainers, *u.Ephemeral.DeepCopy())
		_, err = c.Client.CoreV1().Pods(p.Namespace).UpdateEphemeralContainers(ctx, p.Name, cur, metav1.UpdateOptions{})
	case UpdateRetarget:
		retarget(&cur.Spec, u)
		_, err = c.Client.CoreV1().Pods(p.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
	}
	return err
}

// retarget is UpdateRetarget made to a gated pod's spec: additions only,
// then every gate removed (pod-update-facts §1.3, §1.4, §2).
func retarget(spec *corev1.PodSpec, u Update) {
	spec.Tolerations = append(spec.Tolerations, u.Tolerations...)
	for k, v := range u.NodeSelector {
		if spec.NodeSelector == nil {
			spec.NodeSelector = map[string]string{}
		}
		spec.NodeSelector[k] = v
	}
	if u.Affinity != nil {
		if spec.Affinity == nil {
			spec.Affinity = &corev1.Affinity{}
		}
		if spec.Affinity.NodeAffinity == nil {
			spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
		}
		spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = u.Affinity.DeepCopy()
	}
	spec.SchedulingGates = nil
}

// gated reports whether the shape is created behind the tenant's gate,
// to be retargeted before it is placed.
func (s Shape) gated() bool {
	for _, u := range s.Updates {
		if u.Kind == UpdateRetarget {
			return true
		}
	}
	return false
}
