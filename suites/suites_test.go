// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package suites

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpupool/gpupool/e2e/suite"
)

// Every suite directory is linked, and each names itself as go test does.
func TestAllListsEverySuitePackage(t *testing.T) {
	dirs, err := os.ReadDir(".")
	require.NoError(t, err)
	var want []string
	for _, d := range dirs {
		if d.IsDir() {
			want = append(want, d.Name())
		}
	}
	var got []string
	for _, s := range All {
		got = append(got, s.Name)
		assert.Equal(t, "github.com/gpupool/gpupool/suites/"+s.Name, s.Package)
		assert.NotEmpty(t, s.Tests, "suite %s has no tests", s.Name)
		_, err := os.Stat(filepath.Join(s.Name, "main_test.go"))
		assert.NoError(t, err, "suite %s keeps go test working", s.Name)
	}
	assert.Equal(t, want, got)
}

func TestSelect(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{"", names(All), ""},
		{"./suites/...", names(All), ""},
		{"./suites/kubelet", []string{"kubelet"}, ""},
		{"pool, sharing,pool", []string{"pool", "sharing"}, ""},
		{"nope", nil, `no suite "nope"; the suites are access, admission, autoscaling, dra, explore,`},
	} {
		got, err := Select(tc.in)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, names(got), tc.in)
	}
}

func names(ss []*suite.Suite) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

// Every suite is in exactly one phase of the schedule.
func TestEverySuiteHasOnePhase(t *testing.T) {
	seen := map[string]int{}
	for i, phase := range phases {
		for _, s := range phase {
			_, dup := seen[s.Name]
			assert.False(t, dup, "suite %s is in phases %d and %d", s.Name, seen[s.Name], i+1)
			seen[s.Name] = i + 1
		}
	}
	for _, s := range All {
		assert.Equal(t, seen[s.Name], s.Phase, "suite %s", s.Name)
		assert.NotZero(t, s.Phase, "suite %s is in no phase", s.Name)
	}
}
