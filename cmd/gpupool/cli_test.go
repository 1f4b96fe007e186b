// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
)

// Every command explains itself: a one-line summary in 'gpupool --help',
// help of its own, and a usage line for every flag.
func TestEveryCommandHasHelp(t *testing.T) {
	root := newRoot()
	for _, c := range root.Commands() {
		assert.NotEmpty(t, c.Short, "command %s has no summary", c.Name())
		c.Flags().VisitAll(func(f *pflag.Flag) {
			assert.NotEmpty(t, f.Usage, "%s --%s has no usage", c.Name(), f.Name)
		})
	}
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"run", "--help"})
	require.NoError(t, root.Execute())
	assert.Contains(t, out.String(), "--candidate")
	assert.Contains(t, out.String(), "env CANDIDATE")
}

// Shell completion comes with the command tree, as kubectl's and kind's.
func TestShellCompletion(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"completion", "bash"})
	require.NoError(t, root.Execute())
	assert.True(t, strings.Contains(out.String(), "gpupool"), "a bash completion script")
}

// Without -v, client-go's klog lines stay off the console; with -v they
// come back.
func TestKlogIsQuietUnlessAsked(t *testing.T) {
	capture := func(v int) string {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr := os.Stderr
		os.Stderr = w
		quietKlog(v)
		klog.Warning("watch of *v1.Pod ended with: an error on the server")
		klog.Flush()
		os.Stderr = stderr
		w.Close()
		b, _ := io.ReadAll(r)
		return string(b)
	}
	if got := capture(0); got != "" {
		t.Errorf("klog wrote %q without -v", got)
	}
	if got := capture(2); !strings.Contains(got, "ended with") {
		t.Errorf("klog wrote %q with -v 2, want the warning", got)
	}
	quietKlog(0)
}
