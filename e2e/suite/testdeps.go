// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import (
	"errors"
	"io"
	"reflect"
	"regexp"
	"sync"
	"time"
)

// testDeps is what testing.MainStart needs from its caller; go test
// generates one from testing/internal/testdeps, which no other program may
// import. A suite needs only test matching: no profiles, fuzzing or
// coverage. testing.MainStart is not covered by the Go 1 promise, so this
// type follows the toolchain go.mod pins; a new toolchain that changes the
// interface fails the build here, not a run.
type testDeps struct{ importPath string }

var (
	matchMu  sync.Mutex
	matchPat string
	matchRE  *regexp.Regexp
)

func (testDeps) MatchString(pat, str string) (bool, error) {
	matchMu.Lock()
	defer matchMu.Unlock()
	if matchRE == nil || matchPat != pat {
		re, err := regexp.Compile(pat)
		if err != nil {
			return false, err
		}
		matchPat, matchRE = pat, re
	}
	return matchRE.MatchString(str), nil
}

func (d testDeps) ImportPath() string                        { return d.importPath }
func (testDeps) ModulePath() string                          { return "github.com/gpupool/gpupool" }
func (testDeps) SetPanicOnExit0(bool)                        {}
func (testDeps) StartCPUProfile(io.Writer) error             { return errNoProfiles }
func (testDeps) StopCPUProfile()                             {}
func (testDeps) StartTestLog(io.Writer)                      {}
func (testDeps) StopTestLog() error                          { return nil }
func (testDeps) WriteProfileTo(string, io.Writer, int) error { return errNoProfiles }
func (testDeps) ResetCoverage()                              {}
func (testDeps) SnapshotCoverage()                           {}

// corpusEntry is testing's (an alias of an unnamed struct, so this one is
// the same type).
type corpusEntry = struct {
	Parent     string
	Path       string
	Data       []byte
	Values     []any
	Generation int
	IsSeed     bool
}

func (testDeps) CoordinateFuzzing(time.Duration, int64, time.Duration, int64, int, []corpusEntry, []reflect.Type, string, string) error {
	return errNoFuzzing
}
func (testDeps) RunFuzzWorker(func(corpusEntry) error) error { return errNoFuzzing }
func (testDeps) ReadCorpus(string, []reflect.Type) ([]corpusEntry, error) {
	return nil, errNoFuzzing
}
func (testDeps) CheckCorpus([]any, []reflect.Type) error { return nil }
func (testDeps) InitRuntimeCoverage() (string, func(string, string) (string, error), func() float64) {
	return "", nil, nil
}

var (
	errNoProfiles = errors.New("gpupool suites take no profiles")
	errNoFuzzing  = errors.New("gpupool suites do not fuzz")
)
