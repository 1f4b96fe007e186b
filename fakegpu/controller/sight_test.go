// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpupool/gpupool/fakegpu"
)

// TestContainerEnv: the env a container starts with, as the kubelet
// resolves it (kubelet-facts §2.1): envFrom sources in order, then env,
// a later entry of a name replacing an earlier one.
func TestContainerEnv(t *testing.T) {
	cs := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "t"}, Data: map[string]string{"NVIDIA_VISIBLE_DEVICES": "all", "A": "cm"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec", Namespace: "t"}, Data: map[string][]byte{"A": []byte("secret"), "K": []byte("0")}},
	)
	c := &Controller{client: cs}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "t", Annotations: map[string]string{"gpus": "1"}}}
	ctr := corev1.Container{
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}}, Prefix: "S_"},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Optional: ptr(true)}},
		},
		Env: []corev1.EnvVar{
			{Name: "A", Value: "env"},
			{Name: "FROM_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}, Key: "K"}}},
			{Name: "FROM_ANNOTATION", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['gpus']"}}},
		},
	}
	got, err := c.containerEnv(context.Background(), pod, ctr)
	if err != nil {
		t.Fatal(err)
	}
	want := []fakegpu.EnvVar{
		{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"},
		{Name: "S_A", Value: "secret"}, {Name: "S_K", Value: "0"},
		{Name: "A", Value: "env"}, {Name: "FROM_SECRET", Value: "0"}, {Name: "FROM_ANNOTATION", Value: "1"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("env %v\nwant %v", got, want)
	}
}

// TestPrivileged: what the toolkit counts as privileged (access §1.5).
func TestPrivileged(t *testing.T) {
	for _, tc := range []struct {
		sc   *corev1.SecurityContext
		want bool
	}{
		{nil, false},
		{&corev1.SecurityContext{Privileged: ptr(true)}, true},
		{&corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}, false},
		{&corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}, true},
		{&corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"CAP_SYS_ADMIN"}}}, true},
	} {
		if got := privileged(corev1.Container{SecurityContext: tc.sc}); got != tc.want {
			t.Errorf("%+v: privileged %v, want %v", tc.sc, got, tc.want)
		}
	}
}
