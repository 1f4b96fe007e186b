// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"fmt"
	"strconv"
	"strings"
)

// ToolkitDefaultVersion is the toolkit image tag the simulated GPU Operator
// (v25.3.4) deploys when spec.toolkit.version is unset (access §4.6).
const ToolkitDefaultVersion = "v1.17.8-ubuntu20.04"

// ToolkitFix is one row of the toolkit's security fixes (access §6): the
// CVEs fixed in a toolkit version.
type ToolkitFix struct {
	CVEs    string
	FixedIn [3]int
	// Confirmed is false where the facts name no CVE id yet.
	Confirmed bool
}

// ToolkitFixes is access §6's table, oldest first.
var ToolkitFixes = []ToolkitFix{
	{"CVE-2024-0132, CVE-2024-0133", [3]int{1, 16, 2}, true},
	{"CVE-2024-0134", [3]int{1, 17, 0}, true},
	{"CVE-2024-0135, CVE-2024-0136, CVE-2024-0137", [3]int{1, 17, 3}, true},
	{"CVE-2025-23359", [3]int{1, 17, 4}, true},
	{"CVE-2025-23266, CVE-2025-23267", [3]int{1, 17, 8}, true},
	{"the 2026 hook fix (CVE id unconfirmed)", [3]int{1, 19, 1}, false},
}

// ToolkitVersion parses a toolkit image tag ("v1.17.8-ubuntu20.04",
// "1.17.8") into its version.
func ToolkitVersion(tag string) ([3]int, error) {
	v := strings.TrimPrefix(tag, "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	var out [3]int
	if len(parts) != 3 {
		return out, fmt.Errorf("toolkit version %q: want vMAJOR.MINOR.PATCH[-suffix]", tag)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, fmt.Errorf("toolkit version %q: %q is not a number", tag, p)
		}
		out[i] = n
	}
	return out, nil
}

// ToolkitBelowFloor lists what a toolkit version lacks: every confirmed CVE
// fixed after it, and the v1.18.0–v1.18.1 bug that gives all GPUs for
// NVIDIA_VISIBLE_DEVICES=none (access §1.7). Unconfirmed fixes are in
// advisories, not failures.
func ToolkitBelowFloor(tag string) (failures, advisories []string, err error) {
	v, err := ToolkitVersion(tag)
	if err != nil {
		return nil, nil, err
	}
	for _, f := range ToolkitFixes {
		if less(v, f.FixedIn) {
			msg := fmt.Sprintf("%s: fixed in toolkit v%d.%d.%d", f.CVEs, f.FixedIn[0], f.FixedIn[1], f.FixedIn[2])
			if f.Confirmed {
				failures = append(failures, msg)
			} else {
				advisories = append(advisories, msg)
			}
		}
	}
	if v[0] == 1 && v[1] == 18 && v[2] <= 1 {
		failures = append(failures, "toolkit v1.18.0 and v1.18.1 give every GPU for NVIDIA_VISIBLE_DEVICES=none (fixed in v1.18.2)")
	}
	return failures, advisories, nil
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
