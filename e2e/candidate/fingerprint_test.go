package candidate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFingerprintFollowsContentNotPlace(t *testing.T) {
	write := func(dir, body string) *Candidate {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "10-rc.yaml"), []byte(body), 0o644))
		c, err := Load(dir)
		require.NoError(t, err)
		return c
	}
	rc := "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n"
	a, b := write(t.TempDir(), rc), write(t.TempDir(), rc)
	assert.True(t, strings.HasPrefix(a.Fingerprint(), "sha256:"))
	assert.Equal(t, a.Fingerprint(), b.Fingerprint(), "the same manifests elsewhere")
	c := write(t.TempDir(), strings.Replace(rc, "handler: nvidia", "handler: runc", 1))
	assert.NotEqual(t, a.Fingerprint(), c.Fingerprint(), "one field changed")
}
