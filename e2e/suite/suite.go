// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package suite is what a suite package (suites/*) is built from. It
// declares the package once, for both ways it runs: under go test (its
// TestMain) and linked into the gpupool binary, which runs it in a child
// process of itself with go test's flags. It makes the e2e-framework
// environment its checks run in, with the harness's Run in the context
// (From), and holds what checks share: a check's feature and namespace
// (Feature), a well-formed pod for a pool, the exploration settings.
package suite

import (
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/gpupool/gpupool/e2e/netns"
)

// Suite is one suite package: its checks as tests, and the env funcs it
// adds around them. The tests live in the package itself, not in _test.go
// files, so the gpupool binary links every suite and runs it with no Go
// toolchain; the package's TestMain runs the same list under go test.
type Suite struct {
	// Name is the package name: what --suites selects.
	Name string
	// Package is the import path, as go test names the package in events.
	Package string
	Tests   []testing.InternalTest
	Funcs   Funcs
	// Phase orders a run: the suites of one phase run side by side on one
	// cluster, the phases one after another. Set by the suites package's
	// schedule, which says what each phase's suites share.
	Phase int
	// env is the package's testenv: set before any test runs.
	env *env.Environment
}

// Funcs are env funcs a suite adds around its checks.
type Funcs struct {
	Setup, Finish env.Func
	// Parallel lets the suite's TestInParallel run its features side by
	// side (e2e-framework's --parallel, for this suite alone).
	Parallel bool
}

// New declares a suite package: testenv is the package variable its
// tests use, tests its Test functions (named as go test would name them).
func New(testenv *env.Environment, funcs Funcs, tests ...func(*testing.T)) *Suite {
	s := &Suite{Funcs: funcs, env: testenv}
	for _, f := range tests {
		// "github.com/gpupool/gpupool/suites/pool.TestResourceNames"
		full := runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
		dot := strings.LastIndexByte(full, '.')
		s.Package, s.Name = full[:dot], full[strings.LastIndexByte(full[:dot], '/')+1:dot]
		s.Tests = append(s.Tests, testing.InternalTest{Name: full[dot+1:], F: f})
	}
	return s
}

// GoTest is a suite package's TestMain body under go test. The m go test
// hands over holds no tests (they are not in _test.go files); the suite's
// own list runs instead, exactly as the gpupool binary runs it.
func GoTest(_ *testing.M, s *Suite) {
	// The test binary, like gpupool, starts the network namespace the
	// autoscaler runs in (e2e/netns) when it brings a cluster up itself.
	if len(os.Args) > 1 && os.Args[1] == netns.Arg {
		os.Exit(netns.Main(os.Args[2:]))
	}
	os.Exit(s.run())
}

// RunLinked runs the suite inside the gpupool binary with go test's flags
// (args, e.g. -test.v=test2json -test.run X) and returns the exit code.
func RunLinked(s *Suite, args []string) int {
	os.Args = append([]string{os.Args[0]}, args...)
	return s.run()
}

func (s *Suite) run() int {
	m := testing.MainStart(testDeps{importPath: s.Package}, s.Tests, nil, nil, nil)
	e, err := newTestEnv(s.Funcs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpupool:", err)
		return 2
	}
	*s.env = e
	return e.Run(m)
}
