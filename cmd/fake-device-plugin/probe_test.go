// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/fakegpu/nvidiaruntime"
)

func TestPrintEnvSaysUnsetForAMissingVariable(t *testing.T) {
	env := map[string]string{"NVIDIA_VISIBLE_DEVICES": "GPU-a,GPU-b"}
	var b strings.Builder
	printEnv(&b, []string{"NVIDIA_VISIBLE_DEVICES", "CUDA_MPS_PIPE_DIRECTORY"}, func(n string) (string, bool) {
		v, ok := env[n]
		return v, ok
	})
	if got, want := b.String(), "NVIDIA_VISIBLE_DEVICES=GPU-a,GPU-b\nCUDA_MPS_PIPE_DIRECTORY=<unset>\n"; got != want {
		t.Errorf("printEnv wrote %q, want %q", got, want)
	}
}

// An init container runs probe-once: it must exit, or the pod's app
// containers never start.
func TestProbeOnceReturns(t *testing.T) {
	done := make(chan struct{})
	go func() {
		probe(nil, true)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("probe-once did not return: an init container running it would never finish")
	}
}

func TestPrintSight(t *testing.T) {
	for _, tc := range []struct {
		data string
		err  error
		want string
	}{
		{"GPU-1\nGPU-2\n", nil, nvidiaruntime.SeesLine + "=GPU-1,GPU-2\n"},
		{"", nil, nvidiaruntime.SeesLine + "=\n"},
		{"", os.ErrNotExist, nvidiaruntime.SeesLine + "=" + nvidiaruntime.NoRuntime + "\n"},
	} {
		var b strings.Builder
		printSight(&b, func(string) ([]byte, error) { return []byte(tc.data), tc.err })
		if b.String() != tc.want {
			t.Errorf("printSight(%q, %v) = %q, want %q", tc.data, tc.err, b.String(), tc.want)
		}
	}
}
