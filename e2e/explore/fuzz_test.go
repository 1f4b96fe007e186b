// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package explore

import (
	"testing"

	"github.com/gpupool/gpupool/e2e/fuzzseed"
)

// FuzzShapeOf: no corpus document makes shapeOf panic, and a shape it
// accepts has a pod. Seeds: the built-in regression corpus.
func FuzzShapeOf(f *testing.F) {
	fuzzseed.Add(f, "../../manifests/explore/corpus/*/*.yaml", func(data []byte) []byte {
		if docs, err := splitYAML(data); err == nil && len(docs) > 0 {
			return docs[len(docs)-1]
		}
		return nil
	})
	f.Fuzz(func(t *testing.T, doc []byte) {
		s, err := shapeOf(doc)
		if err != nil {
			return
		}
		if s.Pod == nil {
			t.Fatal("an accepted shape has no pod")
		}
	})
}
