// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"slices"
	"strings"
	"testing"
)

// TestSees: what the NVIDIA runtime exposes to a container, row by row
// from docs/facts/gpu-access-facts.md (access §n).
func TestSees(t *testing.T) {
	node := NodeGPUsOf("n1", 4, map[string]int64{"nvidia.com/mig-1g.10gb": 2})
	gpu := node.GPUs
	var mig []string
	for id := range node.MIG {
		mig = append(mig, id)
	}
	slices.Sort(mig)
	permissive := ToolkitSettings{}
	closed := ToolkitSettings{EnvvarRefusedUnprivileged: true, VolumeMountsAccepted: true}
	flagOnly := ToolkitSettings{EnvvarRefusedUnprivileged: true}
	envvar := map[string]string(nil)
	volume := map[string]string{"DEVICE_LIST_STRATEGY": "volume-mounts"}
	cdi := map[string]string{"DEVICE_LIST_STRATEGY": "cdi-annotations,cdi-cri"}

	tests := []struct {
		name       string
		tk         ToolkitSettings
		dpEnv      map[string]string
		cdiOn      bool
		handler    string
		privileged bool
		image      string
		spec       []EnvVar
		mounts     []Mount
		allocated  []string // advertised IDs the kubelet allocated
		want       []string
		wantVia    string
	}{
		// access §2.1, §2.2: a CUDA image with no request sees every GPU.
		{name: "cuda image, no request, nvidia handler", tk: permissive, handler: "nvidia", image: "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", want: gpu, wantVia: "NVIDIA_VISIBLE_DEVICES=all"},
		// access §5.1: nvidia is containerd's default, so no RuntimeClass is the same.
		{name: "cuda image, no request, no handler", tk: permissive, image: "nvidia/cuda:12.4.1-base", want: gpu},
		// access §1.6: indices, UUIDs.
		{name: "env index", tk: permissive, handler: "nvidia", spec: []EnvVar{{EnvVisibleDevices, "1"}}, want: gpu[1:2]},
		{name: "env UUID", tk: permissive, handler: "nvidia", spec: []EnvVar{{EnvVisibleDevices, gpu[2]}}, want: gpu[2:3]},
		{name: "env MIG UUID", tk: permissive, handler: "nvidia", spec: []EnvVar{{EnvVisibleDevices, mig[0]}}, want: mig[:1]},
		{name: "none sees no GPU", tk: permissive, handler: "nvidia", spec: []EnvVar{{EnvVisibleDevices, "none"}}},
		{name: "void anywhere wins", tk: permissive, handler: "nvidia", spec: []EnvVar{{EnvVisibleDevices, "0,void"}}},
		// access §1.8: CDI names reach only specs that exist (CDI on).
		{name: "management CDI name, CDI off", tk: permissive, handler: "nvidia", spec: []EnvVar{{EnvVisibleDevices, "management.nvidia.com/gpu=all"}}},
		{name: "management CDI name, CDI on", tk: permissive, cdiOn: true, handler: "nvidia", spec: []EnvVar{{EnvVisibleDevices, "management.nvidia.com/gpu=all"}}, want: gpu},
		// access §1.1(c), §3.3: the flag false closes the env path for unprivileged containers...
		{name: "flag false, env all", tk: closed, dpEnv: volume, handler: "nvidia", spec: []EnvVar{{EnvVisibleDevices, "all"}}},
		{name: "flag false, cuda image", tk: closed, dpEnv: volume, image: "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"},
		// ... not for privileged or SYS_ADMIN ones (access §1.5).
		{name: "flag false, privileged", tk: closed, handler: "nvidia", privileged: true, spec: []EnvVar{{EnvVisibleDevices, "all"}}, want: gpu},
		// access §1.5: containerd gives a privileged container every host device even under runc.
		{name: "privileged under runc", tk: closed, handler: "runc", privileged: true, want: gpu},
		// access §1.2 under a handler that is not NVIDIA's: the variable is ignored.
		{name: "runc handler ignores env", tk: permissive, handler: "runc", spec: []EnvVar{{EnvVisibleDevices, "all"}}},
		// access §1.9: under envvar the pod spec's value beats the plugin's.
		{name: "allocated 1, envvar, sets all", tk: permissive, dpEnv: envvar, handler: "nvidia", allocated: gpu[:1], spec: []EnvVar{{EnvVisibleDevices, "all"}}, want: gpu},
		// ... and the plugin's beats the image's.
		{name: "allocated 1, envvar, cuda image", tk: permissive, dpEnv: envvar, handler: "nvidia", allocated: gpu[1:2], image: "nvidia/cuda:12.4.1-base", want: gpu[1:2]},
		// access §3.3: volume-mounts are read before the env, so naming all does not widen.
		{name: "allocated 1, volume-mounts, sets all", tk: closed, dpEnv: volume, handler: "nvidia", allocated: gpu[:1], spec: []EnvVar{{EnvVisibleDevices, "all"}}, want: gpu[:1]},
		// A time-slicing replica is its GPU (access §3.2).
		{name: "replica, volume-mounts", tk: closed, dpEnv: volume, handler: "nvidia", allocated: []string{gpu[3] + "::2"}, want: gpu[3:4]},
		{name: "MIG device, volume-mounts", tk: closed, dpEnv: volume, handler: "nvidia", allocated: mig[1:2], spec: []EnvVar{{EnvVisibleDevices, "all"}}, want: mig[1:2]},
		// access §3.3: the flag false with envvar leaves a GPU pod with no GPU.
		{name: "flag false, envvar strategy, allocated", tk: flagOnly, dpEnv: envvar, handler: "nvidia", allocated: gpu[:1], wantVia: "ignored: the toolkit refuses"},
		// volume-mounts without as-volume-mounts: the plugin's env is a path, no GPU.
		{name: "volume-mounts without as-volume-mounts", tk: ToolkitSettings{}, dpEnv: volume, handler: "nvidia", allocated: gpu[:1]},
		// access §1.11: a hostPath /dev/null mount forges a request once mounts are accepted.
		{name: "forged /dev/null mount", tk: closed, dpEnv: volume, handler: "nvidia", mounts: []Mount{{"/dev/null", VolumeMountDir + "/" + gpu[2]}}, want: gpu[2:3]},
		// access §3.2: a CDI strategy injects the device and ends the env with void.
		{name: "allocated 1, CDI, sets all", tk: permissive, dpEnv: cdi, cdiOn: true, handler: "nvidia", allocated: gpu[:1], spec: []EnvVar{{EnvVisibleDevices, "all"}}, want: []string{CDIKindDevicePlugin + "=" + gpu[0]}},
		// access §1.1(a): CDI annotations are the NVIDIA runtime's, with CDI on; under runc only CdiDevices count.
		{name: "cdi-annotations under runc", tk: closed, dpEnv: map[string]string{"DEVICE_LIST_STRATEGY": "cdi-annotations"}, cdiOn: true, handler: "runc", allocated: gpu[:1]},
		{name: "cdi-cri under runc", tk: closed, dpEnv: map[string]string{"DEVICE_LIST_STRATEGY": "cdi-cri"}, cdiOn: true, handler: "runc", allocated: gpu[:1], want: []string{CDIKindDevicePlugin + "=" + gpu[0]}},
		// access §1.6: a legacy CUDA image (CUDA_VERSION, no NVIDIA_REQUIRE_CUDA) means all.
		{name: "legacy image env", tk: permissive, handler: "nvidia", spec: []EnvVar{{"CUDA_VERSION", "9.0"}}, want: gpu},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &ClusterPolicySettings{DevicePluginEnabled: true, ToolkitEnabled: true, ToolkitSetAsDefault: true, CDIEnabled: tc.cdiOn, DevicePluginEnv: tc.dpEnv, Toolkit: tc.tk}
			s := &Stack{Policy: p}
			resp := p.Allocate(tc.allocated, node.GPUs)
			c := ContainerAccess{
				Name: "main", Handler: tc.handler, Privileged: tc.privileged,
				Env:    MergeEnv(ImageEnv(tc.image), resp.Env, tc.spec),
				Mounts: append(resp.Mounts, tc.mounts...),
				CDI:    resp.CDI, CDIAnnotations: resp.CDIAnnotations,
				Allocated: AllocatedDevices(tc.allocated),
			}
			if cdi := append(resp.CDI, resp.CDIAnnotations...); len(cdi) > 0 {
				c.Allocated = cdi
			}
			got := s.Sees(node, c)
			if !slices.Equal(got.GPUs, tc.want) {
				t.Errorf("sees %v, want %v (via %q)", got.GPUs, tc.want, got.Via)
			}
			if tc.wantVia != "" && !strings.Contains(got.Via, tc.wantVia) {
				t.Errorf("via %q, want it to contain %q", got.Via, tc.wantVia)
			}
			var wantExtra []string
			for _, g := range tc.want {
				if !slices.Contains(c.Allocated, g) {
					wantExtra = append(wantExtra, g)
				}
			}
			if !slices.Equal(got.Unallocated, wantExtra) {
				t.Errorf("unallocated %v, want %v", got.Unallocated, wantExtra)
			}
		})
	}
}

func TestParseClusterPolicyToolkitAccess(t *testing.T) {
	doc := `kind: ClusterPolicy
spec:
  toolkit:
    version: v1.17.8-ubuntu20.04
    env:
      - {name: ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED, value: "false"}
      - {name: ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS, value: "true"}
  devicePlugin:
    env:
      - {name: DEVICE_LIST_STRATEGY, value: volume-mounts}
`
	p, err := ParseClusterPolicy([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Toolkit.EnvvarRefusedUnprivileged || !p.Toolkit.VolumeMountsAccepted || p.ToolkitVersion != "v1.17.8-ubuntu20.04" {
		t.Errorf("toolkit settings %+v version %q", p.Toolkit, p.ToolkitVersion)
	}
	if got := p.DeviceListStrategy(); !slices.Equal(got, []string{ListVolumeMounts}) {
		t.Errorf("strategy %v", got)
	}
	for _, bad := range []struct{ doc, want string }{
		{"kind: ClusterPolicy\nspec: {toolkit: {env: [{name: ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS, value: yes please}]}}", "spec.toolkit.env[0] (ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS)"},
		{"kind: ClusterPolicy\nspec: {devicePlugin: {env: [{name: DEVICE_LIST_STRATEGY, value: 'envvar,mounts'}]}}", "invalid strategy: mounts"},
		{"kind: ClusterPolicy\nspec: {devicePlugin: {env: [{name: DEVICE_ID_STRATEGY, value: serial}]}}", "DEVICE_ID_STRATEGY"},
	} {
		if _, err := ParseClusterPolicy([]byte(bad.doc)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v, want it to contain %q", bad.doc, err, bad.want)
		}
	}
}

// TestToolkitBelowFloor: access §6 and §1.7.
func TestToolkitBelowFloor(t *testing.T) {
	for _, tc := range []struct {
		tag        string
		fails, adv int
	}{
		{ToolkitDefaultVersion, 0, 1},
		{"v1.17.4-ubuntu20.04", 1, 1},
		{"v1.16.1", 5, 1},
		{"v1.18.1-ubi8", 1, 1},
		{"v1.18.2", 0, 1},
		{"v1.20.0", 0, 0},
	} {
		f, a, err := ToolkitBelowFloor(tc.tag)
		if err != nil || len(f) != tc.fails || len(a) != tc.adv {
			t.Errorf("%s: failures %q advisories %q err %v; want %d and %d", tc.tag, f, a, err, tc.fails, tc.adv)
		}
	}
	if _, _, err := ToolkitBelowFloor("latest"); err == nil {
		t.Error("tag latest: want an error")
	}
}

// A device-list strategy in the plugin's config file never applies under
// the GPU Operator: its env wins (stack-facts §1 precedence). Warned, not
// refused.
func TestStrategyInConfigFileIsWarned(t *testing.T) {
	s := &Stack{
		Policy:       &ClusterPolicySettings{DevicePluginEnabled: true, DevicePluginConfig: "cm", DevicePluginDefault: "d"},
		DevicePlugin: DevicePluginConfigs{"d": mustDevicePluginConfig(t, "version: v1\nflags:\n  plugin:\n    deviceListStrategy: volume-mounts\n")},
	}
	w := strings.Join(s.Warnings(), "\n")
	if !strings.Contains(w, "ConfigMap cm data[d]: flags.plugin.deviceListStrategy is ignored") || !strings.Contains(w, "spec.devicePlugin.env") {
		t.Errorf("warnings: %s", w)
	}
}

// A fleet's declared images: by digest, then tag, then repository; the
// facts' CUDA images when nothing is declared.
func TestImageEnvsDeclared(t *testing.T) {
	all := []EnvVar{{EnvVisibleDevices, "all"}}
	idx := []EnvVar{{EnvVisibleDevices, "0"}}
	e := ImageEnvs{
		"registry.example.com/ml/trainer":       all,
		"registry.example.com/ml/trainer:v2":    idx,
		"team/notebook@sha256:" + digest64("a"): idx,
	}
	for _, tc := range []struct {
		image string
		want  []EnvVar
	}{
		{"registry.example.com/ml/trainer", all},
		{"registry.example.com/ml/trainer:v1", all},
		{"registry.example.com/ml/trainer:v2", idx},
		{"registry.example.com/ml/trainer@sha256:" + digest64("b"), all},
		{"docker.io/team/notebook@sha256:" + digest64("a"), idx},
		{"team/notebook:latest", nil},
		{"nvidia/cuda:12.4.1-base-ubuntu22.04", ImageEnv("nvidia/cuda")},
		{"docker.io/library/busybox", nil},
	} {
		got := e.Env(tc.image)
		if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
			t.Errorf("Env(%s) = %v, want %v", tc.image, got, tc.want)
		}
	}
	back, err := DecodeImageEnvs(map[string]string{AnnotationImageEnv: e.Encode()})
	if err != nil || len(back) != len(e) || back.Env("registry.example.com/ml/trainer:v2")[0] != idx[0] {
		t.Errorf("the annotation does not round-trip: %v, %v", back, err)
	}
	if _, err := DecodeImageEnvs(map[string]string{AnnotationImageEnv: "{"}); err == nil {
		t.Error("a malformed annotation decoded")
	}
	if got, _ := DecodeImageEnvs(nil); got.Env("nvidia/cuda:12") == nil {
		t.Error("with nothing declared, CUDA images still set the variable")
	}
}

func digest64(c string) string { return strings.Repeat(c, 64) }
