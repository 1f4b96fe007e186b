// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package mergepatch applies RFC 7386 JSON merge patches to decoded JSON
// (maps, slices, scalars). Candidates patch their manifests and their
// fleet's pools with it.
package mergepatch

// Apply returns target with patch merged in: objects merge key by key, a
// null deletes the key, anything else (lists included) replaces. target's
// maps are modified in place.
func Apply(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
			continue
		}
		tm[k] = Apply(tm[k], v)
	}
	return tm
}
