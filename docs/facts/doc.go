// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package facts holds no code: its test checks that every citation of an
// upstream fact in the repository ("stack-facts §4", "access §1.9", ...)
// names a facts file of this directory and a section that file has. The
// short names and the section numbering are in README.md.
package facts
