package candidate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// Applier server-side applies objects, resolving kinds through discovery.
type Applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
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
// the apiserver's message.
func (c *Candidate) Install(ctx context.Context, a *Applier) error {
	for _, o := range c.Objects {
		if err := a.Apply(ctx, o); err != nil {
			return fmt.Errorf("candidate %s: %s: %w", c.Dir, o.Where(), err)
		}
	}
	return nil
}

// Apply server-side applies one object. A kind the apiserver does not know
// yet (a CRD applied just before) is retried for a few seconds.
func (a *Applier) Apply(ctx context.Context, o Object) error {
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
		return err
	}
	data, err := json.Marshal(o.Object)
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = a.dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := o.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		ri = a.dyn.Resource(mapping.Resource).Namespace(ns)
	}
	force := true
	_, err = ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	if err != nil {
		var se *apierrors.StatusError
		if errors.As(err, &se) {
			return fmt.Errorf("apiserver refused it: %s", se.ErrStatus.Message)
		}
		return err
	}
	return nil
}
