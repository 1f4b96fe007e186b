// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run killed while a kind cluster it made was up leaves the cluster's
// directory and the network marker beside it. The next run's sweep removes
// the cluster and takes the marker for what it is: not a cluster. (CI
// failed on exactly this: the sweep ran `kind delete` on the marker.)
func TestKindSweepRemovesOnlyDeadClustersAndSkipsTheNetworkMarker(t *testing.T) {
	state := t.TempDir()
	calls := filepath.Join(t.TempDir(), "kind-calls")
	// kind fails on a name whose kubeconfig lock it cannot take, as the
	// real one did on the marker file.
	fakeKind := filepath.Join(t.TempDir(), "kind")
	require.NoError(t, os.WriteFile(fakeKind, []byte(`#!/bin/sh
echo "$@" >> `+calls+`
case "$6" in */.*) echo "not a directory" >&2; exit 1;; esac
`), 0o755))

	k := &Kind{cfg: KindConfig{KindBinary: fakeKind, StateDir: state}}
	require.NoError(t, os.MkdirAll(k.clustersDir(), 0o755))
	require.NoError(t, os.WriteFile(k.networkMarker(), nil, 0o644))
	writeOwnerFile(t, k.clusterDir("gpupool-dead"), owner{PID: 1 << 30})
	require.NoError(t, writeOwner(k.clusterDir("gpupool-live"), false))

	require.NoError(t, k.SweepStale(context.Background()))

	b, err := os.ReadFile(calls)
	require.NoError(t, err, "kind was never called to delete the dead cluster")
	assert.Equal(t, []string{"delete cluster --name gpupool-dead --kubeconfig " + filepath.Join(k.clusterDir("gpupool-dead"), "kubeconfig")},
		strings.Split(strings.TrimSpace(string(b)), "\n"))
	assert.NoDirExists(t, k.clusterDir("gpupool-dead"))
	assert.DirExists(t, k.clusterDir("gpupool-live"), "a live run's cluster is not the sweep's")
	assert.FileExists(t, k.networkMarker(), "the network stays while a gpupool cluster is on it")

	r, err := k.Remove(context.Background(), Removal{Force: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"gpupool-live"}, r.Names, "Remove counts clusters, not the marker")
}

// down leaves a live run's cluster unless it is named or forced; it
// removes those of runs that are gone and those kept with --keep-cluster.
func TestRemoveLeavesLiveRuns(t *testing.T) {
	state := t.TempDir()
	fakeKind := filepath.Join(t.TempDir(), "kind")
	require.NoError(t, os.WriteFile(fakeKind, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	k := &Kind{cfg: KindConfig{KindBinary: fakeKind, StateDir: state}}
	setup := func() {
		writeOwnerFile(t, k.clusterDir("gpupool-dead"), owner{PID: 1 << 30})
		writeOwnerFile(t, k.clusterDir("gpupool-kept"), owner{PID: 1 << 30, Detached: true})
		require.NoError(t, writeOwner(k.clusterDir("gpupool-live"), false))
	}
	setup()
	r, err := k.Remove(context.Background(), Removal{})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"gpupool-dead", "gpupool-kept"}, r.Names)
	require.Len(t, r.Left, 1)
	assert.Contains(t, r.Left[0], "gpupool-live (in use by gpupool run pid")
	assert.DirExists(t, k.clusterDir("gpupool-live"), "a live run's cluster stays")

	r, err = k.Remove(context.Background(), Removal{Names: []string{"gpupool-live"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"gpupool-live"}, r.Names, "a live run's cluster goes when named")
	assert.Empty(t, r.Left)

	setup()
	r, err = k.Remove(context.Background(), Removal{Force: true})
	require.NoError(t, err)
	assert.Len(t, r.Names, 3, "--force removes every cluster")
}

// A leftover the sweep cannot remove is reported; it does not stop the run
// that found it.
func TestEmbeddedSweepReportsButSurvivesAFailedRemoval(t *testing.T) {
	state := t.TempDir()
	fakeKwokctl := filepath.Join(t.TempDir(), "kwokctl")
	require.NoError(t, os.WriteFile(fakeKwokctl, []byte("#!/bin/sh\necho cannot stop components >&2\nexit 1\n"), 0o755))
	e := &Embedded{cfg: EmbeddedConfig{StateDir: state, Binaries: Binaries{Kwokctl: fakeKwokctl}}}
	writeOwnerFile(t, e.clusterDir("gpupool-dead"), owner{PID: 1 << 30})
	require.NoError(t, os.WriteFile(filepath.Join(e.clustersDir(), "notes.txt"), nil, 0o644))

	assert.NoError(t, e.SweepStale(context.Background()))
}

func writeOwnerFile(t *testing.T, dir string, o owner) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	b, err := json.Marshal(o)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, ownerFile), b, 0o644))
}

// A cluster directory with no owner record yet is being claimed by a run
// beside this one (mutants bring up several clusters at once): the sweep
// leaves it alone for a while, then takes it for a run that died mid-claim.
func TestSweepLeavesAClusterBeingClaimed(t *testing.T) {
	dir := t.TempDir()
	fresh, old := filepath.Join(dir, "gpupool-fresh"), filepath.Join(dir, "gpupool-old")
	require.NoError(t, os.MkdirAll(fresh, 0o755))
	require.NoError(t, os.MkdirAll(old, 0o755))
	long := time.Now().Add(-2 * claimGrace)
	require.NoError(t, os.Chtimes(old, long, long))
	var removed []string
	require.NoError(t, sweepStale(context.Background(), dir, "cluster", func(_ context.Context, name string) error {
		removed = append(removed, name)
		return nil
	}))
	assert.Equal(t, []string{"gpupool-old"}, removed)
}

// Removing a kind cluster removes the temporary directories named for it
// (TempPrefix): Karpenter's, beside the cluster, which a run killed with
// SIGKILL leaves. Another cluster's stay.
func TestKindRemovalTakesTheClustersTempDirs(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	fakeKind := filepath.Join(t.TempDir(), "kind")
	require.NoError(t, os.WriteFile(fakeKind, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	k := &Kind{cfg: KindConfig{KindBinary: fakeKind, StateDir: t.TempDir()}}
	mine, err := os.MkdirTemp("", TempPrefix("gpupool-killed", "kp"))
	require.NoError(t, err)
	other, err := os.MkdirTemp("", TempPrefix("gpupool-live", "kp"))
	require.NoError(t, err)

	require.NoError(t, k.deleteCluster(context.Background(), "gpupool-killed"))
	assert.NoDirExists(t, mine)
	assert.DirExists(t, other)
}
