package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
