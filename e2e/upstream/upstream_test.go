package upstream

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/e2e/versions"
)

// source is an embedded SOURCE file, parsed.
type source struct {
	module, version string
	sha256          map[string]string // path in the module → hex
}

// embedded is one upstream module's copy: its files, its directory in
// them, the pin upstream.go holds and the files the harness reads.
type embedded struct {
	fsys            fs.FS
	dir             string
	module, version string
	read            func(string) ([]byte, error)
	used            []string
}

var embeddedModules = []embedded{
	{gpuOperator, gpuOperatorDir, GPUOperatorModule, GPUOperatorVersion(), GPUOperatorFile, []string{ClusterPolicyCRD, ClusterPolicySample, DefaultMIGPartedConfig}},
	{karpenter, "karpenter", KarpenterModule, KarpenterVersion(), KarpenterFile, KarpenterCRDs},
}

func readSource(t *testing.T, e embedded) source {
	t.Helper()
	data, err := fs.ReadFile(e.fsys, path.Join(e.dir, "SOURCE"))
	if err != nil {
		t.Fatal(err)
	}
	s := source{sha256: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case f[0] == "module" && len(f) == 2:
			s.module = f[1]
		case f[0] == "version" && len(f) == 2:
			s.version = f[1]
		case f[0] == "sha256" && len(f) == 3:
			s.sha256[f[2]] = f[1]
		default:
			t.Fatalf("%s/SOURCE: malformed line %q", e.dir, sc.Text())
		}
	}
	return s
}

// The copies are there and match SOURCE, with no toolchain: this is what a
// binary built with go install carries.
func TestEmbeddedUpstreamFiles(t *testing.T) {
	for _, e := range embeddedModules {
		t.Run(e.dir, func(t *testing.T) {
			src := readSource(t, e)
			if src.module != e.module || src.version != e.version {
				t.Errorf("SOURCE names %s@%s, upstream.go pins %s@%s: run hack/update-upstream.sh", src.module, src.version, e.module, e.version)
			}
			for _, rel := range e.used {
				data, err := e.read(rel)
				if err != nil {
					t.Fatal(err)
				}
				if len(data) == 0 {
					t.Errorf("%s is empty", rel)
				}
				if src.sha256[rel] == "" {
					t.Errorf("SOURCE has no sha256 of %s", rel)
				}
			}
			// Every embedded file is in SOURCE with its hash, and nothing else is.
			n := 0
			err := fs.WalkDir(e.fsys, e.dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || p == path.Join(e.dir, "SOURCE") {
					return err
				}
				n++
				rel := strings.TrimPrefix(p, e.dir+"/")
				data, err := fs.ReadFile(e.fsys, p)
				if err != nil {
					return err
				}
				if got, want := sha256Hex(data), src.sha256[rel]; got != want {
					t.Errorf("%s: sha256 %s, SOURCE says %q", rel, got, want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != len(src.sha256) {
				t.Errorf("%d files embedded, SOURCE lists %d", n, len(src.sha256))
			}
			if _, err := e.read("no/such/file.yaml"); err == nil {
				t.Error("reading a file not embedded: no error")
			}
		})
	}
}

// The copies are the module's files, unmodified, where the module can be
// had (go on PATH and the module in the module cache).
func TestEmbeddedUpstreamFilesMatchTheModule(t *testing.T) {
	for _, e := range embeddedModules {
		t.Run(e.dir, func(t *testing.T) {
			src := readSource(t, e)
			dir := moduleDir(t, src.module+"@"+src.version)
			for rel, sum := range src.sha256 {
				want, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
				if err != nil {
					t.Errorf("the module: %v", err)
					continue
				}
				got, err := fs.ReadFile(e.fsys, path.Join(e.dir, rel))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from the module's: run hack/update-upstream.sh", rel)
				}
				if sha256Hex(want) != sum {
					t.Errorf("%s: SOURCE's sha256 %s is not the module file's %s", rel, sum, sha256Hex(want))
				}
			}
		})
	}
}

// The CRDs a run installs are the release the autoscaler is built from.
func TestKarpenterCRDsAreTheBuiltRelease(t *testing.T) {
	if KarpenterVersion() != versions.Karpenter {
		t.Errorf("upstream.go pins Karpenter's CRDs at %s, the autoscaler is built at %s (e2e/versions)", KarpenterVersion(), versions.Karpenter)
	}
}

// moduleDir is the module's directory in the module cache, downloaded
// through the module proxy if missing (go test runs where go does). A copy
// that cannot be compared fails the test: drift must not pass unseen.
func moduleDir(t *testing.T, modVersion string) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", modVersion).Output()
	var info struct{ Dir, Error string }
	_ = json.Unmarshal(out, &info)
	if err != nil || info.Dir == "" {
		t.Fatalf("go mod download %s: %v %s: cannot compare the embedded copies with the module", modVersion, err, info.Error)
	}
	return info.Dir
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
