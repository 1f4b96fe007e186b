// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package nvidiaruntime

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gpupool/gpupool/fakegpu"
)

func TestBundle(t *testing.T) {
	wd, _ := os.Getwd()
	for _, tc := range []struct {
		args    []string
		bundle  string
		creates bool
	}{
		// As containerd's runc shim calls it (go-runc).
		{[]string{"--root", "/run/containerd/runc/k8s.io", "--log", "/x/log.json", "--log-format", "json", "--systemd-cgroup", "create", "--bundle", "/b1", "--pid-file", "/b1/init.pid", "id1"}, "/b1", true},
		{[]string{"run", "-b", "/b2", "id"}, "/b2", true},
		{[]string{"create", "--bundle=/b3", "id"}, "/b3", true},
		{[]string{"create", "id"}, wd, true},
		{[]string{"--root", "/r", "start", "id1"}, "", false},
		{[]string{"--root", "/r", "state", "create"}, "", false},
		{[]string{"--version"}, "", false},
	} {
		got, creates, err := Bundle(tc.args)
		if err != nil || got != tc.bundle || creates != tc.creates {
			t.Errorf("Bundle(%q) = %q, %v, %v; want %q, %v", tc.args, got, creates, err, tc.bundle, tc.creates)
		}
	}
	if _, _, err := Bundle([]string{"create", "--bundle"}); err == nil {
		t.Error("--bundle without a value: want an error")
	}
}

// A spec as the kubelet and containerd build it for a container the
// device plugin gave GPU 1 under volume-mounts, whose pod also sets the
// variable to all.
func sampleSpec() *specs.Spec {
	return &specs.Spec{
		Process: &specs.Process{
			Env:          []string{"PATH=/bin", "NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices", "NVIDIA_VISIBLE_DEVICES=all"},
			Capabilities: &specs.LinuxCapabilities{Bounding: []string{"CAP_CHOWN", "CAP_NET_BIND_SERVICE"}},
		},
		Mounts: []specs.Mount{
			{Destination: "/etc/hosts", Type: "bind", Source: "/var/lib/kubelet/pods/x/etc-hosts", Options: []string{"rbind", "rw"}},
			{Destination: "/var/run/nvidia-container-devices/GPU-1", Type: "bind", Source: "/dev/null", Options: []string{"rbind", "ro"}},
		},
	}
}

func TestApply(t *testing.T) {
	gpus := fakegpu.NodeGPUs{GPUs: []string{"GPU-0", "GPU-1", "GPU-2"}}
	for _, tc := range []struct {
		name string
		rt   fakegpu.RuntimeSettings
		spec func(*specs.Spec)
		want []string
	}{
		{"toolkit defaults: the variable, last entry wins", fakegpu.RuntimeSettings{}, nil, gpus.GPUs},
		{"env refused, mounts accepted", fakegpu.RuntimeSettings{Toolkit: fakegpu.ToolkitSettings{EnvvarRefusedUnprivileged: true, VolumeMountsAccepted: true}}, nil, []string{"GPU-1"}},
		{"env refused, no mounts accepted", fakegpu.RuntimeSettings{Toolkit: fakegpu.ToolkitSettings{EnvvarRefusedUnprivileged: true}}, nil, nil},
		{"env refused, but CAP_SYS_ADMIN", fakegpu.RuntimeSettings{Toolkit: fakegpu.ToolkitSettings{EnvvarRefusedUnprivileged: true}},
			func(s *specs.Spec) {
				s.Process.Capabilities.Bounding = append(s.Process.Capabilities.Bounding, "CAP_SYS_ADMIN")
			}, gpus.GPUs},
		{"a DRA claim's CDI devices", fakegpu.RuntimeSettings{},
			func(s *specs.Spec) {
				s.Process.Env = []string{fakegpu.EnvDRADevicePrefix + "GPU_0=GPU-2"}
				s.Mounts = nil
			}, []string{"GPU-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bundle := t.TempDir()
			spec := sampleSpec()
			if tc.spec != nil {
				tc.spec(spec)
			}
			data, _ := json.Marshal(spec)
			if err := os.WriteFile(filepath.Join(bundle, "config.json"), data, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := Apply(bundle, NodeConfig{Runtime: tc.rt, GPUs: gpus}); err != nil {
				t.Fatal(err)
			}
			var out specs.Spec
			data, _ = os.ReadFile(filepath.Join(bundle, "config.json"))
			if err := json.Unmarshal(data, &out); err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(out.Mounts, func(m specs.Mount) bool { return m.Destination == SightPath })
			if i < 0 {
				t.Fatalf("no mount at %s: %+v", SightPath, out.Mounts)
			}
			sees, err := os.ReadFile(out.Mounts[i].Source)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Fields(string(sees)); !slices.Equal(got, tc.want) {
				t.Errorf("the container sees %q, want %q", got, tc.want)
			}
			if len(out.Mounts) != len(spec.Mounts)+1 {
				t.Errorf("mounts: got %d, want the spec's %d and one more", len(out.Mounts), len(spec.Mounts))
			}
		})
	}
}

func TestConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadConfig(dir); err == nil {
		t.Error("ReadConfig before WriteConfig: want an error")
	}
	cfg := NodeConfig{Runtime: fakegpu.RuntimeSettings{CDIEnabled: true}, GPUs: fakegpu.NodeGPUs{GPUs: []string{"GPU-0"}}}
	for i, want := range []bool{true, false} {
		changed, err := WriteConfig(dir, cfg)
		if err != nil || changed != want {
			t.Fatalf("WriteConfig #%d: changed %v, err %v; want changed %v", i+1, changed, err, want)
		}
	}
	got, err := ReadConfig(dir)
	if err != nil || !got.Runtime.CDIEnabled || !slices.Equal(got.GPUs.GPUs, cfg.GPUs.GPUs) {
		t.Errorf("ReadConfig = %+v, %v; want %+v", got, err, cfg)
	}
}
