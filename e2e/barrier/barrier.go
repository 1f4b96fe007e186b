// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package barrier establishes, once per run, that the candidate's
// admission policies are live in the apiserver, so every check after it
// can take an admission verdict from a single request instead of retrying
// until a deadline.
package barrier

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"

	"github.com/gpupool/gpupool/e2e/wait"
)

//go:embed barrier.yaml
var manifest []byte

// Label marks the probe pod the barrier policy denies.
const Label = "gpupool.dev/admission-barrier"

// Timeout bounds the wait for the policy to go live (the apiserver
// recompiles policies every second).
var Timeout = 30 * time.Second

// Await creates the barrier policy, waits until the apiserver denies the
// probe with it, and removes it again. Policies created before the call
// are then live. (On a cluster with several apiservers, each has its own
// view: the barrier holds for the one that answered.)
func Await(ctx context.Context, cs kubernetes.Interface, namespace string) (time.Duration, error) {
	start := time.Now()
	policy, binding, err := objects()
	if err != nil {
		return 0, err
	}
	api := cs.AdmissionregistrationV1()
	defer func() {
		ctx := context.WithoutCancel(ctx)
		_ = api.ValidatingAdmissionPolicyBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
		_ = api.ValidatingAdmissionPolicies().Delete(ctx, policy.Name, metav1.DeleteOptions{})
	}()
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return 0, fmt.Errorf("admission barrier: %w", err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return 0, fmt.Errorf("admission barrier: %w", err)
	}
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gpupool-admission-barrier", Namespace: namespace, Labels: map[string]string{Label: "probe"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "probe"}}},
	}
	err = wait.Every(ctx, "the apiserver to enforce the admission barrier policy (created after the candidate's)", Timeout, 50*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		_, err := cs.CoreV1().Pods(namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case err == nil:
			return false, "the probe pod was admitted", nil
		case strings.Contains(err.Error(), "gpupool admission barrier"):
			return true, "", nil
		}
		return false, "the probe pod was refused by something else: " + err.Error(), nil
	})
	return time.Since(start), err
}

func objects() (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding, error) {
	r := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var p admissionv1.ValidatingAdmissionPolicy
	var b admissionv1.ValidatingAdmissionPolicyBinding
	if err := r.Decode(&p); err != nil {
		return nil, nil, fmt.Errorf("barrier.yaml policy: %w", err)
	}
	if err := r.Decode(&b); err != nil {
		return nil, nil, fmt.Errorf("barrier.yaml binding: %w", err)
	}
	return &p, &b, nil
}
