// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package candidate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/yaml"
)

// A bare key in YAML is a null: kubectl apply prunes it, server-side apply
// sends it (and a structural schema refuses a null object).
func TestNullFieldsArePrunedAsKubectlApplyDoes(t *testing.T) {
	var obj map[string]any
	if err := yaml.Unmarshal([]byte("spec:\n  validator:\n    plugin:\n    env: [{name: A, value: b}]\n  list: [1, null]\n"), &obj); err != nil {
		t.Fatal(err)
	}
	assert.Equal(t, []string{"spec.list[1]", "spec.validator.plugin"}, NullFields(obj))
	pruned := pruneNulls(obj)
	assert.Equal(t, []string{"spec.list[1]"}, NullFields(pruned), "map entries pruned; list items kept, as kubectl keeps them")
	assert.NotContains(t, pruned["spec"].(map[string]any)["validator"], "plugin")
	assert.Contains(t, obj["spec"].(map[string]any)["validator"], "plugin", "the manifest itself is left as written")
}
