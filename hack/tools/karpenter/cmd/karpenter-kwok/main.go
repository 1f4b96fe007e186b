// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Command karpenter-kwok is Karpenter with its KWOK cloud provider, as
// sigs.k8s.io/karpenter/kwok builds it, plus the one thing that provider
// cannot say: the devices a machine's DRA driver will publish. Karpenter
// simulates ResourceClaims on a node it has yet to make only from
// InstanceType.DynamicResources.ResourceSliceTemplates, which the KWOK
// provider never fills and its instance-types file cannot carry
// (autoscaler-facts §10). So each entry of that file may also hold
// "resourceSliceTemplates": ResourceSlice specs (resource.k8s.io/v1) of
// one machine, which the provider's own decoding ignores and this reads.
//
// It lives in a module of its own because Karpenter pins older k8s.io
// modules; the replace directives in its go.mod move it onto the control
// plane's v0.37.2 (and controller-runtime v0.24.1, as gpupool links), so
// the packages it shares with them come from Go's build cache.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"unique"

	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kwok "sigs.k8s.io/karpenter/kwok/cloudprovider"
	kwokoptions "sigs.k8s.io/karpenter/kwok/options"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/overlay"
	"sigs.k8s.io/karpenter/pkg/controllers"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/operator"
)

func main() {
	ctx, op := operator.NewOperator()
	instanceTypes, err := kwok.ConstructInstanceTypes(ctx)
	if err == nil {
		err = addTemplates(kwokoptions.FromContext(ctx).InstanceTypesFilePath, instanceTypes)
	}
	if err != nil {
		// Upstream's main logs and goes on with no cloud to buy from; a
		// run would then wait out every scale-up for nothing.
		log.FromContext(ctx).Error(err, "failed constructing instance types")
		os.Exit(1)
	}
	undecorated := kwok.NewCloudProvider(ctx, op.GetClient(), instanceTypes)
	cloudProvider := overlay.Decorate(undecorated, op.GetClient(), op.InstanceTypeStore)
	clusterState := state.NewCluster(op.Clock, op.GetClient(), cloudProvider)
	op.WithControllers(ctx, controllers.NewControllers(ctx, op.Manager, op.Clock, op.GetClient(),
		op.EventRecorder, cloudProvider, undecorated, clusterState, op.InstanceTypeStore)...).Start(ctx)
}

// withTemplates is the part of an instance-types file entry this reads.
type withTemplates struct {
	Name                   string                         `json:"name"`
	ResourceSliceTemplates []resourcev1.ResourceSliceSpec `json:"resourceSliceTemplates"`
}

// addTemplates sets the DRA templates of the file at path on the instance
// types of the same name. The provider keeps these pointers and hands them
// out as they are, so setting them before it is built is enough.
func addTemplates(path string, its []*cloudprovider.InstanceType) error {
	if path == "" {
		return nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var entries []withTemplates
	if err := json.Unmarshal(raw, &entries); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range its {
		byName[it.Name] = it
	}
	for i, e := range entries {
		if len(e.ResourceSliceTemplates) == 0 {
			continue
		}
		it := byName[e.Name]
		if it == nil {
			return fmt.Errorf("%s: entry %d: instance type %q was not built", path, i, e.Name)
		}
		for j, s := range e.ResourceSliceTemplates {
			t, err := template(s)
			if err != nil {
				return fmt.Errorf("%s: %s.resourceSliceTemplates[%d]: %w", path, e.Name, j, err)
			}
			it.DynamicResources.ResourceSliceTemplates = append(it.DynamicResources.ResourceSliceTemplates, t)
		}
	}
	return nil
}

// template is a slice spec as Karpenter's template of it. A template is
// node-local by definition, so the spec's node fields are not read.
func template(s resourcev1.ResourceSliceSpec) (*cloudprovider.ResourceSliceTemplate, error) {
	if s.Driver == "" || s.Pool.Name == "" {
		return nil, fmt.Errorf("driver and pool.name are required")
	}
	if len(s.Devices) > 0 && len(s.SharedCounters) > 0 {
		// Karpenter would ignore the devices (ResourceSliceTemplate).
		return nil, fmt.Errorf("devices and sharedCounters go in separate templates")
	}
	t := &cloudprovider.ResourceSliceTemplate{
		Driver:         unique.Make(s.Driver),
		Pool:           cloudprovider.ResourcePool{Name: unique.Make(s.Pool.Name)},
		SharedCounters: s.SharedCounters,
	}
	for _, d := range s.Devices {
		t.Devices = append(t.Devices, cloudprovider.Device{
			Name:                     unique.Make(d.Name),
			Attributes:               d.Attributes,
			Capacity:                 d.Capacity,
			AllowMultipleAllocations: d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations,
			ConsumesCounters:         d.ConsumesCounters,
		})
	}
	return t, nil
}
