// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"os"
	"path/filepath"
	stagev1alpha1 "sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	schedulerv1 "k8s.io/kube-scheduler/config/v1"
	kwokv1alpha1 "sigs.k8s.io/kwok/pkg/apis/config/v1alpha1"
	"sigs.k8s.io/yaml"
)

// parseKwokctlConfig reads the documents kwokctlConfig wrote back through
// kwok's own types, strictly: a field kwokctl does not know fails here
// rather than being dropped by kwokctl.
func parseKwokctlConfig(t *testing.T, cfg string) (kwokv1alpha1.KwokctlConfiguration, []kwokv1alpha1.KwokConfiguration) {
	t.Helper()
	var ctl kwokv1alpha1.KwokctlConfiguration
	var kwoks []kwokv1alpha1.KwokConfiguration
	for i, doc := range strings.Split(cfg, "---\n") {
		if i == 0 {
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &ctl), doc)
			continue
		}
		var meta metav1.TypeMeta
		require.NoError(t, yaml.Unmarshal([]byte(doc), &meta), doc)
		if meta.Kind == "Stage" {
			var st stagev1alpha1.Stage
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &st), doc)
			continue
		}
		var k kwokv1alpha1.KwokConfiguration
		require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &k), doc)
		kwoks = append(kwoks, k)
	}
	return ctl, kwoks
}

func TestZeroTuningKeepsKwokctlDefaults(t *testing.T) {
	cfg, err := kwokctlConfig(EmbeddedConfig{KubeVersion: "v1.37.2"}, t.TempDir())
	require.NoError(t, err)
	ctl, kwoks := parseKwokctlConfig(t, cfg)
	assert.Empty(t, kwoks, "no KwokConfiguration: kwokctl's own")
	assert.Empty(t, ctl.ComponentsPatches)
	// Exactly what the contract needs; every other option is absent, so
	// kwokctl defaults it.
	var raw struct {
		Options map[string]any `json:"options"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(cfg), &raw))
	assert.Equal(t, map[string]any{
		"runtime": "binary", "kubeVersion": "v1.37.2", "bindAddress": "127.0.0.1",
		"kubeAdmission": true, "kubeAuthorization": true,
	}, raw.Options)
}

func TestScaleTuningRendersKwokctlConfig(t *testing.T) {
	dir := t.TempDir()
	cfg, err := kwokctlConfig(EmbeddedConfig{KubeVersion: "v1.37.2", Tuning: ScaleTuning()}, dir)
	require.NoError(t, err)
	ctl, kwoks := parseKwokctlConfig(t, cfg)
	o := ctl.Options
	assert.Equal(t, true, *o.DisableQPSLimits)
	assert.Equal(t, 1.0, *o.HeartbeatFactor, "kwokctl would multiply our figures by 5")
	assert.EqualValues(t, 600, o.NodeLeaseDurationSeconds)
	assert.EqualValues(t, 600000, o.KubeControllerManagerNodeMonitorGracePeriodMilliseconds)
	assert.Equal(t, filepath.Join(dir, "gpupool-scheduler.yaml"), o.KubeSchedulerConfig, "inside the cluster directory, removed with it")

	b, err := os.ReadFile(o.KubeSchedulerConfig)
	require.NoError(t, err)
	var sched schedulerv1.KubeSchedulerConfiguration
	require.NoError(t, yaml.UnmarshalStrict(b, &sched), string(b))
	assert.Equal(t, "KubeSchedulerConfiguration", sched.Kind)
	assert.EqualValues(t, 5000, sched.ClientConnection.QPS)

	require.Len(t, ctl.ComponentsPatches, 2)
	cm, api := ctl.ComponentsPatches[0], ctl.ComponentsPatches[1]
	assert.Equal(t, "kube-controller-manager", cm.Name)
	assert.Equal(t, "*,-ttl", cm.ExtraArgs[0].Value)
	assert.Equal(t, "kube-apiserver", api.Name)
	assert.Equal(t, kwokv1alpha1.ExtraArgs{Key: "disable-admission-plugins", Value: "TaintNodesByCondition"}, api.ExtraArgs[0])
	assert.Equal(t, "GOGC", api.ExtraEnvs[0].Name)

	require.Len(t, kwoks, 1)
	assert.EqualValues(t, 16, kwoks[0].Options.NodeLeaseParallelism)
	assert.Nil(t, kwoks[0].Options.EnablePodsOnNodeSyncStreamWatch, "left to kwok's default")
}

func TestExtraConfigFollowsTheGeneratedDocuments(t *testing.T) {
	extra := "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata:\n  name: x\n"
	cfg, err := kwokctlConfig(EmbeddedConfig{KubeVersion: "v1.37.2", ExtraConfig: "---\n" + extra}, t.TempDir())
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(cfg, "---\n"+extra), cfg)
}

func TestProfilingOpensPprofBesideMetrics(t *testing.T) {
	tuning := ScaleTuning()
	tuning.Profiling = true
	allowed := map[string]bool{}
	for _, p := range tuning.componentPatches() {
		for _, a := range p.ExtraArgs {
			if a.Key == "authorization-always-allow-paths" && a.Value == "/debug/pprof/*" {
				allowed[p.Name] = true
			}
		}
	}
	assert.Equal(t, map[string]bool{"kube-scheduler": true, "kube-controller-manager": true}, allowed)
}
