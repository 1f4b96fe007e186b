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
	"cmp"
	"errors"
	"fmt"
	"path/filepath"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/strvals"

	"github.com/gpupool/gpupool/e2e/helmchart"
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
type Manifest = helmchart.Manifest

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
	ms, err := ch.Render(name, namespace, kubeVersion, vals, v.Field)
	if err != nil {
		return nil, err
	}
	return &Release{Name: name, Namespace: namespace, Version: upstream.GPUOperatorRelease, Manifests: ms}, nil
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

func load() (*helmchart.Chart, error) {
	fsys, err := upstream.GPUOperatorChart()
	if err != nil {
		return nil, err
	}
	return helmchart.Load(fsys, Chart+" chart "+upstream.GPUOperatorRelease)
}

// merge reads the values files and --set expressions, as helm's -f and
// --set do, and refuses any key the chart does not have.
func (v Values) merge(ch *helmchart.Chart) (map[string]any, error) {
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

// unknown lists the keys of user that the chart's values do not have;
// global and a dependency's values are free-form.
func unknown(ch *helmchart.Chart, user map[string]any) []error {
	free := map[string]bool{"global": true}
	for _, d := range ch.Metadata.Dependencies {
		free[cmp.Or(d.Alias, d.Name)] = true
	}
	return ch.Unknown(user, free)
}
