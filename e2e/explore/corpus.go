// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package explore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// CorpusCase is a counterexample kept as a fixed case: it runs first,
// every time, before anything is drawn.
type CorpusCase struct {
	File  string
	Shape Shape
}

// LoadCorpus reads the cases of one rule: every YAML file under
// dir/<check id>/, each a reproduction as Counterexample.Write writes it.
// The shape is its last document (a Pod, Deployment, Job or
// StatefulSet); the documents before it (namespace, service account,
// neighbours) are what the reproduction needs, which a suite provides
// itself. A missing directory is an empty corpus.
func LoadCorpus(dir, check string) ([]CorpusCase, error) {
	files, err := filepath.Glob(filepath.Join(dir, check, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []CorpusCase
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		docs, err := splitYAML(data)
		if err != nil || len(docs) == 0 {
			return nil, fmt.Errorf("%s: no YAML documents (%v)", f, err)
		}
		s, err := shapeOf(docs[len(docs)-1])
		if err != nil {
			return nil, fmt.Errorf("%s (document %d): %w", f, len(docs), err)
		}
		// A fresh name per run and per rule: the case must not collide
		// with a pod left from a reproduction, nor with another rule's
		// case, which runs beside it in the same namespace.
		name := fmt.Sprintf("corpus-%s-%d", strings.TrimPrefix(check, "explore."), i+1)
		s.Pod.Name = name
		if s.Pod.Labels == nil {
			s.Pod.Labels = map[string]string{}
		}
		s.Pod.Labels[LabelShape] = name
		s.Pod.Labels[LabelRule] = strings.TrimPrefix(check, "explore.")
		s.Choices = []string{"regression corpus " + filepath.Base(f)}
		out = append(out, CorpusCase{File: f, Shape: s})
	}
	return out, nil
}

func splitYAML(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		d, err := r.Read()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return docs, err
		}
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
}

func shapeOf(doc []byte) (Shape, error) {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return Shape{}, err
	}
	// A workload's updates (made to the pod its controller creates) ride
	// on the workload itself.
	fromTemplate := func(om metav1.ObjectMeta, t corev1.PodTemplateSpec, via string) (Shape, error) {
		us, err := takeUpdates(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: om.Annotations}})
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: om.Name, Namespace: om.Namespace, Labels: t.Labels}, Spec: t.Spec}
		return Shape{Via: via, Pod: p, Updates: us}, err
	}
	switch meta.Kind {
	case "Pod":
		var p corev1.Pod
		if err := yaml.UnmarshalStrict(doc, &p); err != nil {
			return Shape{}, err
		}
		us, err := takeUpdates(&p)
		if err != nil {
			return Shape{}, err
		}
		return Shape{Via: ViaPod, Pod: &p, Updates: us}, nil
	case "Deployment":
		var d appsv1.Deployment
		if err := yaml.UnmarshalStrict(doc, &d); err != nil {
			return Shape{}, err
		}
		return fromTemplate(d.ObjectMeta, d.Spec.Template, ViaDeployment)
	case "StatefulSet":
		var d appsv1.StatefulSet
		if err := yaml.UnmarshalStrict(doc, &d); err != nil {
			return Shape{}, err
		}
		return fromTemplate(d.ObjectMeta, d.Spec.Template, ViaStatefulSet)
	case "Job":
		var j batchv1.Job
		if err := yaml.UnmarshalStrict(doc, &j); err != nil {
			return Shape{}, err
		}
		return fromTemplate(j.ObjectMeta, j.Spec.Template, ViaJob)
	}
	return Shape{}, fmt.Errorf("kind %q: the last document must be a Pod, Deployment, Job or StatefulSet", meta.Kind)
}
