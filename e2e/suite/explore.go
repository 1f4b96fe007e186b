package suite

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/gpupool/gpupool/e2e/dirs"
	"github.com/gpupool/gpupool/e2e/explore"
)

// Exploration settings a suite binary takes (`gpupool run` sets them
// through the environment).
var (
	exploreSeedFlag   = flag.String("gpupool.explore-seed", os.Getenv("GPUPOOL_EXPLORE_SEED"), "exploration seed: replays a run's shapes exactly (default: a new one, printed)")
	exploreBudgetFlag = flag.String("gpupool.explore-budget", os.Getenv("GPUPOOL_EXPLORE_BUDGET"), "exploration budget per rule: SHAPES, SHAPES/TIME or SHAPES/TIME/SHRINK, 0 for none (default 60/20s/20s)")
	reportDirFlag     = flag.String("gpupool.report-dir", os.Getenv("GPUPOOL_REPORT_DIR"), "where counterexamples are written (default explore-<time> in reports/out of a gpupool checkout, else in ./gpupool-reports)")
	corpusFlag        = flag.String("gpupool.explore-corpus", os.Getenv("GPUPOOL_EXPLORE_CORPUS"), "regression corpus directory (default: the built-in "+DefaultCorpus+")")
)

// DefaultCorpus holds every counterexample worth keeping, one directory
// per rule; its cases run before anything is drawn. It is built in:
// relative to the manifests directory (dirs.ManifestPath).
const DefaultCorpus = "explore/corpus"

// ExploreSettings is how a suite explores.
type ExploreSettings struct {
	Seed      uint64
	Budget    explore.Budget
	ReportDir string
	Corpus    string
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
		s := ExploreSettings{ReportDir: *reportDirFlag, Corpus: *corpusFlag}
		if *exploreSeedFlag != "" {
			n, err := strconv.ParseUint(*exploreSeedFlag, 10, 64)
			if err != nil || n == 0 {
				exploreErr = fmt.Errorf("--explore-seed %q: want a positive whole number (a seed a run printed)", *exploreSeedFlag)
				return
			}
			s.Seed = n
		} else {
			s.Seed = explore.NewSeed()
		}
		if s.Budget, exploreErr = explore.ParseBudget(*exploreBudgetFlag); exploreErr != nil {
			return
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
