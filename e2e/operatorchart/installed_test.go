// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package operatorchart

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/release/common"
	rspb "helm.sh/helm/v4/pkg/release/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// releaseSecret is a release as Helm stores it (stack-facts §6, "How Helm
// records a release").
func releaseSecret(t *testing.T, ns, name, chartName, version string, rev int, status common.Status, values map[string]any) *corev1.Secret {
	rel := rspb.Release{Name: name, Namespace: ns, Version: rev, Config: values,
		Info:  &rspb.Info{Status: status},
		Chart: &chart.Chart{Metadata: &chart.Metadata{Name: chartName, Version: version, AppVersion: version}}}
	b, err := json.Marshal(rel)
	require.NoError(t, err)
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, err = w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, rev), Namespace: ns,
			Labels: map[string]string{"owner": "helm", "name": name, "status": string(status), "version": fmt.Sprint(rev)}},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))},
	}
}

func TestFindInstalled(t *testing.T) {
	cs := fake.NewClientset(
		releaseSecret(t, "gpu-operator", "gpu-operator", "gpu-operator", "v25.3.3", 1, common.StatusSuperseded, nil),
		releaseSecret(t, "gpu-operator", "gpu-operator", "gpu-operator", "v25.10.0", 2, common.StatusDeployed, map[string]any{"mig": map[string]any{"strategy": "mixed"}}),
		releaseSecret(t, "monitoring", "prometheus", "kube-prometheus-stack", "70.0.0", 1, common.StatusDeployed, nil),
	)
	got, err := FindInstalled(context.Background(), cs)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, Installed{Release: "gpu-operator", Namespace: "gpu-operator", Revision: 2, Chart: "gpu-operator", ChartVersion: "v25.10.0", AppVersion: "v25.10.0",
		Values: map[string]any{"mig": map[string]any{"strategy": "mixed"}}}, got[0])

	none, err := FindInstalled(context.Background(), fake.NewClientset())
	require.NoError(t, err)
	assert.Empty(t, none)

	bad := releaseSecret(t, "x", "gpu-operator", "gpu-operator", "v1", 1, common.StatusDeployed, nil)
	bad.Data["release"] = []byte("not base64!")
	_, err = FindInstalled(context.Background(), fake.NewClientset(bad))
	assert.ErrorContains(t, err, "Helm release Secret x/sh.helm.release.v1.gpu-operator.v1: data.release is not base64")
}
