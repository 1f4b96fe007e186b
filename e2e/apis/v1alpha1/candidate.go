// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpupool/gpupool/e2e/apis"
)

// Candidate is a candidate directory's candidate.yaml: what the candidate
// is for, and how it is made from another (base, omit, patches). The
// directory's other files are its manifests.
type Candidate struct {
	// TypeMeta is apiVersion gpupool.dev/v1alpha1 and kind Candidate.
	metav1.TypeMeta `json:",inline"`
	// Metadata: name (default: the directory's name), labels and
	// annotations; a candidate.yaml is not a cluster object, so nothing
	// else.
	Metadata metav1.ObjectMeta `json:"metadata"`
	// Spec says what the candidate is for and what it starts from.
	Spec CandidateSpec `json:"spec"`
}

// CandidateSpec says what the candidate is for.
type CandidateSpec struct {
	// Description says in a sentence what the candidate is, or for a
	// broken one what is broken.
	Description string `json:"description,omitempty"`
	// Fleet is the fleet file the candidate is meant for, relative to the
	// candidate directory.
	Fleet string `json:"fleet,omitempty"`
	// Base is another candidate directory (relative to this one) whose
	// manifests this candidate starts from; its own files come after, and
	// replace base objects of the same kind, namespace and name. A broken
	// candidate is the reference plus one small candidate.yaml.
	Base string `json:"base,omitempty"`
	// Omit drops objects of the base.
	Omit []ObjectRef `json:"omit,omitempty"`
	// Patches change objects (of the base or this candidate) with a JSON
	// merge patch (RFC 7386).
	Patches []Patch `json:"patches,omitempty"`
	// FleetPatches change pools of the fleet the candidate runs on: node
	// labels and taints are part of what a team changes, so a candidate
	// may carry them. Inherited from the base unless spec.fleet is set.
	FleetPatches []PoolPatch `json:"fleetPatches,omitempty"`
	// GPUOperator installs the GPU Operator as a team does, from its Helm
	// chart's values: gpupool renders the pinned chart as `helm template`
	// would and takes the objects the stack reads (the ClusterPolicy, the
	// device-plugin and MIG ConfigMaps) in place of hand-written ones.
	GPUOperator *GPUOperatorValues `json:"gpuOperator,omitempty"`
	// Autoscaler is how the team runs its autoscaler, beside the
	// NodePools among the manifests: part of what is checked. Inherited
	// from the base, its feature gates merged (this candidate's win).
	Autoscaler *AutoscalerSettings `json:"autoscaler,omitempty"`
	// Breaks lists the check ids this candidate must fail (broken
	// candidates used to prove each check can fail); empty for a candidate
	// that should pass everything.
	Breaks []string `json:"breaks,omitempty"`
}

// GPUOperatorValues are a GPU Operator Helm release's values, as a team
// passes them to `helm upgrade --install gpu-operator`.
type GPUOperatorValues struct {
	// Version is the chart version the team installs; empty means the
	// pinned one, and any other is refused: gpupool simulates only the
	// GPU Operator it embeds (upstream.GPUOperatorRelease).
	Version string `json:"version,omitempty"`
	// Namespace is the release's (default gpu-operator).
	Namespace string `json:"namespace,omitempty"`
	// ValuesFiles are -f files, relative to the candidate directory; a
	// values file there is not read as a manifest.
	ValuesFiles []string `json:"valuesFiles,omitempty"`
	// Set are --set expressions, applied after the files.
	Set []string `json:"set,omitempty"`
}

// DefaultGPUOperatorNamespace is the namespace the GPU Operator's install
// guide installs the release into.
const DefaultGPUOperatorNamespace = "gpu-operator"

// ReleaseNamespace is the release's namespace, the default if unset.
func (v GPUOperatorValues) ReleaseNamespace() string {
	return cmp.Or(v.Namespace, DefaultGPUOperatorNamespace)
}

// AutoscalerSettings are the team's Karpenter settings that are not
// objects in the cluster.
type AutoscalerSettings struct {
	// FeatureGates are Karpenter's --feature-gates, by name; a gate not
	// named keeps Karpenter's default (autoscaler-facts §8.6). NodeOverlay
	// must be on for NodeOverlays to apply, the way a pool whose nodes
	// advertise MIG slices or renamed time-sliced GPUs scales from zero.
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
}

// KarpenterFeatureGates are the gates of Karpenter's that a candidate may
// set. Karpenter ignores any other name without a word (autoscaler-facts
// §8.6), so a misspelt gate would leave a feature silently off: refused
// here instead. v1.14.1 also knows CapacityBuffer, left out: it needs the
// capacitybuffers CRD, which gpupool does not install (the API is
// cluster-autoscaler's too, and a cluster may serve its own).
var KarpenterFeatureGates = []string{"NodeOverlay", "NodeRepair", "ReservedCapacity", "SpotToSpotConsolidation", "StaticCapacity"}

// ObjectRef names one object of a candidate.
type ObjectRef struct {
	// Kind is the object's kind (Deployment, ConfigMap, ...). Required.
	Kind string `json:"kind"`
	// Name is the object's metadata.name. Required.
	Name string `json:"name"`
	// Namespace narrows the match to one namespace (empty: any).
	Namespace string `json:"namespace,omitempty"`
}

func (r ObjectRef) String() string {
	if r.Namespace != "" {
		return r.Kind + " " + r.Namespace + "/" + r.Name
	}
	return r.Kind + " " + r.Name
}

// Patch is a JSON merge patch for one object.
type Patch struct {
	// Target names the object (or objects, without a namespace) to patch.
	Target ObjectRef `json:"target"`
	// Patch is the merge patch, on the object as its manifest writes it.
	Patch map[string]any `json:"patch"`
}

// SetDefaultsCandidate fills in what candidate.yaml may leave out:
// metadata.name is the candidate directory's name (dirName, "" when the
// document was not read from a directory).
func SetDefaultsCandidate(c *Candidate, dirName string) {
	if c.Metadata.Name == "" {
		c.Metadata.Name = dirName
	}
}

// Validate checks candidate.yaml on its own, each error naming its field;
// what needs the directory (the base, the fleet, the values files, the
// objects omit and patches name) is the candidate package's to check.
func (c *Candidate) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	errs = append(errs, apis.CheckMeta(c.TypeMeta, c.Metadata, apis.KindCandidate)...)
	s := c.Spec
	if len(s.Omit) > 0 && s.Base == "" {
		add("spec.omit needs spec.base")
	}
	for i, r := range s.Omit {
		errs = append(errs, r.validate(fmt.Sprintf("spec.omit[%d]", i))...)
	}
	for i, p := range s.Patches {
		errs = append(errs, p.Target.validate(fmt.Sprintf("spec.patches[%d].target", i))...)
	}
	for i, p := range s.FleetPatches {
		if p.Pool == "" {
			add("spec.fleetPatches[%d].pool: required", i)
		}
	}
	if s.Autoscaler != nil {
		for _, g := range slices.Sorted(maps.Keys(s.Autoscaler.FeatureGates)) {
			if !slices.Contains(KarpenterFeatureGates, g) {
				add("spec.autoscaler.featureGates.%s: Karpenter has no such gate (it knows %s)", g, strings.Join(KarpenterFeatureGates, ", "))
			}
		}
	}
	for i, id := range s.Breaks {
		if id == "" {
			add("spec.breaks[%d]: empty; name a check id", i)
		}
	}
	return errors.Join(errs...)
}

// validate requires what an ObjectRef matches on: an empty kind or name
// matches no object, and the error would only say none was found.
func (r ObjectRef) validate(at string) []error {
	var errs []error
	if r.Kind == "" {
		errs = append(errs, fmt.Errorf("%s.kind: required", at))
	}
	if r.Name == "" {
		errs = append(errs, fmt.Errorf("%s.name: required", at))
	}
	return errs
}
