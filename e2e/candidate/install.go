// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package candidate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/gpupool/gpupool/e2e/wait"
)

// FieldManager is the server-side apply manager gpupool applies as.
const FieldManager = "gpupool"

// Applier applies objects, resolving kinds through discovery.
type Applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	// ServerSide applies each manifest as written, as
	// 'kubectl apply --server-side' does. Otherwise null fields are pruned
	// first, as 'kubectl apply' does by default: a bare 'plugin:' in a
	// manifest is no field at all, not a null the schema refuses.
	ServerSide bool
	// Labels are added to every object applied: a run in a cluster it did
	// not make labels what it installs, to remove it afterwards.
	Labels map[string]string
}

// NewApplier builds an Applier for the cluster.
func NewApplier(rc *rest.Config) (*Applier, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &Applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// Install applies the candidate's objects in order. The first refusal
// stops the install with an error that names the file, the document and
// the apiserver's message. It returns the resourceVersion each object got,
// keyed "Kind/namespace/name", so a caller can wait for controllers to see them.
func (c *Candidate) Install(ctx context.Context, a *Applier) (map[string]string, error) {
	applied := map[string]string{}
	for _, o := range c.Objects {
		rv, err := a.Apply(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("candidate %s: %s: %w", c.Dir, o.Where(), err)
		}
		applied[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = rv
	}
	return applied, nil
}

// Apply server-side applies one object and returns its new
// resourceVersion. A kind the apiserver does not know yet (a CRD applied
// just before) is retried for a few seconds.
func (a *Applier) Apply(ctx context.Context, o Object) (string, error) {
	gvk := o.GroupVersionKind()
	var mapping *meta.RESTMapping
	err := wait.For(ctx, "the apiserver to serve "+gvk.String(), 15*time.Second, func(context.Context) (bool, string, error) {
		m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			a.mapper.Reset()
			return false, err.Error(), nil
		}
		mapping = m
		return err == nil, "", err
	})
	if err != nil {
		return "", err
	}
	obj, nulls := o.Object, NullFields(o.Object)
	if !a.ServerSide {
		obj = pruneNulls(obj)
	}
	if len(a.Labels) > 0 {
		u := unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
		l := u.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		for k, v := range a.Labels {
			l[k] = v
		}
		u.SetLabels(l)
		obj = u.Object
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	ri := a.resource(mapping, o)
	force := true
	got, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	if err != nil {
		var se *apierrors.StatusError
		if errors.As(err, &se) {
			msg := fmt.Sprintf("apiserver refused it: %s", se.ErrStatus.Message)
			if a.ServerSide && len(nulls) > 0 {
				// The two modes disagree about this manifest: say so.
				msg += fmt.Sprintf(" (server-side apply keeps its null fields %s; 'kubectl apply' without --server-side, gpupool's default, prunes them)", strings.Join(nulls, ", "))
			}
			return "", errors.New(msg)
		}
		return "", err
	}
	return got.GetResourceVersion(), nil
}

// resource is the client for o's kind, in o's namespace (default if it
// names none) when the kind is namespaced.
func (a *Applier) resource(m *meta.RESTMapping, o Object) dynamic.ResourceInterface {
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return a.dyn.Resource(m.Resource)
	}
	ns := o.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return a.dyn.Resource(m.Resource).Namespace(ns)
}

// Existing lists the candidate's objects the cluster already has without
// the owner label: installing over them would change what the run cannot
// restore, so a run in someone else's cluster refuses before applying
// anything.
func (c *Candidate) Existing(ctx context.Context, a *Applier, owner string) ([]string, error) {
	var out []string
	for _, o := range c.Objects {
		gvk := o.GroupVersionKind()
		m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			continue // its kind is not served yet: no such object either
		}
		if err != nil {
			return nil, err
		}
		got, err := a.resource(m, o).Get(ctx, o.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.Where(), err)
		}
		if _, ours := got.GetLabels()[owner]; !ours {
			out = append(out, o.Where())
		}
	}
	return out, nil
}

// NullFields lists the paths of the null fields in a manifest, sorted.
func NullFields(obj map[string]any) []string {
	var out []string
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch t := v.(type) {
		case nil:
			out = append(out, path)
		case map[string]any:
			for k, e := range t {
				walk(e, strings.TrimPrefix(path+"."+k, "."))
			}
		case []any:
			for i, e := range t {
				walk(e, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
	walk(obj, "")
	sort.Strings(out)
	return out
}

// pruneNulls returns a copy of obj without its null map entries, as
// kubectl's client-side apply sends it.
func pruneNulls(obj map[string]any) map[string]any {
	var prune func(v any) any
	prune = func(v any) any {
		switch t := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(t))
			for k, e := range t {
				if e != nil {
					out[k] = prune(e)
				}
			}
			return out
		case []any:
			out := make([]any, len(t))
			for i, e := range t {
				out[i] = prune(e)
			}
			return out
		}
		return v
	}
	return prune(obj).(map[string]any)
}

// Without is the candidate less the objects drop picks, and those objects:
// what a run leaves out of one cluster but installs in another.
func (c *Candidate) Without(drop func(Object) bool) (*Candidate, []Object) {
	out := *c
	out.Objects = nil
	var dropped []Object
	for _, o := range c.Objects {
		if drop(o) {
			dropped = append(dropped, o)
			continue
		}
		out.Objects = append(out.Objects, o)
	}
	return &out, dropped
}
