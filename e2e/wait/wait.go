// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package wait polls for a condition with a deadline. Every wait names what
// it awaits, so a timeout says what never happened and what was last seen.
package wait

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Interval between polls, at first. Short: the embedded cluster answers in
// milliseconds, and checks should not idle.
const Interval = 100 * time.Millisecond

// For's interval grows by half each poll once a wait has gone on for
// growAfter, up to MaxInterval: a wait that long awaits something slower
// than the apiserver (a settle time, the autoscaler's batch window, a
// drain), and each poll is a request the apiserver answers from its cache
// and serializes. With every wait at 100 ms, two mutants side by side kept
// each of their apiservers at about 40% of a core.
const (
	growAfter   = time.Second
	MaxInterval = 500 * time.Millisecond
)

// Condition reports whether the wait is over, and a short description of
// what it saw (used in the timeout message). A non-nil error stops the wait.
type Condition func(ctx context.Context) (done bool, seen string, err error)

// TimeoutError is returned when the deadline passes first.
type TimeoutError struct {
	What     string
	Timeout  time.Duration
	LastSeen string
}

func (e *TimeoutError) Error() string {
	msg := fmt.Sprintf("timed out after %s waiting for %s", e.Timeout, e.What)
	if e.LastSeen != "" {
		msg += "; last seen: " + e.LastSeen
	}
	return msg
}

// For polls cond until it is done, it fails, ctx ends, or timeout passes:
// every Interval at first, less often once the wait has gone on a while.
func For(ctx context.Context, what string, timeout time.Duration, cond Condition) error {
	return poll(ctx, what, timeout, Interval, true, cond)
}

// Every is For with its own fixed poll interval, for outcomes the cluster
// shows within milliseconds and a caller judges many of in a row.
func Every(ctx context.Context, what string, timeout, interval time.Duration, cond Condition) error {
	return poll(ctx, what, timeout, interval, false, cond)
}

func poll(ctx context.Context, what string, timeout, interval time.Duration, grow bool, cond Condition) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	timer := time.NewTimer(interval)
	defer timer.Stop()
	var seen string
	for {
		done, s, err := cond(ctx)
		if s != "" {
			seen = s
		}
		if err != nil && ctx.Err() == nil && !outOfTime(err) {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if done {
			return nil
		}
		if grow && time.Since(start) >= growAfter {
			interval = min(interval*3/2, MaxInterval)
		}
		timer.Reset(interval)
		select {
		case <-ctx.Done():
			return &TimeoutError{What: what, Timeout: timeout, LastSeen: seen}
		case <-timer.C:
		}
	}
}

// outOfTime tells an error that only says the wait's deadline is near:
// client-go's rate limiter refuses a request it could not send before the
// context's deadline ("rate: Wait(n=1) would exceed context deadline")
// without the context having ended. That is the wait timing out, and its
// message should be what was last seen, not the limiter's.
func outOfTime(err error) bool {
	return strings.Contains(err.Error(), "would exceed context deadline")
}
