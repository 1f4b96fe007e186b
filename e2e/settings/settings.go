// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package settings is what a run tells each suite it runs, spelled once:
// gpupool run fills a Settings from its flags, writes it into the run
// directory and passes the file (--gpupool.settings); the suite process
// reads it back whole. A suite run with go test sets the same fields with
// one flag each.
package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Settings are a suite process's settings.
type Settings struct {
	// RunID is put on every object the suites create (harness.LabelRun).
	RunID string `json:"runID,omitempty"`
	// Fleet and Candidate are what the suites check: for gpupool run the
	// copies it loaded, validated and installed (its run directory's
	// loaded/), never the source.
	Fleet     string `json:"fleet,omitempty"`
	Candidate string `json:"candidate,omitempty"`
	// SimulatedPools: the run joined its fleet to a cluster it did not
	// make as simulated nodes labelled with its run id; pools are those
	// nodes alone.
	SimulatedPools bool `json:"simulatedPools,omitempty"`
	// Autoscaler: the run runs Karpenter for the fleet's autoscaled pools
	// (never on a cluster it did not make).
	Autoscaler bool `json:"autoscaler,omitempty"`
	// DisruptiveNodes are, on a cluster gpupool did not make, the nodes
	// disruptive checks may change (none: every node of a cluster gpupool
	// made).
	DisruptiveNodes []string `json:"disruptiveNodes,omitempty"`
	// Disposable: the run removes the cluster when it ends (one it made
	// and does not keep). A check then leaves its emptied namespace to go
	// with the cluster: the namespace controller's sweep of a namespace
	// is about 80 requests, a quarter of a run's.
	Disposable bool    `json:"disposable,omitempty"`
	Explore    Explore `json:"explore,omitzero"`
}

// Explore is how the exploration suite draws its pods.
type Explore struct {
	// Seed replays a run's shapes (0: the suite draws one).
	Seed uint64 `json:"seed,omitempty"`
	// Budget per rule, as explore.ParseBudget reads it ("": the default).
	Budget string `json:"budget,omitempty"`
	// Budgets are budgets of single rules (by check id) in place of
	// Budget: a mutant spends more on the rules it must break.
	Budgets map[string]string `json:"budgets,omitempty"`
	// ReportDir is where counterexamples are written.
	ReportDir string `json:"reportDir,omitempty"`
	// Corpus is the regression corpus directory ("": the built-in one).
	Corpus string `json:"corpus,omitempty"`
}

// Flag is the suite binary's flag naming a settings file.
const Flag = "gpupool.settings"

// WriteFile writes s to path for a suite process to read.
func (s Settings) WriteFile(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadFile reads the settings WriteFile wrote; a field it does not know
// is an error naming the file, as for any input.
func ReadFile(path string) (Settings, error) {
	var s Settings
	b, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("--%s: %w", Flag, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("--%s %s: %w", Flag, path, err)
	}
	return s, nil
}

// The flags of a suite binary: the file gpupool run passes, or one flag
// per field for a suite run with go test (after -args).
var (
	file     = flag.String(Flag, "", "the settings file gpupool run wrote for this suite (the flags below are for go test)")
	byFlag   Settings
	seedFlag = flag.String("gpupool.explore-seed", "", "exploration seed: replays a run's shapes exactly (default: a new one, printed)")
	nodeFlag = flag.String("gpupool.disruptive-nodes", "", "on a cluster gpupool did not make: the nodes disruptive checks may change, comma-separated (default: every node of a cluster gpupool made)")
)

func init() {
	flag.StringVar(&byFlag.RunID, "gpupool.run-id", "", "the run's id, put on every object the suites create (default: a new one)")
	flag.StringVar(&byFlag.Fleet, "gpupool.fleet", "", "fleet file (default: the candidate's, else the built-in one)")
	flag.StringVar(&byFlag.Candidate, "gpupool.candidate", "", "candidate directory (default: the built-in reference)")
	flag.BoolVar(&byFlag.SimulatedPools, "gpupool.simulated-pools", false, "the run joined its fleet to the cluster as simulated nodes labelled with its run id: pools are those nodes alone")
	flag.StringVar(&byFlag.Explore.Budget, "gpupool.explore-budget", "", "exploration budget per rule: SHAPES, SHAPES/TIME or SHAPES/TIME/SHRINK, 0 for none (default 60/20s/20s)")
	flag.StringVar(&byFlag.Explore.ReportDir, "gpupool.report-dir", "", "where counterexamples are written (default explore-<time> in reports/out of a gpupool checkout, else in ./gpupool-reports)")
	flag.StringVar(&byFlag.Explore.Corpus, "gpupool.explore-corpus", "", "regression corpus directory (default: the built-in one)")
}

var (
	once    sync.Once
	current Settings
	err     error
)

// Current returns this process's settings, from the file or the flags,
// decided once (after the flags are parsed).
func Current() (Settings, error) {
	once.Do(func() { current, err = fromFlags() })
	return current, err
}

func fromFlags() (Settings, error) {
	if !flag.Parsed() {
		return Settings{}, errors.New("settings: read before the flags were parsed")
	}
	if *file != "" {
		set := false
		flag.Visit(func(f *flag.Flag) {
			set = set || (f.Name != Flag && strings.HasPrefix(f.Name, "gpupool."))
		})
		if set {
			return Settings{}, fmt.Errorf("--%s holds every setting: give it, or the other --gpupool.* flags, not both", Flag)
		}
		return ReadFile(*file)
	}
	s := byFlag
	if *seedFlag != "" {
		n, err := strconv.ParseUint(*seedFlag, 10, 64)
		if err != nil || n == 0 {
			return s, fmt.Errorf("--gpupool.explore-seed %q: want a positive whole number (a seed a run printed)", *seedFlag)
		}
		s.Explore.Seed = n
	}
	for n := range strings.SplitSeq(*nodeFlag, ",") {
		if n = strings.TrimSpace(n); n != "" {
			s.DisruptiveNodes = append(s.DisruptiveNodes, n)
		}
	}
	return s, nil
}
