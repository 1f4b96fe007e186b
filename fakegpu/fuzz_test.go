// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// configMapData is every data value of the built-in candidates'
// ConfigMaps: device-plugin and mig-parted configs as teams write them.
func configMapData(f *testing.F) [][]byte {
	files, _ := filepath.Glob("../manifests/candidates/*/*.yaml")
	var out [][]byte
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			var cm struct {
				Kind string            `json:"kind"`
				Data map[string]string `json:"data"`
			}
			if yaml.Unmarshal([]byte(doc), &cm) != nil || cm.Kind != "ConfigMap" {
				continue
			}
			for _, v := range cm.Data {
				out = append(out, []byte(v))
			}
		}
	}
	return out
}

// FuzzParseDevicePluginConfig: no config makes the parser panic, and one
// it accepts answers the questions the stack asks of it.
func FuzzParseDevicePluginConfig(f *testing.F) {
	for _, d := range configMapData(f) {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseDevicePluginConfig(data)
		if err != nil {
			return
		}
		_ = c.SharedReplicas()
		_, _ = c.SharingMode()
		_ = c.FailsRequestsGreaterThanOne()
	})
}

// FuzzParseMIGPartedConfig: no config makes mig-parted's strict parser
// panic.
func FuzzParseMIGPartedConfig(f *testing.F) {
	for _, d := range configMapData(f) {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParseMIGPartedConfig(data)
	})
}

// FuzzParseClusterPolicy: no manifest makes the ClusterPolicy reader
// panic. Seeds: the built-in candidates' files.
func FuzzParseClusterPolicy(f *testing.F) {
	files, _ := filepath.Glob("../manifests/candidates/*/50-clusterpolicy.yaml")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParseClusterPolicy(data)
	})
}
