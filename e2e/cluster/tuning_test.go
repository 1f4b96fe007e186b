package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestZeroTuningKeepsKwokctlDefaults(t *testing.T) {
	opts, top, docs, err := Tuning{}.render(t.TempDir())
	require.NoError(t, err)
	assert.Empty(t, opts)
	assert.Empty(t, top)
	assert.Empty(t, docs)
}

func TestScaleTuningRendersKwokctlConfig(t *testing.T) {
	dir := t.TempDir()
	opts, top, docs, err := ScaleTuning().render(dir)
	require.NoError(t, err)
	cfg := "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\noptions:\n  runtime: binary\n" + opts + top
	var parsed struct {
		APIVersion        string         `json:"apiVersion"`
		Kind              string         `json:"kind"`
		Options           map[string]any `json:"options"`
		ComponentsPatches []struct {
			Name      string              `json:"name"`
			ExtraArgs []map[string]string `json:"extraArgs"`
			ExtraEnvs []map[string]string `json:"extraEnvs"`
		} `json:"componentsPatches"`
	}
	require.NoError(t, yaml.UnmarshalStrict([]byte(cfg), &parsed), cfg)
	o := parsed.Options
	assert.Equal(t, true, o["disableQPSLimits"])
	assert.EqualValues(t, 1, o["heartbeatFactor"], "kwokctl would multiply our figures by 5")
	assert.EqualValues(t, 600, o["nodeLeaseDurationSeconds"])
	assert.EqualValues(t, 600000, o["kubeControllerManagerNodeMonitorGracePeriodMilliseconds"])
	sched := o["kubeSchedulerConfig"].(string)
	assert.Equal(t, filepath.Join(dir, "gpupool-scheduler.yaml"), sched, "inside the cluster directory, removed with it")
	b, err := os.ReadFile(sched)
	require.NoError(t, err)
	assert.Contains(t, string(b), "qps: 5000")

	require.Len(t, parsed.ComponentsPatches, 2)
	assert.Equal(t, "kube-controller-manager", parsed.ComponentsPatches[0].Name)
	assert.Equal(t, "*,-ttl", parsed.ComponentsPatches[0].ExtraArgs[0]["value"])
	assert.Equal(t, "kube-apiserver", parsed.ComponentsPatches[1].Name)
	assert.Equal(t, map[string]string{"key": "disable-admission-plugins", "value": "TaintNodesByCondition"}, parsed.ComponentsPatches[1].ExtraArgs[0])
	assert.Equal(t, "GOGC", parsed.ComponentsPatches[1].ExtraEnvs[0]["name"])

	require.Len(t, docs, 1)
	assert.True(t, strings.Contains(docs[0], "kind: KwokConfiguration") && strings.Contains(docs[0], "nodeLeaseParallelism: 16"))
}

func TestProfilingOpensPprofBesideMetrics(t *testing.T) {
	tuning := ScaleTuning()
	tuning.Profiling = true
	_, top, _, err := tuning.render(t.TempDir())
	require.NoError(t, err)
	var parsed struct {
		ComponentsPatches []struct {
			Name      string              `json:"name"`
			ExtraArgs []map[string]string `json:"extraArgs"`
		} `json:"componentsPatches"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(top), &parsed), top)
	allowed := map[string]bool{}
	for _, p := range parsed.ComponentsPatches {
		for _, a := range p.ExtraArgs {
			if a["key"] == "authorization-always-allow-paths" && a["value"] == "/debug/pprof/*" {
				allowed[p.Name] = true
			}
		}
	}
	assert.Equal(t, map[string]bool{"kube-scheduler": true, "kube-controller-manager": true}, allowed)
}
