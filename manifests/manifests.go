// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package manifests embeds gpupool's built-in data: the reference and
// broken candidates, the fleets, the scale workloads, the exploration
// corpus and the differential corpus. A gpupool binary carries them, so it
// runs from any directory; e2e/harness unpacks them to a real directory
// (harness.Manifests), since candidates name files relative to themselves.
//
// This package is data only: it imports nothing of the project.
package manifests

import (
	"embed"
	"io/fs"
)

//go:embed candidates differential explore fleets workloads
var files embed.FS

// FS returns the built-in manifests, rooted at this directory: paths such
// as "candidates/reference/candidate.yaml" or "fleets/reference.yaml".
func FS() fs.FS { return files }
