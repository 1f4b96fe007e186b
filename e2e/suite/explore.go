// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package suite

import (
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/gpupool/gpupool/e2e/dirs"
	"github.com/gpupool/gpupool/e2e/explore"
	"github.com/gpupool/gpupool/e2e/settings"
)

// DefaultCorpus holds every counterexample worth keeping, one directory
// per rule; its cases run before anything is drawn. It is built in:
// relative to the manifests directory (dirs.ManifestPath).
const DefaultCorpus = "explore/corpus"

// ExploreSettings is how a suite explores.
type ExploreSettings struct {
	Seed   uint64
	Budget explore.Budget
	// Budgets replace Budget for single rules (by check id).
	Budgets   map[string]explore.Budget
	ReportDir string
	Corpus    string
}

// BudgetFor is the budget of the rule with the check id.
func (s ExploreSettings) BudgetFor(id string) explore.Budget {
	if b, ok := s.Budgets[id]; ok {
		return b
	}
	return s.Budget
}

var (
	exploreOnce     sync.Once
	exploreSettings ExploreSettings
	exploreErr      error
)

// Exploration returns the exploration settings, decided once per suite
// binary: the seed is drawn here when none was given, so every rule of
// the run uses the same one.
func Exploration() (ExploreSettings, error) {
	exploreOnce.Do(func() {
		set, err := settings.Current()
		if err != nil {
			exploreErr = err
			return
		}
		s := ExploreSettings{Seed: set.Explore.Seed, ReportDir: set.Explore.ReportDir, Corpus: set.Explore.Corpus}
		if s.Seed == 0 {
			s.Seed = explore.NewSeed()
		}
		if s.Budget, exploreErr = explore.ParseBudget(set.Explore.Budget); exploreErr != nil {
			return
		}
		for id, text := range set.Explore.Budgets {
			b, err := explore.ParseBudget(text)
			if err != nil {
				exploreErr = fmt.Errorf("the budget of %s: %w", id, err)
				return
			}
			if s.Budgets == nil {
				s.Budgets = map[string]explore.Budget{}
			}
			s.Budgets[id] = b
		}
		if s.ReportDir == "" {
			s.ReportDir = filepath.Join(dirs.ReportsDir(), "explore-"+time.Now().UTC().Format("0102-150405"))
		}
		if s.Corpus == "" {
			if s.Corpus, exploreErr = dirs.ManifestPath(DefaultCorpus); exploreErr != nil {
				return
			}
		}
		exploreSettings = s
	})
	return exploreSettings, exploreErr
}
