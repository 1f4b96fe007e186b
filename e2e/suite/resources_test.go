// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import "testing"

// A failure says what a node advertises in words, never as a Go map.
func TestResources(t *testing.T) {
	for _, tc := range []struct {
		in   map[string]int64
		want string
	}{
		{nil, "no GPU resource"},
		{map[string]int64{"nvidia.com/mig-1g.5gb": 56, "nvidia.com/gpu": 0}, "nvidia.com/gpu 0, nvidia.com/mig-1g.5gb 56"},
	} {
		if got := Resources(tc.in); got != tc.want {
			t.Errorf("Resources(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
