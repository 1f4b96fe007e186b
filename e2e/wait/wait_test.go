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
