// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Mutants side by side each keep their own phase in the status, in the
// order they began; a finished one leaves it.
func TestJobsEachSayTheirOwnPhase(t *testing.T) {
	s := &statusLine{tty: os.Stderr, plain: true, start: time.Now()}
	status.Store(s)
	defer status.Store(nil)

	jobPhase("broken-a", "suite %s", "mig")
	jobPhase("broken-b", "bringing up")
	jobPhase("broken-a", "suite %s", "autoscaling")
	assert.Regexp(t, `^broken-a: suite autoscaling, \d+s so far; broken-b: bringing up, \d+s so far$`, s.current())

	jobDone("broken-a")
	assert.Regexp(t, `^broken-b: bringing up, \d+s so far$`, s.current())
	jobDone("broken-b")
	assert.Equal(t, "", s.current(), "nothing runs: no status")
}
