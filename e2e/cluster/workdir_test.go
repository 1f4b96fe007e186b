package cluster

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSweepWorkDirs(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	const prefix = "gpupool-test-work-"
	live, err := MakeWorkDir(prefix)
	require.NoError(t, err)
	dead := filepath.Join(os.TempDir(), prefix+"dead")
	writeOwnerFile(t, dead, owner{PID: 1 << 22, StartTick: 1}) // no such process
	unclaimedOld := filepath.Join(os.TempDir(), prefix+"old")
	require.NoError(t, os.MkdirAll(unclaimedOld, 0o755))
	old := time.Now().Add(-2 * claimGrace)
	require.NoError(t, os.Chtimes(unclaimedOld, old, old))
	fresh := filepath.Join(os.TempDir(), prefix+"fresh")
	require.NoError(t, os.MkdirAll(fresh, 0o755))

	removed := SweepWorkDirs(prefix)
	require.ElementsMatch(t, []string{dead}, removed)
	for _, d := range []string{live, fresh, unclaimedOld} {
		_, err := os.Stat(d)
		require.NoError(t, err, "%s must survive the sweep", d)
	}
}
