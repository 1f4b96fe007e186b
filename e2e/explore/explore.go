// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package explore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"pgregory.net/rapid"
)

// Budget bounds one rule's exploration: at most Shapes drawn shapes and
// Time spent judging them (shrinking a violation has its own ShrinkTime).
type Budget struct {
	Shapes     int
	Time       time.Duration
	ShrinkTime time.Duration
}

// DefaultBudget is what `gpupool run` spends per rule unless told.
var DefaultBudget = Budget{Shapes: 60, Time: 20 * time.Second, ShrinkTime: 20 * time.Second}

// ParseBudget reads "SHAPES", "SHAPES/TIME" or "SHAPES/TIME/SHRINK"
// (e.g. "60", "600/3m", "60/20s/0s"); "0" turns exploration off. SHRINK
// bounds the time spent shrinking a violation (0s: report the first
// violation as found, as a verdict needs no smaller one).
func ParseBudget(s string) (Budget, error) {
	b := DefaultBudget
	if s == "" {
		return b, nil
	}
	bad := func(why string) (Budget, error) {
		return DefaultBudget, fmt.Errorf("explore budget %q: %s (want SHAPES, SHAPES/TIME or SHAPES/TIME/SHRINK, e.g. 60, 600/3m or 60/20s/0s)", s, why)
	}
	parts := strings.Split(s, "/")
	if len(parts) > 3 {
		return bad("too many parts")
	}
	n, err := strconv.Atoi(strings.TrimSpace(parts[0]))
	if err != nil || n < 0 {
		return bad("shapes must be a whole number >= 0")
	}
	b.Shapes = n
	if len(parts) > 1 {
		d, err := time.ParseDuration(strings.TrimSpace(parts[1]))
		if err != nil || d <= 0 {
			return bad(fmt.Sprintf("time %q is not a positive duration", parts[1]))
		}
		b.Time = d
	} else if n > DefaultBudget.Shapes {
		// More shapes than the default get time in proportion.
		b.Time = DefaultBudget.Time * time.Duration(n) / time.Duration(DefaultBudget.Shapes)
	}
	if len(parts) > 2 {
		d, err := time.ParseDuration(strings.TrimSpace(parts[2]))
		if err != nil || d < 0 {
			return bad(fmt.Sprintf("shrink time %q is not a duration >= 0", parts[2]))
		}
		b.ShrinkTime = d
	}
	return b, nil
}

// NewSeed draws a seed for a run that was given none.
func NewSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) >> 1 // positive as an int64 too
}

// Report is what one rule's exploration did.
type Report struct {
	Rule   string
	Seed   uint64
	Corpus int // corpus cases judged
	// Drawn shapes, and Judged by the cluster (the rest came after the
	// time budget ran out).
	Drawn, Judged int
	// ShrinkRuns counts the shapes tried while shrinking a violation.
	ShrinkRuns int
	Elapsed    time.Duration
	Found      *Counterexample
	// Placed counts, by pool, the pods a placement rule judged where they
	// landed: which pools the budget reached.
	Placed map[string]int
}

func (r Report) String() string {
	s := fmt.Sprintf("%s: seed %d, %d corpus cases, %d shapes judged of %d drawn in %s", r.Rule, r.Seed, r.Corpus, r.Judged, r.Drawn, r.Elapsed.Round(time.Millisecond))
	if len(r.Placed) > 0 {
		var by []string
		for _, pool := range slices.Sorted(maps.Keys(r.Placed)) {
			by = append(by, fmt.Sprintf("%s %d", pool, r.Placed[pool]))
		}
		s += "; pods judged where they landed, by pool: " + strings.Join(by, ", ")
	}
	if r.Found != nil {
		s += fmt.Sprintf(", violation found and shrunk over %d more shapes", r.ShrinkRuns)
	}
	return s
}

// Counterexample is a shape that broke the rule, as small as shrinking
// made it.
type Counterexample struct {
	Shape     Shape
	Violation Violation
	// Corpus names the corpus file the case came from ("" when drawn).
	Corpus string
	// Tries is how many failing shapes were seen while shrinking.
	Tries int
}

// Run tries the rule: first every corpus case, then shapes drawn from
// space with the seed, within the budget. It returns the first violation
// (shrunk) in the report; an error only when the cluster could not be
// asked.
func Run(ctx context.Context, r Rule, c *Cluster, space *Space, corpus []CorpusCase, seed uint64, b Budget, logf func(string, ...any)) (rep *Report, err error) {
	start := time.Now()
	rep = &Report{Rule: r.Check, Seed: seed}
	defer func() {
		if serr := c.Sweep(context.WithoutCancel(ctx), r, space.Namespaces()); serr != nil && err == nil {
			err = serr
		}
		rep.Elapsed = time.Since(start)
		rep.Placed = maps.Clone(c.placed)
	}()
	for _, cc := range corpus {
		if _, err := c.Client.CoreV1().Namespaces().Get(ctx, cc.Shape.Pod.Namespace, metav1.GetOptions{}); err != nil {
			logf("corpus %s: namespace %s is not in this cluster; case skipped", cc.File, cc.Shape.Pod.Namespace)
			continue
		}
		rep.Corpus++
		v, err := c.Judge(ctx, r, cc.Shape)
		if err != nil {
			return rep, fmt.Errorf("corpus %s: %w", cc.File, err)
		}
		if v != nil {
			rep.Found = &Counterexample{Shape: cc.Shape, Violation: *v, Corpus: cc.File, Tries: 1}
			return rep, nil
		}
	}
	if b.Shapes == 0 {
		return rep, nil
	}

	var (
		n        int
		infraErr error
		found    *Counterexample
		tries    int
	)
	gen := space.Shapes(r.Focus, r.short(), func() string {
		n++
		return fmt.Sprintf("%s-%d", r.short(), n)
	})
	prop := func(t *rapid.T) {
		s := gen.Draw(t, "pod")
		if found == nil {
			rep.Drawn++
		} else {
			rep.ShrinkRuns++
		}
		if infraErr != nil || ctx.Err() != nil || (found == nil && time.Since(start) > b.Time) {
			return
		}
		v, err := c.Judge(ctx, r, s)
		if err != nil {
			infraErr = err
			return
		}
		if found == nil {
			rep.Judged++
		}
		if v != nil {
			tries++
			found = &Counterexample{Shape: s, Violation: *v, Tries: tries}
			// rapid shrinks toward cases that fail with the same message;
			// pod names differ between tries, so the message names the
			// rule only (the violation itself is kept above).
			t.Fatalf("%s violated", r.Check)
		}
	}
	if err := configureRapid(seed, b); err != nil {
		return rep, err
	}
	tb := &recorder{name: r.Check}
	func() {
		defer func() {
			if p := recover(); p != nil && p != errStop {
				panic(p)
			}
		}()
		rapid.Check(tb, prop)
	}()
	if infraErr != nil {
		return rep, infraErr
	}
	if found != nil {
		// The last failing shape is the smallest: rapid replays the
		// minimal case last.
		rep.Found = found
	} else if tb.failed {
		return rep, fmt.Errorf("exploration of %s failed without a violation: %s", r.Check, strings.Join(tb.messages, "; "))
	}
	return rep, nil
}

var rapidMu sync.Mutex

// configureRapid sets rapid's knobs, which are flags of the test binary
// (pgregory.net/rapid reads nothing else): checks, seed, shrink time, and
// no fail files in the working directory.
func configureRapid(seed uint64, b Budget) error {
	rapidMu.Lock()
	defer rapidMu.Unlock()
	for name, v := range map[string]string{
		"rapid.checks":     strconv.Itoa(b.Shapes),
		"rapid.seed":       strconv.FormatUint(seed, 10),
		"rapid.shrinktime": b.ShrinkTime.String(),
		"rapid.nofailfile": "true",
	} {
		if err := flag.Set(name, v); err != nil {
			return fmt.Errorf("setting %s: %w", name, err)
		}
	}
	return nil
}

// recorder is the rapid.TB exploration runs under: it keeps rapid's
// verdict instead of failing the test, so the check can write the
// counterexample first and fail with a message of its own.
type recorder struct {
	name     string
	failed   bool
	messages []string
}

var errStop = fmt.Errorf("explore: rapid stopped the property")

func (r *recorder) Helper()                   {}
func (r *recorder) Name() string              { return r.name }
func (r *recorder) Logf(string, ...any)       {}
func (r *recorder) Log(...any)                {}
func (r *recorder) Skipf(f string, a ...any)  { panic(errStop) }
func (r *recorder) Skip(...any)               { panic(errStop) }
func (r *recorder) SkipNow()                  { panic(errStop) }
func (r *recorder) Errorf(f string, a ...any) { r.fail(fmt.Sprintf(f, a...)) }
func (r *recorder) Error(a ...any)            { r.fail(fmt.Sprint(a...)) }
func (r *recorder) Fatalf(f string, a ...any) { r.fail(fmt.Sprintf(f, a...)); panic(errStop) }
func (r *recorder) Fatal(a ...any)            { r.fail(fmt.Sprint(a...)); panic(errStop) }
func (r *recorder) FailNow()                  { r.failed = true; panic(errStop) }
func (r *recorder) Fail()                     { r.failed = true }
func (r *recorder) Failed() bool              { return r.failed }
func (r *recorder) fail(msg string)           { r.failed = true; r.messages = append(r.messages, firstLine(msg)) }
func firstLine(s string) string               { l, _, _ := strings.Cut(s, "\n"); return l }

var _ rapid.TB = (*recorder)(nil)

// Write saves the counterexample as a reproduction under dir and returns
// its path.
func (ce *Counterexample) Write(dir, rule string, seed uint64, needs []runtime.Object) (string, []byte, error) {
	header := fmt.Sprintf("gpupool exploration: a counterexample to %s.\n%s\n", rule, ce.Violation.Message)
	if ce.Corpus != "" {
		header += "From the regression corpus: " + ce.Corpus + "\n"
	} else {
		header += fmt.Sprintf("Found with --explore-seed %d (shrunk over %d failing shapes).\n", seed, ce.Tries)
	}
	header += "Where it departs from a well-formed pod: " + strings.Join(orNone(ce.Shape.Choices), "; ") + "\n"
	header += "Reproduce on a cluster from `gpupool up`: kubectl apply -f <this file>"
	data, err := Reproduction(header, ce.Shape, needs, ce.Violation.Neighbours)
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	path := filepath.Join(dir, strings.TrimPrefix(rule, "explore.")+".yaml")
	return path, data, os.WriteFile(path, data, 0o644)
}

func orNone(s []string) []string {
	if len(s) == 0 {
		return []string{"none (a well-formed pod)"}
	}
	return s
}
