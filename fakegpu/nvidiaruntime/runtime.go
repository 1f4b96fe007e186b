// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package nvidiaruntime is a fake NVIDIA container runtime for nodes with a
// real kubelet and containerd (kind). containerd runs it instead of runc
// for the nvidia runtime handler, as the GPU Operator's toolkit installs
// nvidia-container-runtime; like the real one it reads the container's OCI
// spec, decides which GPUs the container gets (fakegpu.RuntimeSettings.Sees,
// the toolkit's rules, access §1), changes the spec and runs runc with the
// same arguments.
//
// The fake GPUs have no device nodes, so what the container gets is a file
// (SightPath) naming the GPUs it sees, one UUID per line. The environment,
// mounts and capabilities it judges are the ones the real kubelet and
// containerd put in the spec: this is where the simulated kubelet's env
// merge (fakegpu.MergeEnv) is held to the real one.
package nvidiaruntime

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gpupool/gpupool/fakegpu"
)

const (
	// InstallDir is where the GPU Operator's toolkit installs its runtime
	// on the host (<installDir>/toolkit, installDir /usr/local/nvidia;
	// access §1.4). The fake runtime goes there under the real name.
	InstallDir = "/usr/local/nvidia/toolkit"
	// Binary is the runtime's file name in InstallDir; the program takes
	// the runtime's part when it is started under this name.
	Binary = "nvidia-container-runtime"
	// ConfigFile (in InstallDir) holds NodeConfig. The real toolkit's
	// config.toml is beside it in .config/nvidia-container-runtime; this
	// is the fake's own.
	ConfigFile = ".config/fakegpu/runtime.json"
	// SightPath is the file in the container naming the GPUs it sees.
	SightPath = "/run/fakegpu/visible-gpus"
	// SeesLine starts the line a probe container logs of SightPath:
	// "fakegpu-sees=<UUIDs, comma-separated>", or NoRuntime after the "="
	// when the file is absent (the container did not run through this
	// runtime).
	SeesLine  = "fakegpu-sees"
	NoRuntime = "<no NVIDIA runtime>"
	// sightFile is SightPath's source in the bundle.
	sightFile = "fakegpu-visible-gpus"
)

// NodeConfig is what the runtime of one node decides with: the toolkit's
// settings from the ClusterPolicy, and the node's GPUs by index.
type NodeConfig struct {
	Runtime fakegpu.RuntimeSettings `json:"runtime"`
	GPUs    fakegpu.NodeGPUs        `json:"gpus"`
}

// Access is what the runtime reads from a container's spec
// (access §1.1, §1.5, §1.11): the final environment, bind mounts of a
// file, CDI annotations, the CDI devices containerd already injected (the
// fake DRA plugin's variables), and privilege (CAP_SYS_ADMIN in the
// bounding set, the toolkit's IsPrivileged).
func Access(spec *specs.Spec) fakegpu.ContainerAccess {
	var c fakegpu.ContainerAccess
	if spec.Process != nil {
		for _, kv := range spec.Process.Env {
			name, value, _ := strings.Cut(kv, "=")
			c.Env = append(c.Env, fakegpu.EnvVar{Name: name, Value: value})
			if strings.HasPrefix(name, fakegpu.EnvDRADevicePrefix) && value != "" {
				// containerd applied a DRA claim's CDI spec.
				c.CDI = append(c.CDI, value)
			}
		}
		if caps := spec.Process.Capabilities; caps != nil {
			c.Privileged = slices.Contains(caps.Bounding, "CAP_SYS_ADMIN")
		}
	}
	for _, m := range spec.Mounts {
		if m.Type == "bind" || slices.Contains(m.Options, "bind") || slices.Contains(m.Options, "rbind") {
			c.Mounts = append(c.Mounts, fakegpu.Mount{Source: m.Source, Destination: m.Destination})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(spec.Annotations)) {
		// <prefix>cdi.k8s.io/<plugin>_<uuid>: the cdi-annotations strategy (access §3.2).
		if strings.Contains(k, "cdi.k8s.io/") {
			for _, d := range strings.Split(spec.Annotations[k], ",") {
				if d = strings.TrimSpace(d); d != "" {
					c.CDIAnnotations = append(c.CDIAnnotations, d)
				}
			}
		}
	}
	return c
}

// Apply decides what the container of bundle sees under cfg, writes it to
// the bundle and mounts it at SightPath (read-only), rewriting config.json.
func Apply(bundle string, cfg NodeConfig) (fakegpu.Sight, error) {
	path := filepath.Join(bundle, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return fakegpu.Sight{}, err
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return fakegpu.Sight{}, fmt.Errorf("%s: %w", path, err)
	}
	sight := cfg.Runtime.Sees(cfg.GPUs, Access(&spec))
	var b strings.Builder
	for _, g := range sight.GPUs {
		b.WriteString(g + "\n")
	}
	src := filepath.Join(bundle, sightFile)
	if err := os.WriteFile(src, []byte(b.String()), 0o444); err != nil {
		return sight, err
	}
	spec.Mounts = slices.DeleteFunc(spec.Mounts, func(m specs.Mount) bool { return m.Destination == SightPath })
	spec.Mounts = append(spec.Mounts, specs.Mount{Destination: SightPath, Type: "bind", Source: src, Options: []string{"rbind", "ro"}})
	out, err := json.Marshal(&spec)
	if err != nil {
		return sight, err
	}
	tmp := path + ".fakegpu"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return sight, err
	}
	return sight, os.Rename(tmp, path)
}

// ReadConfig reads the node's NodeConfig from dir (InstallDir).
func ReadConfig(dir string) (NodeConfig, error) {
	var cfg NodeConfig
	data, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		return cfg, fmt.Errorf("the toolkit's settings are not installed: %w", err)
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return cfg, fmt.Errorf("%s: %w", filepath.Join(dir, ConfigFile), err)
	}
	return cfg, nil
}

// WriteConfig writes cfg to dir atomically (containers may start at any
// moment); unchanged reports whether the file already said the same.
func WriteConfig(dir string, cfg NodeConfig) (changed bool, err error) {
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return false, err
	}
	path := filepath.Join(dir, ConfigFile)
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	return true, writeAtomic(path, data, 0o644)
}

// Install copies the running program to dir as Binary, atomically: a
// container may be starting through the old copy.
func Install(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(self)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, Binary), data, 0o755)
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Bundle finds the bundle of a runc command line whose subcommand creates
// a container ("create" or "run"): its --bundle/-b value, else the working
// directory. ok is false for every other command, which passes through.
func Bundle(args []string) (bundle string, ok bool, err error) {
	cmd := -1
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			cmd = i
			break
		}
		// runc's global options that take a value as the next argument.
		if !strings.Contains(a, "=") && slices.Contains([]string{"--root", "--log", "--log-format", "--criu", "--rootless"}, a) {
			i++
		}
	}
	if cmd < 0 || (args[cmd] != "create" && args[cmd] != "run") {
		return "", false, nil
	}
	for i := cmd + 1; i < len(args); i++ {
		a := args[i]
		if v, found := strings.CutPrefix(a, "--bundle="); found {
			return v, true, nil
		}
		if a == "--bundle" || a == "-b" {
			if i+1 >= len(args) {
				return "", true, errors.New(a + " without a value")
			}
			return args[i+1], true, nil
		}
	}
	wd, err := os.Getwd()
	return wd, true, err
}
