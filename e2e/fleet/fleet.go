// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package fleet reads Fleet files (gpupool.dev/v1alpha1, kind Fleet): the
// node pools a run simulates, as data. The format, its defaults and its
// validation are e2e/apis/v1alpha1's; this package loads fleets, patches
// them and turns them into KWOK Node objects.
package fleet

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gpupool/gpupool/e2e/apis"
	"github.com/gpupool/gpupool/e2e/apis/v1alpha1"
	"github.com/gpupool/gpupool/e2e/input"
	"github.com/gpupool/gpupool/e2e/mergepatch"
)

const (
	APIVersion = apis.APIVersion
	Kind       = apis.KindFleet
)

// Sharing modes a pool can be designed for.
const (
	ModeExclusive   = v1alpha1.ModeExclusive
	ModeMIG         = v1alpha1.ModeMIG
	ModeTimeSlicing = v1alpha1.ModeTimeSlicing
	ModeMPS         = v1alpha1.ModeMPS
)

// The fleet format's types, by their names here (v1alpha1 holds them).
type (
	Fleet             = v1alpha1.Fleet
	Spec              = v1alpha1.FleetSpec
	Image             = v1alpha1.Image
	Pool              = v1alpha1.Pool
	DRA               = v1alpha1.DRA
	Sharing           = v1alpha1.Sharing
	MIGSharing        = v1alpha1.MIGSharing
	ReplicatedSharing = v1alpha1.ReplicatedSharing
	TrustDomain       = v1alpha1.TrustDomain
	PoolPatch         = v1alpha1.PoolPatch
	AutoscaledPool    = v1alpha1.AutoscaledPool
)

// Bounds of a fleet (v1alpha1's).
const (
	MaxGPUsPerNode     = v1alpha1.MaxGPUsPerNode
	MaxReplicas        = v1alpha1.MaxReplicas
	MaxPoolNodes       = v1alpha1.MaxPoolNodes
	MaxPodsPerNode     = v1alpha1.MaxPodsPerNode
	MaxImages          = v1alpha1.MaxImages
	MaxImageEnv        = v1alpha1.MaxImageEnv
	MaxAutoscaledNodes = v1alpha1.MaxAutoscaledNodes
)

// Load reads and validates a fleet file.
func Load(path string) (*Fleet, error) {
	data, err := input.ReadFile(path, input.MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("fleet %s: %w", path, err)
	}
	f.File = path
	return f, nil
}

// WriteFile writes the fleet as a fleet file Load reads back to the same
// Fleet (patches already applied stay applied).
func WriteFile(f *Fleet, path string) error {
	b, err := yaml.Marshal(f)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Parse decodes and validates a fleet document (v1alpha1.DecodeFleet).
// Unknown fields are errors.
func Parse(data []byte) (*Fleet, error) { return v1alpha1.DecodeFleet(data) }

// Patched returns a copy of the fleet with the patches applied, validated
// again. source names where the patches come from, for errors.
func Patched(f *Fleet, source string, patches []PoolPatch) (*Fleet, error) {
	if len(patches) == 0 {
		return f, nil
	}
	data, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	var out Fleet
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	out.File = f.File
	for i, p := range patches {
		field := fmt.Sprintf("%s: spec.fleetPatches[%d]", source, i)
		// A fixed pool, or an autoscaled one (whose nodePool and maxNodes
		// a patch may change too).
		var target any
		if idx := slices.IndexFunc(out.Spec.Pools, func(q Pool) bool { return q.Name == p.Pool }); idx >= 0 {
			target = &out.Spec.Pools[idx]
		} else if idx := slices.IndexFunc(out.Spec.AutoscaledPools, func(q AutoscaledPool) bool { return q.Name == p.Pool }); idx >= 0 {
			target = &out.Spec.AutoscaledPools[idx]
		} else {
			names := f.PoolNames()
			for _, a := range f.Spec.AutoscaledPools {
				names = append(names, a.Name+" (autoscaled)")
			}
			return nil, fmt.Errorf("%s.pool: fleet %s has no pool %q (pools: %s)", field, f.Metadata.Name, p.Pool, strings.Join(names, ", "))
		}
		raw, err := json.Marshal(target)
		if err != nil {
			return nil, err
		}
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			return nil, err
		}
		patched, err := json.Marshal(mergepatch.Apply(doc, p.Patch))
		if err != nil {
			return nil, fmt.Errorf("%s.patch: %w", field, err)
		}
		switch t := target.(type) {
		case *Pool:
			var pool Pool
			if err := yaml.UnmarshalStrict(patched, &pool); err != nil {
				return nil, fmt.Errorf("%s.patch: %w", field, err)
			}
			*t = pool
		case *AutoscaledPool:
			var pool AutoscaledPool
			if err := yaml.UnmarshalStrict(patched, &pool); err != nil {
				return nil, fmt.Errorf("%s.patch: %w", field, err)
			}
			*t = pool
		}
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("fleet %s as patched by %s: %w", f.File, source, err)
	}
	return &out, nil
}
