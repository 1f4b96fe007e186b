// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package differential

import (
	"testing"

	"github.com/gpupool/gpupool/e2e/fuzzseed"
)

// FuzzParse: no shape file makes Parse panic, and a shape it accepts has
// a pod that PodFor can place. Seeds: the built-in corpus.
func FuzzParse(f *testing.F) {
	fuzzseed.Add(f, "../../manifests/differential/*.yaml", nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("shape.yaml", data)
		if err != nil {
			return
		}
		pool, domain := sharedPool()
		p := s.PodFor(Target{Side: SideSim, Namespace: "tenant-a", Pool: pool, Domain: domain, Node: "n", Resource: "nvidia.com/gpu"})
		if p == nil || len(p.Spec.Containers) == 0 {
			t.Fatal("an accepted shape gave no pod")
		}
	})
}
