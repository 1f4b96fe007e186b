// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaler

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gpupool/gpupool/fakegpu"
)

//go:embed nodes-born-without-gpus.yaml
var bornWithoutGPUs []byte

// BornWithoutGPUsFile names the policy in messages.
const BornWithoutGPUsFile = "e2e/autoscaler/nodes-born-without-gpus.yaml"

// BornWithoutGPUs is the admission policy, and its binding, that has the
// cloud's nodes born without nvidia.com resources, as a real machine's
// kubelet registers before its device plugin does (autoscaler-facts §4.4).
func BornWithoutGPUs() ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(bornWithoutGPUs), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", BornWithoutGPUsFile, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out, nil
}

// BornProbe is a node as Karpenter's KWOK provider creates one for a GPU
// pod: its NodePool label, and an nvidia.com resource in its status. A
// dry-run create of it shows whether the policy is live.
func BornProbe() *corev1.Node {
	gpu := corev1.ResourceName(fakegpu.LabelPrefix + "gpu")
	one := resource.MustParse("1")
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "gpupool-born-without-gpus-probe", Labels: map[string]string{LabelNodePool: "gpupool-probe"}},
		Status:     corev1.NodeStatus{Capacity: corev1.ResourceList{gpu: one}, Allocatable: corev1.ResourceList{gpu: one}},
	}
}

// BornWithGPUs names the nvidia.com resources a created node still
// carries ("" when none).
func BornWithGPUs(n *corev1.Node) string {
	var out []string
	for _, l := range []corev1.ResourceList{n.Status.Capacity, n.Status.Allocatable} {
		for name := range l {
			if strings.HasPrefix(string(name), fakegpu.LabelPrefix) {
				out = append(out, string(name))
			}
		}
	}
	return strings.Join(out, ", ")
}
