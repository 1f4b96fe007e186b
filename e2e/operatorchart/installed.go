// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package operatorchart

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	rspb "helm.sh/helm/v4/pkg/release/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Installed is a deployed Helm release of the GPU Operator's chart, as a
// cluster records it.
type Installed struct {
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	Revision  int    `json:"revision"`
	// Chart and ChartVersion are the chart's name and version, AppVersion
	// its appVersion, as the release recorded them.
	Chart        string `json:"chart"`
	ChartVersion string `json:"chartVersion"`
	AppVersion   string `json:"appVersion,omitempty"`
	// Values are the values the release was installed with (what `helm
	// get values` prints), not the chart's defaults.
	Values map[string]any `json:"values,omitempty"`
}

// maxReleaseBytes bounds one decompressed release record: a chart's
// files, its values and its rendered manifest, a few MB at most.
const maxReleaseBytes = 64 << 20

// FindInstalled returns the deployed releases of the gpu-operator chart
// in the cluster, the newest revision of each, from the Secrets Helm
// keeps them in (stack-facts §6, "How Helm records a release").
func FindInstalled(ctx context.Context, cs kubernetes.Interface) ([]Installed, error) {
	list, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,status=deployed"})
	if err != nil {
		return nil, fmt.Errorf("reading Helm's release Secrets: %w", err)
	}
	newest := map[string]Installed{}
	for _, s := range list.Items {
		if s.Type != "helm.sh/release.v1" {
			continue
		}
		rel, err := decodeRelease(s.Data["release"])
		if err != nil {
			return nil, fmt.Errorf("Helm release Secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		if rel.Chart == nil || rel.Chart.Metadata == nil || rel.Chart.Metadata.Name != Chart {
			continue
		}
		key := rel.Namespace + "/" + rel.Name
		if have, ok := newest[key]; ok && have.Revision >= rel.Version {
			continue
		}
		newest[key] = Installed{Release: rel.Name, Namespace: rel.Namespace, Revision: rel.Version,
			Chart: rel.Chart.Metadata.Name, ChartVersion: rel.Chart.Metadata.Version, AppVersion: rel.Chart.Metadata.AppVersion, Values: rel.Config}
	}
	out := make([]Installed, 0, len(newest))
	for _, in := range newest {
		out = append(out, in)
	}
	slices.SortFunc(out, func(a, b Installed) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Release, b.Release))
	})
	return out, nil
}

// decodeRelease reads a release record: base64 of the gzipped JSON of
// the release (older Helm wrote it uncompressed).
func decodeRelease(data []byte) (*rspb.Release, error) {
	b, err := base64.StdEncoding.DecodeString(string(data))
	if err != nil {
		return nil, fmt.Errorf("data.release is not base64: %w", err)
	}
	if bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		if b, err = io.ReadAll(io.LimitReader(zr, maxReleaseBytes+1)); err != nil {
			return nil, err
		}
		if len(b) > maxReleaseBytes {
			return nil, fmt.Errorf("data.release holds more than %d MiB", maxReleaseBytes>>20)
		}
	}
	var rel rspb.Release
	if err := json.Unmarshal(b, &rel); err != nil {
		return nil, fmt.Errorf("data.release is not a Helm release: %w", err)
	}
	return &rel, nil
}
