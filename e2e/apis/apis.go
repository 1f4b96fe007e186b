// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package apis is what every document a user hands gpupool shares (a
// Fleet, a Candidate's candidate.yaml, a Workload): the group and version
// gpupool.dev/v1alpha1, Kubernetes' TypeMeta and ObjectMeta, and one
// strict decoding. Unknown and duplicate fields are errors, a file holds
// one document, and a document of another kind is said to be one rather
// than reported as a list of unknown fields. Each kind's own fields,
// defaults and validation are in the version package, v1alpha1; fleet,
// candidate and scale use them.
package apis

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const (
	Group      = "gpupool.dev"
	Version    = "v1alpha1"
	APIVersion = Group + "/" + Version
)

// The kinds of document gpupool reads.
const (
	KindFleet     = "Fleet"
	KindCandidate = "Candidate"
	KindWorkload  = "Workload"
)

// Decode reads the one document in data, of kind, into out, strictly.
func Decode(data []byte, kind string, out any) error {
	if n := len(Documents(data)); n > 1 {
		return fmt.Errorf("want one %s document, found %d", kind, n)
	}
	err := strictly(data, out)
	if err == nil {
		return nil
	}
	// A Candidate handed as a fleet fails on its unknown fields; its kind
	// says more.
	var tm metav1.TypeMeta
	if yaml.Unmarshal(data, &tm) == nil && tm.Kind != "" && tm.Kind != kind {
		return fmt.Errorf("kind: want %s, got %q (a %s document where a %s was expected)", kind, tm.Kind, tm.Kind, kind)
	}
	return fmt.Errorf("malformed %s: %w", strings.ToLower(kind), err)
}

// strictly decodes as the apiserver's strict field validation does
// (sigs.k8s.io/json): an unknown field is named by its path
// ("spec.pool"), not its last key; a key given twice is refused by the
// YAML step.
func strictly(data []byte, out any) error {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, out)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// CheckMeta lists what is wrong with a document's TypeMeta and ObjectMeta,
// each error naming its field. A document is a file, not a cluster
// object: of its metadata only the name, labels and annotations mean
// anything, and the name is required.
func CheckMeta(tm metav1.TypeMeta, om metav1.ObjectMeta, kind string) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if tm.APIVersion != APIVersion {
		add("apiVersion: want %s, got %q", APIVersion, tm.APIVersion)
	}
	if tm.Kind != kind {
		add("kind: want %s, got %q", kind, tm.Kind)
	}
	if om.Name == "" {
		add("metadata.name: required")
	}
	for _, f := range []struct {
		field string
		set   bool
	}{
		{"namespace", om.Namespace != ""}, {"generateName", om.GenerateName != ""}, {"uid", om.UID != ""},
		{"resourceVersion", om.ResourceVersion != ""}, {"generation", om.Generation != 0},
		{"creationTimestamp", !om.CreationTimestamp.IsZero()}, {"deletionTimestamp", om.DeletionTimestamp != nil},
		{"ownerReferences", len(om.OwnerReferences) > 0}, {"finalizers", len(om.Finalizers) > 0},
		{"managedFields", len(om.ManagedFields) > 0},
	} {
		if f.set {
			add("metadata.%s: a %s file is not a cluster object; only metadata.name, labels and annotations are read", f.field, kind)
		}
	}
	return errs
}

// Documents splits a YAML stream at its "---" lines, dropping documents
// that hold only comments or space.
func Documents(data []byte) [][]byte {
	var out [][]byte
	for _, d := range docSeparator.Split(string(data), -1) {
		if strings.TrimSpace(stripComments(d)) != "" {
			out = append(out, []byte(d))
		}
	}
	return out
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}
