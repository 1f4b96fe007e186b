// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package helmchart renders an embedded Helm chart as `helm template`
// would, with the Helm SDK: the chart's files come unmodified from an
// upstream module (e2e/upstream), and what it renders is split into
// objects, by template. What a chart means (which values a team may give,
// which objects matter) is its caller's.
package helmchart

import (
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Chart is a loaded chart and the name messages give it ("the
// gpu-operator chart v25.3.4").
type Chart struct {
	*chart.Chart
	What string
}

// Manifest is one object the chart renders.
type Manifest struct {
	// Template is the chart's file it came from ("templates/clusterpolicy.yaml").
	Template string
	// Doc is its 1-based document in the template's output.
	Doc    int
	Object *unstructured.Unstructured
}

// Load reads a chart from its files (relative to the chart's root).
func Load(fsys fs.FS, what string) (*Chart, error) {
	var files []*archive.BufferedFile
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		files = append(files, &archive.BufferedFile{Name: p, Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the embedded %s: %w", what, err)
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("loading the embedded %s: %w", what, err)
	}
	return &Chart{Chart: ch, What: what}, nil
}

// Render renders the chart for a release of name into namespace with
// vals (merged over the chart's defaults, as helm does). kubeVersion is
// the cluster's ("v1.37.2"), as templates may ask. Only the chart's own
// templates' objects are returned (a dependency's are not), in template
// order; field prefixes errors about the values ("spec.gpuOperator").
func (c *Chart) Render(name, namespace, kubeVersion string, vals map[string]any, field string) ([]Manifest, error) {
	caps := common.DefaultCapabilities.Copy()
	kv, err := common.ParseKubeVersion(kubeVersion)
	if err != nil {
		return nil, fmt.Errorf("the cluster's Kubernetes version %q: %w", kubeVersion, err)
	}
	caps.KubeVersion = *kv
	// What helm template does with a chart's dependencies: their
	// conditions and import-values.
	if err := chartutil.ProcessDependencies(c.Chart, vals); err != nil {
		return nil, fmt.Errorf("the %s's dependencies: %w", c.What, err)
	}
	top, err := util.ToRenderValues(c.Chart, vals, common.ReleaseOptions{Name: name, Namespace: namespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return nil, fmt.Errorf("%s: the %s took the values but could not use them: %w", field, c.What, err)
	}
	out, err := engine.Render(c.Chart, top)
	if err != nil {
		return nil, fmt.Errorf("%s: the %s refused the values: %w", field, c.What, err)
	}
	own := c.Name() + "/templates/"
	var templates []string
	for t := range out {
		if strings.HasPrefix(t, own) && !strings.HasSuffix(t, "NOTES.txt") {
			templates = append(templates, t)
		}
	}
	sort.Strings(templates)
	var ms []Manifest
	for _, t := range templates {
		rel := strings.TrimPrefix(t, c.Name()+"/")
		docs, err := objects(out[t])
		if err != nil {
			return nil, fmt.Errorf("%s: the %s's %s rendered with the values is not YAML: %w", field, c.What, rel, err)
		}
		for i, u := range docs {
			ms = append(ms, Manifest{Template: rel, Doc: i + 1, Object: u})
		}
	}
	return ms, nil
}

// Unknown lists the keys of user that the chart's values do not have.
// Helm ignores such a value, so a typo would silently change nothing.
// A key under one that is free-form in the chart's values (an empty map,
// a list, a scalar) is not checked, nor a top-level key in free.
func (c *Chart) Unknown(user map[string]any, free map[string]bool) []error {
	var errs []error
	var walk func(path []string, defaults, given map[string]any)
	walk = func(path []string, defaults, given map[string]any) {
		for _, k := range slices.Sorted(maps.Keys(given)) {
			at := append(slices.Clone(path), k)
			if len(path) == 0 && free[k] {
				continue
			}
			def, ok := defaults[k]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: the %s has no such value (%s has: %s)", strings.Join(at, "."), c.What, orTop(path), strings.Join(slices.Sorted(maps.Keys(defaults)), ", ")))
				continue
			}
			dm, isMap := def.(map[string]any)
			gm, givenMap := given[k].(map[string]any)
			if isMap && len(dm) > 0 && givenMap {
				walk(at, dm, gm)
			}
		}
	}
	walk(nil, c.Values, user)
	return errs
}

func orTop(path []string) string {
	if len(path) == 0 {
		return "the top level"
	}
	return strings.Join(path, ".")
}

// objects splits a template's output into its objects (empty documents,
// as templates whose condition is false render, are skipped).
func objects(s string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split("\n"+s, "\n---") {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}
