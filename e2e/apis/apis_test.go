// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package apis_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpupool/gpupool/e2e/candidate"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/scale"
)

// Every file of testdata/invalid is refused, by the reader its name says,
// with an error holding each of its "# want:" lines.
func TestInvalidInputs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			var wants []string
			for _, line := range strings.Split(string(data), "\n") {
				if w, ok := strings.CutPrefix(line, "# want: "); ok {
					wants = append(wants, w)
				}
			}
			require.NotEmpty(t, wants, "%s has no # want: line", name)
			switch {
			case strings.HasPrefix(name, "fleet-"):
				_, err = fleet.Parse(data)
			case strings.HasPrefix(name, "workload-"):
				_, err = scale.ParseWorkload(data)
			case strings.HasPrefix(name, "candidate-"):
				dir := t.TempDir()
				require.NoError(t, os.WriteFile(filepath.Join(dir, candidate.MetaFile), data, 0o644))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "10-cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: b}\n"), 0o644))
				_, err = candidate.Load(dir)
			default:
				t.Fatalf("%s: the name says no reader (fleet-, workload-, candidate-)", name)
			}
			require.Error(t, err, "%s was accepted", name)
			for _, w := range wants {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}
