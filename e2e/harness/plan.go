// Package harness ties a run together: it loads the fleet and candidate,
// validates them before anything starts, brings the cluster up, creates the
// fleet, installs the candidate, and tears it all down again. Suites reach
// it through e2e-framework (NewTestEnv) and read the Run from the context.
package harness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpupool/gpupool/e2e/candidate"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/upstream"
	"github.com/gpupool/gpupool/fakegpu"
)

// Defaults: built-in manifests, relative to the manifests directory
// (ManifestPath gives their paths).
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
		if candidateDir, err = ManifestPath(DefaultCandidate); err != nil {
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
		if fleetPath, err = ManifestPath(DefaultFleet); err != nil {
			return nil, err
		}
	}
	fl, err := fleet.Load(fleetPath)
	if err != nil {
		return nil, err
	}
	if fl, err = fl.Patched(filepath.Join(cand.Dir, candidate.MetaFile), cand.Meta.Spec.FleetPatches); err != nil {
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
	for _, s := range fl.NodeSpecs() {
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

// RepoRoot finds the root of the gpupool checkout the working directory is
// in ($GPUPOOL_ROOT overrides), for ReportsDir. Nothing else depends on a
// checkout: the default manifests are built in (Manifests).
func RepoRoot() (string, error) {
	if r := os.Getenv("GPUPOOL_ROOT"); r != "" {
		return r, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && isGPUPoolModule(data) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the gpupool repository root (go.mod of github.com/gpupool/gpupool) above the working directory; set GPUPOOL_ROOT")
		}
		dir = parent
	}
}

func isGPUPoolModule(gomod []byte) bool {
	const want = "module github.com/gpupool/gpupool\n"
	return len(gomod) >= len(want) && string(gomod[:len(want)]) == want
}
