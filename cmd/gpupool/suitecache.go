package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gpupool/gpupool/e2e/harness"
)

// Built suites are cached by what they are built from, so a warm run does
// not relink ten 47 MB test binaries it built a minute ago (15 s here).
// The key hashes the Go toolchain and its settings, the suite pattern, the
// checkout's place and every file of the packages the module compiles: a
// change to any of them is a new key.

// suiteCacheKeep is how many builds the cache keeps (about 0.5 GB each).
const suiteCacheKeep = 2

func suiteCacheDir() string { return filepath.Join(harness.CacheDir(), "suites") }

// suiteCacheOff: GPUPOOL_SUITE_CACHE=off builds the suites every run.
func suiteCacheOff() bool { return os.Getenv("GPUPOOL_SUITE_CACHE") == "off" }

// suiteKey is the cache key of the suites pattern builds from root.
func suiteKey(ctx context.Context, root, pattern string) (string, error) {
	env := exec.CommandContext(ctx, "go", "env", "GOVERSION", "GOOS", "GOARCH", "CGO_ENABLED", "GOFLAGS", "GOEXPERIMENT")
	env.Dir = root
	settings, err := env.Output()
	if err != nil {
		return "", fmt.Errorf("go env: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n", settings, root, pattern)
	var files []string
	goDirs := map[string]bool{}
	hasGoFiles := func(dir string) bool {
		if v, ok := goDirs[dir]; ok {
			return v
		}
		m, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		goDirs[dir] = len(m) > 0
		return goDirs[dir]
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			switch rel {
			case ".git", "bin", "reports/out", "hack/tools", "docs":
				return filepath.SkipDir
			}
			return nil
		}
		// Go sources and whatever a package embeds beside them.
		if d.Type().IsRegular() && (strings.HasSuffix(p, ".go") || rel == "go.mod" || rel == "go.sum" || hasGoFiles(filepath.Dir(p))) {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	for _, rel := range files {
		f, err := os.Open(filepath.Join(root, rel))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\n", rel)
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// cachedSuites returns the suites built under key, or nil.
func cachedSuites(key string) []suite {
	b, err := os.ReadFile(filepath.Join(suiteCacheDir(), key, "suites.txt"))
	if err != nil {
		return nil
	}
	var out []suite
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			return nil
		}
		if _, err := os.Stat(f[2]); err != nil {
			return nil
		}
		out = append(out, suite{pkg: f[0], dir: f[1], bin: f[2]})
	}
	now := time.Now()
	_ = os.Chtimes(filepath.Join(suiteCacheDir(), key), now, now) // recently used
	return out
}

// storeSuites moves freshly built suites from work into the cache under
// key (a concurrent run may have stored them first: then its copy is used)
// and prunes all but the most recently used builds.
func storeSuites(key, work string, suites []suite) []suite {
	dst := filepath.Join(suiteCacheDir(), key)
	tmp := dst + ".tmp-" + filepath.Base(work)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return suites
	}
	var lines []string
	moved := make([]suite, len(suites))
	for i, s := range suites {
		bin := filepath.Join(dst, filepath.Base(s.bin))
		if err := os.Rename(s.bin, filepath.Join(tmp, filepath.Base(s.bin))); err != nil {
			os.RemoveAll(tmp)
			return suites
		}
		moved[i] = suite{pkg: s.pkg, dir: s.dir, bin: bin}
		lines = append(lines, s.pkg+"\t"+s.dir+"\t"+bin)
	}
	if err := os.WriteFile(filepath.Join(tmp, "suites.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil || os.Rename(tmp, dst) != nil {
		os.RemoveAll(tmp)
		if c := cachedSuites(key); c != nil {
			return c
		}
		return suites
	}
	pruneSuiteCache(key)
	return moved
}

func pruneSuiteCache(keep string) {
	entries, err := os.ReadDir(suiteCacheDir())
	if err != nil {
		return
	}
	type build struct {
		name string
		mod  int64
	}
	var builds []build
	for _, e := range entries {
		if !e.IsDir() || e.Name() == keep {
			continue
		}
		if strings.Contains(e.Name(), ".tmp-") {
			// A store a killed run left half done (an hour is far longer
			// than any store takes).
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Hour {
				os.RemoveAll(filepath.Join(suiteCacheDir(), e.Name()))
			}
			continue
		}
		if fi, err := e.Info(); err == nil {
			builds = append(builds, build{e.Name(), fi.ModTime().UnixNano()})
		}
	}
	sort.Slice(builds, func(i, j int) bool { return builds[i].mod > builds[j].mod })
	for i, b := range builds {
		if i >= suiteCacheKeep-1 {
			os.RemoveAll(filepath.Join(suiteCacheDir(), b.name))
		}
	}
}
