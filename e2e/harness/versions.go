package harness

import (
	"os"
	"path/filepath"
)

// Component versions. hack/lib.sh pins the same values for the build; a
// unit test keeps the two in step.
const (
	KubeVersion = "v1.37.2"
	EtcdVersion = "v3.7.0"
	KwokVersion = "v0.8.0"
	KindVersion = "v0.33.0"
)

// CacheDir is where hack/build-control-plane.sh puts built binaries.
func CacheDir() string {
	if d := os.Getenv("GPUPOOL_CACHE"); d != "" {
		return d
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "gpupool")
}

// StateDir holds live clusters' working files.
func StateDir() string {
	if d := os.Getenv("GPUPOOL_STATE"); d != "" {
		return d
	}
	return filepath.Join(CacheDir(), "state")
}
