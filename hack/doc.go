// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package hack holds no code: its tests keep the repository's rules that
// no compiler checks: the module versions the build scripts rely on
// (versions_test.go) and the layering of the packages (layering_test.go).
package hack
