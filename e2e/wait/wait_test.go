// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package wait

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestRateLimiterNearTheDeadlineIsATimeoutWithWhatWasSeen(t *testing.T) {
	calls := 0
	err := Every(context.Background(), "pod p to be scheduled", 50*time.Millisecond, 5*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		calls++
		if calls == 1 {
			return false, "Pending: cannot allocate all claims", nil
		}
		// What client-go returns when its limiter would wait past the deadline.
		return false, "", fmt.Errorf("client rate limiter Wait returned an error: %w", errors.New("rate: Wait(n=1) would exceed context deadline"))
	})
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("got %v, want a TimeoutError", err)
	}
	if !strings.Contains(err.Error(), "last seen: Pending: cannot allocate all claims") {
		t.Errorf("the timeout lost what was seen: %v", err)
	}
}

func TestAnErrorStopsTheWait(t *testing.T) {
	err := For(context.Background(), "x", time.Second, func(ctx context.Context) (bool, string, error) {
		return false, "", errors.New("forbidden")
	})
	if err == nil || !strings.Contains(err.Error(), "waiting for x: forbidden") {
		t.Errorf("got %v", err)
	}
}

// A long wait polls less often: 100 ms at first, growing to 500 ms once it
// has gone on a second, so about 10 polls in its first second and about 2
// a second after.
func TestForPollsLessOftenOnceItHasWaitedAWhile(t *testing.T) {
	var at []time.Time
	start := time.Now()
	_ = For(context.Background(), "nothing", 3*time.Second, func(ctx context.Context) (bool, string, error) {
		at = append(at, time.Now())
		return time.Since(start) > 2500*time.Millisecond, "", nil
	})
	first, later := 0, 0
	for _, t := range at {
		if t.Sub(start) < time.Second {
			first++
		} else if t.Sub(start) >= 1500*time.Millisecond {
			later++
		}
	}
	if first < 8 || later > 4 {
		t.Errorf("polls: %d in the first second (want about 10), %d after 1.5 s (want at most 4 at 500 ms)", first, later)
	}
}
