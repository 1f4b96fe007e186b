// Package upstream finds files that upstream projects ship in their Go
// modules (the GPU Operator's CRDs, samples and default configs), so the
// harness uses them unmodified instead of carrying copies.
package upstream

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sync"
)

// GPUOperatorModule is the module that carries the ClusterPolicy CRD.
const GPUOperatorModule = "github.com/NVIDIA/gpu-operator"

// gpuOperatorVersion pins the GPU Operator release whose files the harness
// uses. The main module imports none of its Go packages (their dependency
// tree is large), so the pin lives here; if a build ever links the module,
// its version from the build info wins.
const gpuOperatorVersion = "v0.0.0-20250917190837-d73a0086a6ba"

// Files of the GPU Operator module, relative to its root.
const (
	ClusterPolicyCRD       = "config/crd/bases/nvidia.com_clusterpolicies.yaml"
	ClusterPolicySample    = "config/samples/v1_clusterpolicy.yaml"
	DefaultMIGPartedConfig = "assets/state-mig-manager/0400_configmap.yaml"
)

var (
	dirOnce sync.Once
	dir     string
	dirErr  error
)

// GPUOperatorFile returns the absolute path of a file in the GPU Operator
// module, downloading the module through the Go module proxy if the module
// cache lacks it.
func GPUOperatorFile(rel string) (string, error) {
	dirOnce.Do(func() { dir, dirErr = moduleDir(GPUOperatorModule, version(GPUOperatorModule, gpuOperatorVersion)) })
	if dirErr != nil {
		return "", dirErr
	}
	return filepath.Join(dir, rel), nil
}

func version(mod, fallback string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == mod {
				if d.Replace != nil {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	return fallback
}

func moduleDir(mod, ver string) (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", mod+"@"+ver).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return "", fmt.Errorf("go mod download %s@%s: %w: %s", mod, ver, err, ee.Stderr)
		}
		return "", fmt.Errorf("go mod download %s@%s: %w (is go on PATH?)", mod, ver, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", err
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", mod, ver, info.Error)
	}
	return info.Dir, nil
}

// GPUOperatorVersion is the GPU Operator module version whose files a run
// uses (its CRD, sample and default MIG config).
func GPUOperatorVersion() string { return version(GPUOperatorModule, gpuOperatorVersion) }
