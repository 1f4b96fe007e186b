// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package plan loads a run's fleet and candidate and validates them
// before anything starts: the candidate's GPU Operator config, every node
// of the fleet, and whether the machine can hold the fleet at all.
package plan

import (
	"fmt"
	"path/filepath"

	"github.com/gpupool/gpupool/e2e/candidate"
	"github.com/gpupool/gpupool/e2e/dirs"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/upstream"
	"github.com/gpupool/gpupool/fakegpu"
)

// Defaults: built-in manifests, relative to the manifests directory
// (dirs.ManifestPath gives their paths).
const (
	DefaultFleet     = "fleets/reference.yaml"
	DefaultCandidate = "candidates/reference"
)

// Plan is a validated fleet and candidate: everything a run needs to know
// before it starts a single process.
type Plan struct {
	Fleet     *fleet.Fleet
	Candidate *candidate.Candidate
	// Stack is the candidate's GPU Operator config as read from its files;
	// it validated them. In the cluster the fakegpu controller reads the
	// same objects from the apiserver.
	Stack *fakegpu.Stack
	// ServerSideApply installs the candidate as 'kubectl apply
	// --server-side' would, null fields kept; by default they are pruned,
	// as 'kubectl apply' does.
	ServerSideApply bool
}

// Prepare loads and checks the candidate and fleet. candidateDir may be
// empty: then the built-in reference candidate. fleetPath may be empty:
// then the candidate's candidate.yaml names it, else the built-in
// reference fleet.
func Prepare(fleetPath, candidateDir string) (*Plan, error) {
	var err error
	if candidateDir == "" {
		if candidateDir, err = dirs.ManifestPath(DefaultCandidate); err != nil {
			return nil, err
		}
	}
	cand, err := candidate.Load(candidateDir)
	if err != nil {
		return nil, err
	}
	if fleetPath == "" {
		fleetPath = cand.FleetPath()
	}
	if fleetPath == "" {
		if fleetPath, err = dirs.ManifestPath(DefaultFleet); err != nil {
			return nil, err
		}
	}
	fl, err := fleet.Load(fleetPath)
	if err != nil {
		return nil, err
	}
	if fl, err = fleet.Patched(fl, filepath.Join(cand.Dir, candidate.MetaFile), cand.Meta.Spec.FleetPatches); err != nil {
		return nil, err
	}
	defaultMIG, err := DefaultMIGPartedConfig()
	if err != nil {
		return nil, err
	}
	stack, err := fakegpu.StackFromObjects(cand.Unstructured(), defaultMIG)
	if err != nil {
		return nil, fmt.Errorf("candidate %s: %w", cand.Dir, err)
	}
	if err := checkFitsMachine(fl, memTotal()); err != nil {
		return nil, err
	}
	// Build every node now: a pool that cannot be built fails here, not
	// halfway through creating the fleet.
	for _, s := range fleet.NodeSpecs(fl) {
		if _, err := s.Node(); err != nil {
			return nil, fmt.Errorf("fleet %s: %w", fl.File, err)
		}
	}
	return &Plan{Fleet: fl, Candidate: cand, Stack: stack}, nil
}

// DefaultMIGPartedConfig loads the GPU Operator's own default mig-parted
// ConfigMap, as its module ships it.
func DefaultMIGPartedConfig() (*fakegpu.MIGPartedConfig, error) {
	data, err := upstream.GPUOperatorFile(upstream.DefaultMIGPartedConfig)
	if err != nil {
		return nil, err
	}
	cfg, err := fakegpu.ParseMIGPartedConfigMap(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", upstream.GPUOperatorFileName(upstream.DefaultMIGPartedConfig), err)
	}
	return cfg, nil
}

// Settled is what a node with these labels and annotations advertises
// once its simulated stack has settled under the candidate's GPU Operator
// config (fakegpu.Stack.Node); false when the plan holds no config or the
// node carries no GPU inventory.
func (p *Plan) Settled(labels, annotations map[string]string) (fakegpu.NodeResult, bool) {
	if p == nil || p.Stack == nil {
		return fakegpu.NodeResult{}, false
	}
	inv, isGPU, err := fakegpu.Inventory(annotations)
	if !isGPU || err != nil {
		return fakegpu.NodeResult{}, false
	}
	return p.Stack.Node(labels, inv), true
}
