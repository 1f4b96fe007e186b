// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package candidate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/gpupool/gpupool/e2e/apis"
)

// The kinds a cluster's GPU pool config is made of: what a candidate
// installs, less the namespaces and network policies the checks read from
// the cluster itself.
var (
	gvrRuntimeClass  = schema.GroupVersionResource{Group: "node.k8s.io", Version: "v1", Resource: "runtimeclasses"}
	gvrPolicy        = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	gvrBinding       = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}
	gvrClusterPolicy = schema.GroupVersionResource{Group: "nvidia.com", Version: "v1", Resource: "clusterpolicies"}
	gvrConfigMap     = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// Snapshot reads the GPU pool config a cluster runs now (RuntimeClasses,
// admission policies and their bindings, GPU Operator ClusterPolicies and
// the ConfigMaps they name for the device plugin and the MIG manager) and
// writes it to dir as a candidate named as-configured, so a run checks the
// cluster as it is with the code that checks a candidate. source says
// where it was read from (the kubeconfig's server). A cluster that serves
// no ClusterPolicy CRD has no GPU Operator config: that is reported by the
// checks, not here.
func Snapshot(ctx context.Context, dyn dynamic.Interface, dir, source string) (*Candidate, error) {
	var objs []*unstructured.Unstructured
	for _, gvr := range []schema.GroupVersionResource{gvrRuntimeClass, gvrPolicy, gvrBinding, gvrClusterPolicy} {
		list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			if gvr == gvrClusterPolicy && (apierrors.IsNotFound(err) || meta.IsNoMatchError(err)) {
				continue
			}
			return nil, fmt.Errorf("reading the cluster's %s: %w", gvr.Resource, err)
		}
		items := list.Items
		sort.Slice(items, func(i, j int) bool { return items[i].GetName() < items[j].GetName() })
		for i := range items {
			objs = append(objs, &items[i])
		}
	}
	for _, cp := range objs {
		if cp.GetKind() != "ClusterPolicy" {
			continue
		}
		for _, path := range [][]string{{"spec", "devicePlugin", "config", "name"}, {"spec", "migManager", "config", "name"}} {
			name, _, _ := unstructured.NestedString(cp.Object, path...)
			if name == "" {
				continue
			}
			// The operator reads it from its own namespace, which the
			// ClusterPolicy does not name: take every namespace's.
			list, err := dyn.Resource(gvrConfigMap).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
			if err != nil {
				return nil, fmt.Errorf("reading ConfigMap %s named by ClusterPolicy %s.%s: %w", name, cp.GetName(), strings.Join(path[1:], "."), err)
			}
			for i := range list.Items {
				objs = append(objs, &list.Items[i])
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for i, u := range objs {
		stripServerFields(u)
		b, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("%02d-%s-%s.yaml", i+1, strings.ToLower(u.GetKind()), u.GetName())
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return nil, err
		}
	}
	m := Meta{TypeMeta: metav1.TypeMeta{APIVersion: apis.APIVersion, Kind: apis.KindCandidate}}
	m.Metadata.Name = AsConfigured
	m.Spec.Description = "The GPU pool config of the cluster at " + source + ", as read at the start of the run: nothing was installed."
	b, err := yaml.Marshal(m)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, MetaFile), b, 0o644); err != nil {
		return nil, err
	}
	return Load(dir)
}

// AsConfigured names the candidate Snapshot writes.
const AsConfigured = "as-configured"

// stripServerFields drops what the apiserver writes, so the snapshot's
// fingerprint changes only when the config does.
func stripServerFields(u *unstructured.Unstructured) {
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	ann := u.GetAnnotations()
	delete(ann, "kubectl.kubernetes.io/last-applied-configuration")
	if len(ann) == 0 {
		unstructured.RemoveNestedField(u.Object, "metadata", "annotations")
	} else {
		u.SetAnnotations(ann)
	}
	unstructured.RemoveNestedField(u.Object, "status")
}
