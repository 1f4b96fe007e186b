// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The in-cluster kwok configuration, from kwok's typed structs: what the
// hand-written YAML said, then every default Stage.
func TestKwokConfig(t *testing.T) {
	cfg, err := kwokConfig("")
	require.NoError(t, err)
	docs := strings.Split(cfg, "\n---\n")
	require.Len(t, docs, 1+len(kwokDefaultStages))
	var c map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(docs[0]), &c))
	assert.Equal(t, "config.kwok.x-k8s.io/v1alpha1", c["apiVersion"])
	assert.Equal(t, "KwokConfiguration", c["kind"])
	opts := c["options"].(map[string]any)
	assert.Equal(t, false, opts["manageAllNodes"])
	assert.Equal(t, "kwok.x-k8s.io/node=fake", opts["manageNodesWithAnnotationSelector"])
	assert.EqualValues(t, 40, opts["nodeLeaseDurationSeconds"])
	assert.EqualValues(t, 10247, opts["nodePort"])
	assert.Equal(t, "10.0.0.0/16", opts["cidr"])
	assert.Equal(t, true, opts["enablePodsOnNodeSyncStreamWatch"])
	for _, d := range docs[1:] {
		assert.Contains(t, d, "kind: Stage")
	}

	// Simulated pools joined to a cluster gpupool did not make: the run's
	// nodes, by label, and no annotation selector beside it.
	cfg, err = kwokConfig("gpupool.dev/run=r-1")
	require.NoError(t, err)
	c = nil
	require.NoError(t, yaml.Unmarshal([]byte(strings.Split(cfg, "\n---\n")[0]), &c))
	opts = c["options"].(map[string]any)
	assert.Equal(t, "gpupool.dev/run=r-1", opts["manageNodesWithLabelSelector"])
	assert.Nil(t, opts["manageNodesWithAnnotationSelector"])
}
