// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import "github.com/gpupool/gpupool/e2e/apis"

// DecodeFleet reads a fleet document: strictly, then validation. A
// fleet's defaults are accessors (Pool.NodeCPU, NodeMemory, NodeMaxPods,
// Pool.Mode), not written into it: a fleet is written back for the suites
// and patched by candidates, and there an unset field keeps meaning the
// default.
func DecodeFleet(data []byte) (*Fleet, error) {
	var f Fleet
	if err := apis.Decode(data, apis.KindFleet, &f); err != nil {
		return nil, err
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

// DecodeCandidate reads a candidate.yaml that was not read from a
// directory: metadata.name is required, as nothing else can name it.
func DecodeCandidate(data []byte) (*Candidate, error) {
	return DecodeCandidateIn(data, "")
}

// DecodeCandidateIn reads the candidate.yaml of a directory named dirName
// (its base name; nothing is read from it): strictly, then defaults, then
// validation.
func DecodeCandidateIn(data []byte, dirName string) (*Candidate, error) {
	var c Candidate
	if err := apis.Decode(data, apis.KindCandidate, &c); err != nil {
		return nil, err
	}
	SetDefaultsCandidate(&c, dirName)
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// DecodeWorkload reads a workload document: strictly, then validation.
// Its defaults are accessors too (Phase.WaitTimeout,
// MixEntry.Schedulable), so a workload built in code gets them as well.
func DecodeWorkload(data []byte) (*Workload, error) {
	var w Workload
	if err := apis.Decode(data, apis.KindWorkload, &w); err != nil {
		return nil, err
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return &w, nil
}
