// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package candidate

import (
	"testing"

	"github.com/gpupool/gpupool/e2e/fuzzseed"
)

// FuzzDecode: no manifest file makes decode or validateObject panic, and
// every object they accept together has an apiVersion, a kind and a name.
// Seeds: the built-in candidates' files.
func FuzzDecode(f *testing.F) {
	fuzzseed.Add(f, "../../manifests/candidates/*/*.yaml", nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := decode(data)
		if err != nil {
			return
		}
		for i, o := range objs {
			if validateObject(o) != nil {
				continue
			}
			if o.GetAPIVersion() == "" || o.GetKind() == "" || (o.GetName() == "" && o.GetGenerateName() == "") {
				t.Fatalf("object %d accepted without apiVersion, kind or name: %v", i, o)
			}
		}
	})
}
