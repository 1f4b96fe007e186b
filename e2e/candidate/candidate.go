// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package candidate loads and installs a candidate: a directory of
// Kubernetes manifests (a team's policies and GPU Operator configs) applied
// in file-name order, with an optional candidate.yaml describing it.
package candidate

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gpupool/gpupool/e2e/apis"
	"github.com/gpupool/gpupool/e2e/apis/v1alpha1"
	"github.com/gpupool/gpupool/e2e/input"
	"github.com/gpupool/gpupool/e2e/mergepatch"
	"github.com/gpupool/gpupool/e2e/operatorchart"
	"github.com/gpupool/gpupool/e2e/upstream"
	"github.com/gpupool/gpupool/e2e/versions"
	"github.com/gpupool/gpupool/fakegpu"
)

// MetaFile is the candidate's own description, not applied to the cluster.
const MetaFile = "candidate.yaml"

// The candidate.yaml format's types, by their names here (v1alpha1 holds
// them): Meta is candidate.yaml, kind Candidate.
type (
	Meta              = v1alpha1.Candidate
	MetaSpec          = v1alpha1.CandidateSpec
	GPUOperatorValues = v1alpha1.GPUOperatorValues
	ObjectRef         = v1alpha1.ObjectRef
	Patch             = v1alpha1.Patch
)

// matches reports whether r names u.
func matches(r ObjectRef, u *unstructured.Unstructured) bool {
	return u.GetKind() == r.Kind && u.GetName() == r.Name && (r.Namespace == "" || u.GetNamespace() == r.Namespace)
}

// Object is one manifest document with where it came from.
type Object struct {
	*unstructured.Unstructured
	File string // path relative to the candidate directory
	Doc  int    // 1-based document index in File
}

// Where names the object's source for error messages.
func (o Object) Where() string {
	return fmt.Sprintf("%s (document %d, %s %s)", o.File, o.Doc, o.GetKind(), qualifiedName(o.Unstructured))
}

func qualifiedName(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}

// Candidate is a loaded candidate directory.
type Candidate struct {
	Dir     string
	Name    string
	Meta    Meta
	Objects []Object
}

// FleetPath returns the fleet file candidate.yaml names, or "".
func (c *Candidate) FleetPath() string {
	if c.Meta.Spec.Fleet == "" {
		return ""
	}
	if filepath.IsAbs(c.Meta.Spec.Fleet) {
		return c.Meta.Spec.Fleet
	}
	return filepath.Join(c.Dir, c.Meta.Spec.Fleet)
}

// Unstructured returns the objects for consumers that need plain objects.
func (c *Candidate) Unstructured() []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(c.Objects))
	for i, o := range c.Objects {
		out[i] = o.Unstructured
	}
	return out
}

// Load reads every manifest in dir (*.yaml, *.yml, *.json, sorted by name)
// and validates what can be checked without a cluster. All errors are
// reported together, each naming its file and document.
func Load(dir string) (*Candidate, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("candidate: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("candidate %s: not a directory", dir)
	}
	return load(dir, map[string]bool{})
}

func load(dir string, visiting map[string]bool) (*Candidate, error) {
	// Resolve links so spec.base and spec.fleet are relative to the real
	// directory, as a reader of the files would expect.
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	abs, _ := filepath.Abs(dir)
	if visiting[abs] {
		return nil, fmt.Errorf("candidate %s: spec.base loops back to itself", dir)
	}
	visiting[abs] = true
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("candidate: %w", err)
	}
	c := &Candidate{Dir: dir, Name: filepath.Base(filepath.Clean(dir))}
	var files []string
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		files = append(files, e.Name())
	}
	sort.Strings(files)
	if len(files) > input.MaxDirFiles {
		return nil, fmt.Errorf("candidate %s: %d manifest files, at most %d", dir, len(files), input.MaxDirFiles)
	}

	var errs []error
	// candidate.yaml first: it says which files are Helm values, not
	// manifests.
	notManifests := map[string]bool{MetaFile: true}
	if slices.Contains(files, MetaFile) {
		data, err := input.ReadFile(filepath.Join(dir, MetaFile), input.MaxFileBytes)
		if err == nil {
			err = c.loadMeta(data)
		}
		if err != nil {
			return c, fmt.Errorf("candidate %s: %w", filepath.Join(dir, MetaFile), err)
		}
		if op := c.Meta.Spec.GPUOperator; op != nil {
			for _, f := range op.ValuesFiles {
				notManifests[filepath.Clean(f)] = true
			}
		}
	}
	seen := map[string]string{}
	for _, f := range files {
		if notManifests[f] {
			continue
		}
		data, err := input.ReadFile(filepath.Join(dir, f), input.MaxFileBytes)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		objs, err := decode(data)
		if err != nil {
			errs = append(errs, fmt.Errorf("candidate %s: %w", filepath.Join(dir, f), err))
			continue
		}
		for i, u := range objs {
			o := Object{Unstructured: u, File: f, Doc: i + 1}
			if err := validateObject(u); err != nil {
				errs = append(errs, fmt.Errorf("candidate %s, document %d: %w", filepath.Join(dir, f), i+1, err))
				continue
			}
			key := u.GetAPIVersion() + "/" + u.GetKind() + "/" + qualifiedName(u)
			if prev, dup := seen[key]; dup {
				errs = append(errs, fmt.Errorf("candidate %s: %s %s is defined twice (also in %s)", filepath.Join(dir, f), u.GetKind(), qualifiedName(u), prev))
				continue
			}
			seen[key] = o.Where()
			c.Objects = append(c.Objects, o)
		}
	}
	if len(errs) == 0 && c.Meta.Spec.GPUOperator != nil {
		errs = append(errs, c.renderGPUOperator(seen)...)
	}
	if len(errs) == 0 {
		if err := c.applyBase(visiting); err != nil {
			errs = append(errs, err)
		} else if c.Meta.Spec.GPUOperator != nil {
			c.ensureReleaseNamespace()
		}
	}
	if len(c.Objects) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("candidate %s: no manifests (*.yaml, *.yml, *.json) found", dir))
	}
	return c, errors.Join(errs...)
}

// loadMeta reads candidate.yaml, whose metadata.name defaults to the
// directory's name.
func (c *Candidate) loadMeta(data []byte) error {
	m, err := v1alpha1.DecodeCandidateIn(data, c.Name)
	if err != nil {
		return err
	}
	c.Meta, c.Name = *m, m.Metadata.Name
	return nil
}

// renderGPUOperator renders the GPU Operator chart from spec.gpuOperator
// and adds the objects the stack reads to the candidate's own, after its
// files: they replace a base's objects of the same identity, as a file
// would, and collide with the candidate's own files.
func (c *Candidate) renderGPUOperator(seen map[string]string) []error {
	meta := filepath.Join(c.Dir, MetaFile)
	op := c.Meta.Spec.GPUOperator
	if op.Version != "" && op.Version != upstream.GPUOperatorRelease {
		return []error{fmt.Errorf("candidate %s: spec.gpuOperator.version: %q: gpupool simulates the GPU Operator %s and renders its chart; another version's chart and operands would be simulated as %s, so it is refused (omit the version, or name %s)", meta, op.Version, upstream.GPUOperatorRelease, upstream.GPUOperatorRelease, upstream.GPUOperatorRelease)}
	}
	ns := op.ReleaseNamespace()
	rel, err := operatorchart.Render(operatorchart.Chart, ns, versions.Kube, operatorchart.Values{
		Files: op.ValuesFiles, Set: op.Set, Dir: c.Dir, Field: "spec.gpuOperator"})
	if err != nil {
		return []error{fmt.Errorf("candidate %s: %w", meta, err)}
	}
	var errs []error
	ms := rel.ForTheStack()
	if rc, err := operatorRuntimeClass(ms); err != nil {
		return []error{fmt.Errorf("candidate %s: spec.gpuOperator: %w", meta, err)}
	} else if rc != nil {
		// The Operator makes it from the ClusterPolicy, not Helm; a
		// candidate's own file of that name stands in for it.
		key := rc.GetAPIVersion() + "/" + rc.GetKind() + "/" + qualifiedName(rc)
		if _, own := seen[key]; !own {
			seen[key] = "the GPU Operator"
			c.Objects = append(c.Objects, Object{Unstructured: rc, File: helmSourcePrefix + operatorchart.Chart + " " + upstream.GPUOperatorRelease + ": the Operator, from the ClusterPolicy", Doc: 1})
		}
	}
	for _, m := range ms {
		o := Object{Unstructured: m.Object, File: HelmSource(m.Template), Doc: m.Doc}
		if err := validateObject(m.Object); err != nil {
			errs = append(errs, fmt.Errorf("candidate %s: spec.gpuOperator: the chart's %s rendered with these values: %w", meta, m.Template, err))
			continue
		}
		key := m.Object.GetAPIVersion() + "/" + m.Object.GetKind() + "/" + qualifiedName(m.Object)
		if prev, dup := seen[key]; dup {
			errs = append(errs, fmt.Errorf("candidate %s: spec.gpuOperator renders %s %s, which %s also defines: keep one", meta, m.Object.GetKind(), qualifiedName(m.Object), prev))
			continue
		}
		seen[key] = o.Where()
		c.Objects = append(c.Objects, o)
	}
	return errs
}

// operatorRuntimeClass is the RuntimeClass the Operator makes for the
// rendered ClusterPolicy (stack-facts §6), or nil without one.
func operatorRuntimeClass(ms []operatorchart.Manifest) (*unstructured.Unstructured, error) {
	for _, m := range ms {
		if m.Object.GetKind() != "ClusterPolicy" {
			continue
		}
		data, err := m.Object.MarshalJSON()
		if err != nil {
			return nil, err
		}
		cp, err := fakegpu.ParseClusterPolicy(data)
		if err != nil {
			return nil, fmt.Errorf("the chart's %s: %w", m.Template, err)
		}
		name, handler := cp.OperatorRuntimeClass()
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
			"metadata": map[string]any{"name": name}, "handler": handler,
		}}, nil
	}
	return nil, nil
}

// ensureReleaseNamespace adds the release's namespace where no object of
// the candidate (or its base) makes it, as `helm install
// --create-namespace` does in the GPU Operator's install guide.
func (c *Candidate) ensureReleaseNamespace() {
	ns := c.Meta.Spec.GPUOperator.ReleaseNamespace()
	for _, o := range c.Objects {
		if o.GetKind() == "Namespace" && o.GetName() == ns {
			return
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	c.Objects = append([]Object{{Unstructured: u, File: helmSourcePrefix + "--create-namespace", Doc: 1}}, c.Objects...)
}

// helmSourcePrefix starts the File of an object the chart rendered.
const helmSourcePrefix = "helm template "

// HelmSource is the File of an object the GPU Operator chart rendered.
func HelmSource(template string) string {
	return helmSourcePrefix + operatorchart.Chart + " " + upstream.GPUOperatorRelease + ": " + template
}

// decode splits a multi-document YAML (or JSON) file into objects,
// skipping empty documents.
func decode(data []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		var m map[string]any
		if err := r.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("document %d: malformed YAML: %w", doc, err)
		}
		if len(m) == 0 {
			doc--
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

func validateObject(u *unstructured.Unstructured) error {
	var missing []string
	if u.GetAPIVersion() == "" {
		missing = append(missing, "apiVersion")
	}
	if u.GetKind() == "" {
		missing = append(missing, "kind")
	}
	if u.GetName() == "" && u.GetGenerateName() == "" {
		missing = append(missing, "metadata.name")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: required", strings.Join(missing, ", "))
	}
	if strings.HasSuffix(u.GetKind(), "List") {
		return fmt.Errorf("kind %s: lists are not supported; write one document per object", u.GetKind())
	}
	if u.GroupVersionKind().Group == apis.Group {
		// No cluster serves gpupool's own kinds: applied, it would wait
		// for an API that never comes.
		return fmt.Errorf("kind %s: a gpupool file, not a manifest for the cluster: name a Fleet in %s's spec.fleet, from outside the candidate directory", u.GetKind(), MetaFile)
	}
	return nil
}

// applyBase puts the base candidate's objects first, drops omitted ones,
// lets this candidate's own objects replace base objects with the same
// identity, and applies the patches.
func (c *Candidate) applyBase(visiting map[string]bool) error {
	spec := c.Meta.Spec
	meta := filepath.Join(c.Dir, MetaFile)
	if spec.Base == "" {
		return c.applyPatches(meta)
	}
	baseDir := spec.Base
	if !filepath.IsAbs(baseDir) {
		baseDir = filepath.Join(c.Dir, baseDir)
	}
	base, err := load(baseDir, visiting)
	if err != nil {
		return fmt.Errorf("candidate %s: spec.base: %w", meta, err)
	}
	if spec.Fleet == "" {
		if base.FleetPath() != "" {
			c.Meta.Spec.Fleet, _ = filepath.Abs(base.FleetPath())
		}
		c.Meta.Spec.FleetPatches = append(append([]v1alpha1.PoolPatch(nil), base.Meta.Spec.FleetPatches...), spec.FleetPatches...)
	}
	c.Meta.Spec.Autoscaler = mergeAutoscaler(base.Meta.Spec.Autoscaler, spec.Autoscaler)
	var merged []Object
	for _, o := range base.Objects {
		if !strings.HasPrefix(o.File, helmSourcePrefix) {
			o.File = filepath.Join(spec.Base, o.File)
		}
		merged = append(merged, o)
	}
	for i, ref := range spec.Omit {
		kept := merged[:0]
		found := false
		for _, o := range merged {
			if matches(ref, o.Unstructured) {
				found = true
				continue
			}
			kept = append(kept, o)
		}
		if !found {
			return fmt.Errorf("candidate %s: spec.omit[%d]: the base has no %s", meta, i, ref)
		}
		merged = kept
	}
	for _, own := range c.Objects {
		replaced := false
		for i, o := range merged {
			if identity(o.Unstructured) == identity(own.Unstructured) {
				merged[i], replaced = own, true
			}
		}
		if !replaced {
			merged = append(merged, own)
		}
	}
	c.Objects = merged
	return c.applyPatches(meta)
}

// mergeAutoscaler is the base's autoscaler settings with own's over them,
// gate by gate: a broken candidate turns one gate off and keeps the rest.
func mergeAutoscaler(base, own *v1alpha1.AutoscalerSettings) *v1alpha1.AutoscalerSettings {
	if base == nil || own == nil {
		return cmp.Or(own, base)
	}
	out := &v1alpha1.AutoscalerSettings{FeatureGates: maps.Clone(base.FeatureGates)}
	if out.FeatureGates == nil {
		out.FeatureGates = map[string]bool{}
	}
	maps.Copy(out.FeatureGates, own.FeatureGates)
	return out
}

func (c *Candidate) applyPatches(meta string) error {
	for i, p := range c.Meta.Spec.Patches {
		found := false
		for _, o := range c.Objects {
			if matches(p.Target, o.Unstructured) {
				o.Object = mergepatch.Apply(o.Object, p.Patch).(map[string]any)
				found = true
			}
		}
		if !found {
			return fmt.Errorf("candidate %s: spec.patches[%d].target: no %s in the candidate", meta, i, p.Target)
		}
	}
	return nil
}

func identity(u *unstructured.Unstructured) string {
	return u.GroupVersionKind().GroupKind().String() + "/" + qualifiedName(u)
}

// Fingerprint identifies what the candidate installs: sha256 over its
// objects as they are applied (base, omissions and patches resolved), in
// order. Where the files live does not change it; any field does.
func (c *Candidate) Fingerprint() string {
	h := sha256.New()
	for _, o := range c.Objects {
		b, _ := json.Marshal(o.Object) // map keys sorted: canonical
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	if a := c.Meta.Spec.Autoscaler; a != nil && len(a.FeatureGates) > 0 {
		// How the autoscaler runs changes what the objects do. Written
		// only when set, so a candidate without it keeps its fingerprint.
		b, _ := json.Marshal(a)
		h.Write([]byte("autoscaler "))
		h.Write(b)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// WriteApplied writes the objects the candidate installs, as applied (base,
// omissions and patches resolved), one YAML file each in order, and a
// FINGERPRINT file: what a reviewer of a certification reads.
func (c *Candidate) WriteApplied(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Numbered as wide as the count needs, so the files sort (and load
	// back) in the order they apply.
	width := max(2, len(strconv.Itoa(len(c.Objects))))
	for i, o := range c.Objects {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return fmt.Errorf("%s: %w", o.Where(), err)
		}
		name := fmt.Sprintf("%0*d-%s-%s.yaml", width, i+1, strings.ToLower(o.GetKind()), o.GetName())
		head := fmt.Sprintf("# from %s\n", o.Where())
		if err := os.WriteFile(filepath.Join(dir, name), append([]byte(head), b...), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "FINGERPRINT"), []byte(c.Fingerprint()+"\n"), 0o644)
}

// WriteLoaded writes the candidate as loaded into dir, as a candidate
// directory of its own: the objects as WriteApplied writes them and a
// candidate.yaml with its name, description and breaks, nothing left to
// resolve (no base, omissions or patches; fleet patches are the fleet's
// now). Load(dir) gives the same objects, and the same Fingerprint.
func (c *Candidate) WriteLoaded(dir string) error {
	if err := c.WriteApplied(dir); err != nil {
		return err
	}
	m := c.Meta
	if m.APIVersion == "" {
		m.APIVersion, m.Kind = apis.APIVersion, apis.KindCandidate
	}
	m.Metadata.Name = c.Name
	m.Spec.Fleet, m.Spec.Base, m.Spec.Omit, m.Spec.Patches, m.Spec.FleetPatches = "", "", nil, nil, nil
	// Rendered already: its objects are among those written.
	m.Spec.GPUOperator = nil
	b, err := yaml.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, MetaFile), b, 0o644)
}
