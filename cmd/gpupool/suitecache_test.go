package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The suite cache key follows every source a suite is built from, and
// nothing else.
func TestSuiteKeyFollowsSources(t *testing.T) {
	root := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	write("go.mod", "module x\n")
	write("suites/a/a_test.go", "package a\n")
	write("e2e/barrier/barrier.go", "package barrier\n")
	write("e2e/barrier/barrier.yaml", "kind: X\n")
	key := func() string {
		k, err := suiteKey(context.Background(), root, "./suites/...")
		require.NoError(t, err)
		return k
	}
	k0 := key()
	write("reports/out/run/summary.json", "{}")
	write("manifests/fleets/f.yaml", "x")
	assert.Equal(t, k0, key(), "reports and manifests are read at run time, not built in")
	write("e2e/barrier/barrier.yaml", "kind: Y\n")
	k1 := key()
	assert.NotEqual(t, k0, k1, "an embedded file beside Go sources")
	write("suites/a/a_test.go", "package a\n\nfunc f() {}\n")
	assert.NotEqual(t, k1, key(), "a Go source")
}
