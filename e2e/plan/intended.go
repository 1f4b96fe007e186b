// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package plan

import (
	"fmt"

	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/fakegpu"
)

// IntendedResource is the extended resource tenants of the pool are told
// to request: what the pool advertises if the GPU stack is configured as
// the fleet designed it. The suites compare it with what nodes actually
// advertise under the candidate.
func (pl *Plan) IntendedResource(p fleet.Pool) (string, error) {
	name, _, err := pl.Intended(p)
	return name, err
}

// Intended is IntendedResource with the count one node of the pool should
// offer of it.
func (pl *Plan) Intended(p fleet.Pool) (string, int64, error) {
	if !p.GPU() {
		return "", 0, fmt.Errorf("pool %s has no GPUs", p.Name)
	}
	sku, err := fakegpu.LookupSKU(p.SKU)
	if err != nil {
		return "", 0, err
	}
	state := fakegpu.StackState{MIGStrategy: fakegpu.MIGStrategyNone}
	switch p.Mode() {
	case fleet.ModeMIG:
		state.MIGStrategy = p.Sharing.MIG.Strategy
		if pl.Stack == nil || pl.Stack.MIGParted == nil {
			return "", 0, fmt.Errorf("pool %s: no mig-parted config to resolve %q", p.Name, p.Sharing.MIG.Config)
		}
		gpus, err := pl.Stack.MIGParted.Apply(p.Sharing.MIG.Config, sku, p.GPUsPerNode)
		if err != nil {
			return "", 0, fmt.Errorf("pool %s: %w", p.Name, err)
		}
		state.MIG = gpus
	case fleet.ModeTimeSlicing, fleet.ModeMPS:
		d := p.Replicated()
		rr := &fakegpu.ReplicatedResources{RenameByDefault: d.RenameByDefault,
			Resources: []fakegpu.ReplicatedResource{{Name: fakegpu.ResourceGPU, Replicas: d.Replicas}}}
		cfg := &fakegpu.DevicePluginConfig{Version: "v1"}
		if p.Mode() == fleet.ModeMPS {
			cfg.Sharing.MPS = rr
		} else {
			cfg.Sharing.TimeSlicing = rr
		}
		state.DevicePlugin = cfg
	}
	ad := fakegpu.Advertise(fakegpu.NodeInventory{SKU: sku, Count: p.GPUsPerNode}, state)
	names := ad.ResourceNames()
	if len(names) == 0 {
		return "", 0, fmt.Errorf("pool %s: its design advertises nothing (%v)", p.Name, ad.Err)
	}
	return names[0], ad.Resources[names[0]], nil
}
