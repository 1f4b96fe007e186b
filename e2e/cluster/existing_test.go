// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// What the run's processes read is the context the user named, and only
// it, with the credentials in the file: the user's own file names another
// current context, and its certificate is a path beside it.
func TestOwnKubeconfigHoldsTheNamedContextAlone(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "ca.crt"), []byte("the-ca"), 0o600))
	raw := clientcmdapi.Config{
		CurrentContext: "prod",
		Clusters: map[string]*clientcmdapi.Cluster{
			"prod":    {Server: "https://prod.example:6443"},
			"staging": {Server: "https://127.0.0.1:6443", CertificateAuthority: filepath.Join(src, "ca.crt")},
		},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{"prod": {Token: "prod-token"}, "staging": {Token: "staging-token"}},
		Contexts: map[string]*clientcmdapi.Context{
			"prod":    {Cluster: "prod", AuthInfo: "prod"},
			"staging": {Cluster: "staging", AuthInfo: "staging"},
		},
	}
	path, dir, lock, err := writeOwnKubeconfig(raw, "staging")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	defer lock.Close()
	got, err := clientcmd.LoadFromFile(path)
	require.NoError(t, err)
	assert.Equal(t, "staging", got.CurrentContext)
	assert.Len(t, got.Contexts, 1, "the named context alone")
	assert.Len(t, got.Clusters, 1)
	assert.Equal(t, "https://127.0.0.1:6443", got.Clusters["staging"].Server)
	assert.Equal(t, []byte("the-ca"), got.Clusters["staging"].CertificateAuthorityData, "files inlined")
	assert.NotContains(t, got.AuthInfos, "prod", "no other context's credentials")
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	st, err = os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	assert.Equal(t, "prod", raw.CurrentContext, "the caller's config is not changed")
}

// A run killed with SIGKILL leaves its kubeconfig; the next run, or
// gpupool down, removes it, and never a live run's.
func TestStaleKubeconfigsOfDeadRunsGo(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	mk := func(pid int) string {
		d, err := os.MkdirTemp("", kubeconfigPrefix+strconv.Itoa(pid)+"-")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(d, "kubeconfig"), []byte("x"), 0o600))
		return d
	}
	other := filepath.Join(os.TempDir(), kubeconfigPrefix+"notapid")
	require.NoError(t, os.Mkdir(other, 0o700))
	// With a lock file, the lock decides, not the pid: a live run in
	// another pid namespace holds its lock, a dead one's pid may be
	// anyone's.
	_, held, lock, err := writeOwnKubeconfig(clientcmdapi.Config{
		Clusters:  map[string]*clientcmdapi.Cluster{"c": {Server: "https://127.0.0.1:6443"}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{"u": {}},
		Contexts:  map[string]*clientcmdapi.Context{"c": {Cluster: "c", AuthInfo: "u"}},
	}, "c")
	require.NoError(t, err)
	defer lock.Close()
	gone, alive := mk(dead.Process.Pid), mk(os.Getpid())
	unlocked := mk(os.Getpid())
	require.NoError(t, os.WriteFile(filepath.Join(unlocked, "lock"), nil, 0o600))
	// What the dead run recorded goes with it: its Karpenter's directory,
	// but nothing outside TMPDIR or not named as gpupool's.
	kp, err := os.MkdirTemp("", "gpupool-kp-")
	require.NoError(t, err)
	mine, err := os.MkdirTemp("", "not-gpupool-")
	require.NoError(t, err)
	require.NoError(t, AlsoRemove(filepath.Join(unlocked, "kubeconfig"), kp))
	require.NoError(t, AlsoRemove(filepath.Join(unlocked, "kubeconfig"), mine))
	require.NoError(t, AlsoRemove(filepath.Join(unlocked, "kubeconfig"), "/etc"))
	require.NoError(t, AlsoRemove("/somewhere/else/kubeconfig", kp), "not a run's private kubeconfig: nothing recorded")
	n, err := RemoveStaleKubeconfigs()
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.NoDirExists(t, gone)
	assert.DirExists(t, alive)
	assert.DirExists(t, other, "not named as a run's")
	assert.DirExists(t, held, "its lock is held")
	assert.NoDirExists(t, unlocked, "nobody holds its lock, whatever its pid")
	assert.NoDirExists(t, kp, "the dead run's Karpenter directory")
	assert.DirExists(t, mine, "not named as gpupool's")
	assert.DirExists(t, "/etc")
}
