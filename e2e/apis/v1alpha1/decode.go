// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import "github.com/gpupool/gpupool/e2e/apis"

// DecodeFleet reads a fleet document: strictly, then defaults, then
// validation.
func DecodeFleet(data []byte) (*Fleet, error) {
	var f Fleet
	if err := apis.Decode(data, apis.KindFleet, &f); err != nil {
		return nil, err
	}
	SetDefaultsFleet(&f)
	return &f, f.Validate()
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

// DecodeWorkload reads a workload document: strictly, then defaults, then
// validation.
func DecodeWorkload(data []byte) (*Workload, error) {
	var w Workload
	if err := apis.Decode(data, apis.KindWorkload, &w); err != nil {
		return nil, err
	}
	SetDefaultsWorkload(&w)
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return &w, nil
}

// SetDefaultsFleet fills in what a fleet may leave out. Nothing is written
// into the document today: a pool's node CPU, memory and maxPods
// (Pool.NodeCPU, NodeMemory, NodeMaxPods) and its sharing mode (Pool.Mode)
// are read through accessors, because a fleet is written back for the
// suites and patched by candidates, and there an unset field must keep
// meaning "the default" rather than become the user's value. A default
// that must be in the document belongs here.
func SetDefaultsFleet(f *Fleet) {}

// SetDefaultsWorkload fills in what a workload may leave out. Nothing is
// written into the document today: a phase's timeout (Phase.WaitTimeout)
// and a mix entry's shape (MixEntry.Schedulable) are read through
// accessors, so a workload built in code, never decoded, gets them too. A
// default that must be in the document belongs here.
func SetDefaultsWorkload(w *Workload) {}
