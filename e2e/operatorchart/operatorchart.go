// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package operatorchart renders the GPU Operator's Helm chart from a
// team's values, as `helm template` would: the chart is the pinned
// module's, embedded unmodified (e2e/upstream), and the Helm SDK renders
// it. What a GPU Operator install puts in the cluster for its operands to
// read (the ClusterPolicy, the device-plugin and MIG ConfigMaps) is what
// a candidate installs in place of hand-written objects.
//
// Helm ignores a value the chart does not have; a typo in a --set then
// changes nothing, silently. Values here must name a value the chart's
// values.yaml has, unless they sit under one that is free-form there (an
// empty map, a list, a subchart's values).
package operatorchart

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
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
	"helm.sh/helm/v4/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gpupool/gpupool/e2e/input"
	"github.com/gpupool/gpupool/e2e/upstream"
)

// Chart names the chart as a release is installed from it.
const Chart = "gpu-operator"

// Values are a release's values as a team gives them to helm: values
// files (-f), then --set expressions, later ones winning.
type Values struct {
	// Files are read in order; relative paths are relative to Dir.
	Files []string
	// Set are --set expressions ("mig.strategy=mixed").
	Set []string
	// Dir resolves Files, and where names them in errors.
	Dir string
	// Field names Files and Set in errors ("spec.gpuOperator").
	Field string
}

// Release is a rendered release.
type Release struct {
	Name, Namespace string
	// Version is upstream.GPUOperatorRelease.
	Version string
	// Manifests are the chart's own templates' objects (its dependencies'
	// are left out: gpupool runs none of them), by template, in order.
	Manifests []Manifest
}

// Manifest is one object the chart renders.
type Manifest struct {
	// Template is the chart's file it came from ("templates/clusterpolicy.yaml").
	Template string
	// Doc is its 1-based document in the template's output.
	Doc    int
	Object *unstructured.Unstructured
}

// Render renders the chart for a release of name into namespace with the
// values. kubeVersion is the cluster's ("v1.37.2"), as the chart's
// templates may ask. Every error names the file or --set and the key.
func Render(name, namespace, kubeVersion string, v Values) (*Release, error) {
	ch, err := load()
	if err != nil {
		return nil, err
	}
	vals, err := v.merge(ch)
	if err != nil {
		return nil, err
	}
	caps := common.DefaultCapabilities.Copy()
	kv, err := common.ParseKubeVersion(kubeVersion)
	if err != nil {
		return nil, fmt.Errorf("the cluster's Kubernetes version %q: %w", kubeVersion, err)
	}
	caps.KubeVersion = *kv
	// What helm template does with a chart's dependencies: their
	// conditions (nfd.enabled) and import-values.
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		return nil, fmt.Errorf("the %s chart %s's dependencies: %w", Chart, upstream.GPUOperatorRelease, err)
	}
	top, err := util.ToRenderValues(ch, vals, common.ReleaseOptions{Name: name, Namespace: namespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return nil, fmt.Errorf("%s: the %s chart %s took the values but could not use them: %w", v.Field, Chart, upstream.GPUOperatorRelease, err)
	}
	out, err := engine.Render(ch, top)
	if err != nil {
		return nil, fmt.Errorf("%s: the %s chart %s refused the values: %w", v.Field, Chart, upstream.GPUOperatorRelease, err)
	}
	rel := &Release{Name: name, Namespace: namespace, Version: upstream.GPUOperatorRelease}
	own := ch.Name() + "/templates/"
	var templates []string
	for t := range out {
		if strings.HasPrefix(t, own) && !strings.HasSuffix(t, "NOTES.txt") {
			templates = append(templates, t)
		}
	}
	sort.Strings(templates)
	for _, t := range templates {
		docs, err := objects(out[t])
		if err != nil {
			return nil, fmt.Errorf("%s: the %s chart's %s rendered with the values is not YAML: %w", v.Field, Chart, strings.TrimPrefix(t, ch.Name()+"/"), err)
		}
		for i, u := range docs {
			rel.Manifests = append(rel.Manifests, Manifest{Template: strings.TrimPrefix(t, ch.Name()+"/"), Doc: i + 1, Object: u})
		}
	}
	return rel, nil
}

// ForTheStack are the objects of the release the GPU Operator's operands
// read, which the simulated stack reads in their place: the ClusterPolicy
// and the ConfigMaps (device-plugin configs, MIG configs). The operator's
// Deployment, its RBAC and the CRD upgrade hooks run nothing here.
func (r *Release) ForTheStack() []Manifest {
	var out []Manifest
	for _, m := range r.Manifests {
		switch m.Object.GetKind() {
		case "ClusterPolicy", "ConfigMap":
			out = append(out, m)
		}
	}
	return out
}

func load() (*chart.Chart, error) {
	fsys, err := upstream.GPUOperatorChart()
	if err != nil {
		return nil, err
	}
	var files []*archive.BufferedFile
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
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
		return nil, fmt.Errorf("the embedded %s chart: %w", Chart, err)
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("loading the embedded %s chart: %w", Chart, err)
	}
	return ch, nil
}

// merge reads the values files and --set expressions, as helm's -f and
// --set do, and refuses any key the chart does not have.
func (v Values) merge(ch *chart.Chart) (map[string]any, error) {
	var errs []error
	vals := map[string]any{}
	for i, f := range v.Files {
		where := fmt.Sprintf("%s.valuesFiles[%d] (%s)", v.Field, i, f)
		p := f
		if !filepath.IsAbs(p) {
			p = filepath.Join(v.Dir, p)
		}
		data, err := input.ReadFile(p, input.MaxFileBytes)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		fv, err := loader.LoadValues(bytes.NewReader(data))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		for _, e := range unknown(ch, fv) {
			errs = append(errs, fmt.Errorf("%s: %w", where, e))
		}
		vals = loader.MergeMaps(vals, fv)
	}
	for i, s := range v.Set {
		where := fmt.Sprintf("%s.set[%d] (%q)", v.Field, i, s)
		one := map[string]any{}
		if err := strvals.ParseInto(s, one); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		for _, e := range unknown(ch, one) {
			errs = append(errs, fmt.Errorf("%s: %w", where, e))
		}
		if err := strvals.ParseInto(s, vals); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
	}
	return vals, errors.Join(errs...)
}

// unknown lists the keys of user that the chart's values do not have.
func unknown(ch *chart.Chart, user map[string]any) []error {
	free := map[string]bool{"global": true}
	for _, d := range ch.Metadata.Dependencies {
		free[cmpOr(d.Alias, d.Name)] = true
	}
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
				errs = append(errs, fmt.Errorf("%s: the %s chart %s has no such value (%s has: %s)", strings.Join(at, "."), Chart, upstream.GPUOperatorRelease, orTop(path), strings.Join(slices.Sorted(maps.Keys(defaults)), ", ")))
				continue
			}
			dm, isMap := def.(map[string]any)
			gm, givenMap := given[k].(map[string]any)
			if isMap && len(dm) > 0 && givenMap {
				walk(at, dm, gm)
			}
		}
	}
	walk(nil, ch.Values, user)
	return errs
}

func orTop(path []string) string {
	if len(path) == 0 {
		return "the top level"
	}
	return strings.Join(path, ".")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
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
