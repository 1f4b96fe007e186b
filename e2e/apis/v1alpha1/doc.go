// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package v1alpha1 is version v1alpha1 of gpupool.dev's input documents,
// as kind keeps its Cluster in pkg/apis/config/v1alpha4: the types a user
// writes (Fleet, Candidate, Workload) and every type they reach, their
// defaults and their validation, in one place.
//
// Each kind has a Decode function that does what reading a file of it
// means: strict decoding (apis.Decode: unknown and duplicate fields are
// errors, one document a file), then defaults (SetDefaultsCandidate; a
// fleet's and a workload's are accessors over the unset field), then
// validation, each error naming its field. The types carry what the file
// says, the path it was read from (File), and pure functions over it
// (accessors, and Workload.Pick, the order a workload's pods are made
// in). What needs the cluster or other files stays with the packages that
// do it, which name these types by alias: fleet creates a fleet's nodes,
// candidate loads a candidate's manifests and refuses a gpuOperator
// version other than the embedded chart's, scale checks a workload's
// pools against a fleet.
//
// Nothing here does I/O, so the package is what a tool or a test can
// import to read gpupool's documents without the harness. The field
// reference, docs/reference.md, is generated from this package's source
// (docs/docs_test.go): a field's doc comment is its description there.
//
// A later version (v1alpha2, v1beta1) would sit beside this one, with
// conversions, as kind's v1alpha3 and v1alpha4 did.
package v1alpha1

import "github.com/gpupool/gpupool/e2e/apis"

// The group and version of every document of this package.
const (
	Group      = apis.Group
	Version    = apis.Version
	APIVersion = apis.APIVersion
)
