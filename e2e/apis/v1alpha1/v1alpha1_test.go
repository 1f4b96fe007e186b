// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpupool/gpupool/manifests"
)

// invalidCase is one file of testdata/invalid: a document gpupool must
// refuse, handed as its name's prefix says, and the text the error must
// hold.
type invalidCase struct {
	Name  string
	Data  []byte
	Wants []string
}

// invalidCases reads testdata/invalid, each file's "# want:" lines its
// wants.
func invalidCases(t *testing.T, prefix string) []invalidCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", prefix+"*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no testdata/invalid/%s*.yaml", prefix)
	var out []invalidCase
	for _, p := range files {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		c := invalidCase{Name: strings.TrimSuffix(filepath.Base(p), ".yaml"), Data: data}
		for _, line := range strings.Split(string(data), "\n") {
			if w, ok := strings.CutPrefix(line, "# want: "); ok {
				c.Wants = append(c.Wants, w)
			}
		}
		require.NotEmpty(t, c.Wants, "%s has no # want: line", p)
		out = append(out, c)
	}
	return out
}

// Every file of testdata/invalid is refused, by the decoder its name says
// (fleet-, workload-, candidate-: a candidate.yaml in a directory named
// dir), with an error holding each of its "# want:" lines.
func TestInvalidInputs(t *testing.T) {
	decoders := map[string]func([]byte) error{
		"fleet-":     func(d []byte) error { _, err := DecodeFleet(d); return err },
		"workload-":  func(d []byte) error { _, err := DecodeWorkload(d); return err },
		"candidate-": func(d []byte) error { _, err := DecodeCandidateIn(d, "dir"); return err },
	}
	all, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	require.NoError(t, err)
	covered := 0
	for prefix, decode := range decoders {
		for _, c := range invalidCases(t, prefix) {
			covered++
			t.Run(c.Name, func(t *testing.T) {
				err := decode(c.Data)
				require.Error(t, err, "%s was accepted", c.Name)
				for _, w := range c.Wants {
					assert.Contains(t, err.Error(), w)
				}
			})
		}
	}
	assert.Equal(t, len(all), covered, "a file of testdata/invalid whose name says no decoder (fleet-, workload-, candidate-)")
}

// Every built-in document decodes, and means what it did: a default is
// read through an accessor, never written into the document.
func TestBuiltInsDecode(t *testing.T) {
	m := manifests.FS()
	for _, glob := range []string{"fleets/*.yaml", "workloads/*.yaml", "candidates/*/candidate.yaml"} {
		files, err := fs.Glob(m, glob)
		require.NoError(t, err)
		require.NotEmpty(t, files, glob)
		for _, p := range files {
			data, err := fs.ReadFile(m, p)
			require.NoError(t, err)
			switch {
			case strings.HasPrefix(p, "fleets/"):
				_, err = DecodeFleet(data)
			case strings.HasPrefix(p, "workloads/"):
				_, err = DecodeWorkload(data)
			default:
				var c *Candidate
				dir := path.Base(path.Dir(p))
				c, err = DecodeCandidateIn(data, dir)
				if err == nil {
					assert.Equal(t, dir, c.Metadata.Name, p)
				}
			}
			assert.NoError(t, err, p)
		}
	}
}

// A candidate.yaml read on its own, with no directory to name it, needs
// its name.
func TestCandidateWithoutDirectoryNeedsName(t *testing.T) {
	_, err := DecodeCandidate([]byte("apiVersion: gpupool.dev/v1alpha1\nkind: Candidate\nspec: {}\n"))
	require.ErrorContains(t, err, "metadata.name: required")
	c, err := DecodeCandidateIn([]byte("apiVersion: gpupool.dev/v1alpha1\nkind: Candidate\nspec: {}\n"), "mine")
	require.NoError(t, err)
	assert.Equal(t, "mine", c.Metadata.Name)
}

// Defaults are read through accessors, so a pool or phase built in code
// gets them as a decoded one does.
func TestDefaults(t *testing.T) {
	var p Pool
	assert.Equal(t, "64", p.NodeCPU())
	assert.Equal(t, "512Gi", p.NodeMemory())
	assert.Equal(t, 110, p.NodeMaxPods())
	p = Pool{CPU: "8", Memory: "32Gi", MaxPods: 30}
	assert.Equal(t, []any{"8", "32Gi", 30}, []any{p.NodeCPU(), p.NodeMemory(), p.NodeMaxPods()})
	assert.Equal(t, DefaultPhaseTimeout, Phase{}.WaitTimeout())
	assert.Equal(t, "gpu-operator", GPUOperatorValues{}.ReleaseNamespace())

	f, err := DecodeFleet([]byte("apiVersion: gpupool.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n  pools: [{name: cpu, nodes: 1}]\n"))
	require.NoError(t, err)
	assert.Empty(t, f.Spec.Pools[0].CPU, "a default is not written into the fleet: it is written back and patched")
}
