// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package incluster holds the objects gpupool runs inside a cluster with
// real nodes (the kind path, and simulated pools joined to a cluster
// gpupool did not make): the kwok controller, the fakegpu controller and
// the fake device and DRA plugins, as YAML templates embedded in the binary, as kwok
// keeps its in-cluster objects.
package incluster

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

//go:embed objects/*.yaml
var objects embed.FS

// The templates, one per component.
const (
	KwokController    = "kwok-controller.yaml"
	FakeGPUController = "fakegpu-controller.yaml"
	FakeDevicePlugin  = "fake-device-plugin.yaml"
	FakeDRAPlugin     = "fake-dra-plugin.yaml"
)

// Params fill in a template; each template uses the fields it needs.
type Params struct {
	Name, Namespace, Image string
	// Guest: the cluster is not gpupool's (simulated pools joined to it):
	// the component tolerates only the control plane's NoSchedule taint
	// instead of every taint.
	Guest bool
	// PullPolicy of the image: Never (the default) for an image loaded
	// into the nodes, as kind's are; IfNotPresent for one the cluster pulls.
	PullPolicy string
	// RealNodes are the nodes with a real kubelet, where the component runs
	// (the plugins need them; the fakegpu controller without them
	// runs on any node but a KWOK one).
	RealNodes []string
	// OperatorNamespace holds the GPU Operator's ConfigMaps.
	OperatorNamespace string
	// NodeSelector: the nodes the fakegpu controller simulates the stack for.
	NodeSelector string
	// DefaultMIGConfig is the GPU Operator's default mig-parted ConfigMap.
	DefaultMIGConfig string
	// DeployLabel and DeployOff keep the device plugin off nodes the
	// operator turned it off on.
	DeployLabel string
	DeployOff   []string
	// Config is the kwok controller's configuration (KwokConfiguration and
	// Stages).
	Config string
}

var funcs = template.FuncMap{
	"indent": func(n int, s string) string {
		pad := strings.Repeat(" ", n)
		return pad + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pad)
	},
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
}

// Render fills in the named template and decodes its objects, in order.
func Render(name string, p Params) ([]runtime.Object, error) {
	if p.Name == "" || p.Namespace == "" || p.Image == "" || len(p.RealNodes) == 0 && (name == FakeDevicePlugin || name == FakeDRAPlugin) {
		return nil, fmt.Errorf("%s: name, namespace, image and (for the plugins) the real nodes are required", name)
	}
	if p.PullPolicy == "" {
		p.PullPolicy = "Never"
	}
	t, err := template.New(name).Funcs(funcs).Option("missingkey=error").ParseFS(objects, "objects/"+name)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, p); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(&buf))
	var out []runtime.Object
	for i := 1; ; i++ {
		doc, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s (document %d): %w", name, i, err)
		}
		if onlyComments(doc) {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s (document %d): %w", name, i, err)
		}
		out = append(out, obj)
	}
}

func onlyComments(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") && l != "---" {
			return false
		}
	}
	return true
}
