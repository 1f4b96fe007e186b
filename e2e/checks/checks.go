// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package checks is the catalog of pool-contract checks: a stable id per
// check, the contract area it belongs to and the rule it guards. Suites
// build their features from it, and reports group results by it.
package checks

import (
	"fmt"
	"sort"

	"sigs.k8s.io/e2e-framework/pkg/features"
)

// Areas of the pool contract, in report order.
const (
	AreaSKUPools         = "sku-pools"
	AreaResourceNames    = "resource-names"
	AreaRuntimeClass     = "runtimeclass"
	AreaSharing          = "sharing"
	AreaMIGDrains        = "mig-drains"
	AreaOperatorHealth   = "operator-health"
	AreaSecurityFloor    = "security-floor"
	AreaPendingExplained = "pending-explained"
	AreaExploration      = "exploration"
	AreaDRA              = "dra"
	AreaAccess           = "access"
	AreaAutoscaling      = "autoscaling"
)

// Areas lists the areas in report order with their titles.
var Areas = []struct{ ID, Title string }{
	{AreaSKUPools, "SKU pools"},
	{AreaResourceNames, "Resource names"},
	{AreaRuntimeClass, "RuntimeClass"},
	{AreaSharing, "Sharing modes"},
	{AreaMIGDrains, "MIG changes are drains"},
	{AreaOperatorHealth, "Operator health"},
	{AreaSecurityFloor, "Security floor"},
	{AreaAccess, "What a container can see"},
	{AreaAutoscaling, "Autoscaled pools"},
	{AreaPendingExplained, "Pending is a pool-contract bug"},
	{AreaDRA, "GPUs through DRA"},
	{AreaExploration, "Every pod a tenant can write"},
}

// Check is one contract check.
type Check struct {
	ID   string `json:"id"`
	Area string `json:"area"`
	// Rule is the contract rule the check guards, as a sentence.
	Rule string `json:"rule"`
	// Provider names the only cluster provider that can make the check
	// ("kind": it needs a real kubelet); empty means any.
	Provider string `json:"provider,omitempty"`
	// Disruptive checks change nodes (take a device plugin down, report
	// an Xid, relabel MIG). On a cluster gpupool did not make they run
	// only when asked, on the nodes named for it.
	Disruptive bool `json:"disruptive,omitempty"`
	// NeedsAutoscaler checks run where gpupool runs the autoscaler
	// beside a cluster it made; on a cluster it did not make they are
	// skipped: a real autoscaler there would buy real machines.
	NeedsAutoscaler bool `json:"needsAutoscaler,omitempty"`
}

var catalog = map[string]Check{}

// Register adds a check to the catalog; ids must be unique. Suites call it
// from package-level vars so the whole catalog is known before tests run.
func Register(c Check) Check {
	if _, dup := catalog[c.ID]; dup {
		panic(fmt.Sprintf("checks: duplicate id %q", c.ID))
	}
	catalog[c.ID] = c
	return c
}

// Lookup returns the check with id.
func Lookup(id string) (Check, bool) {
	c, ok := catalog[id]
	return c, ok
}

// All lists the registered checks by id.
func All() []Check {
	out := make([]Check, 0, len(catalog))
	for _, c := range catalog {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Feature starts an e2e-framework feature for the check: the feature's name
// is the check id (so test output and reports carry it), labelled with its
// id and area for selection (--labels area=sharing), and with the only
// provider that can make it, if one.
func (c Check) Feature() *features.FeatureBuilder {
	f := features.New(c.ID).WithLabel("check", c.ID).WithLabel("area", c.Area)
	if c.Provider != "" {
		f = f.WithLabel(LabelProvider, c.Provider)
	}
	if c.Disruptive {
		f = f.WithLabel(LabelDisruptive, "true")
	}
	if c.NeedsAutoscaler {
		f = f.WithLabel(LabelNeedsAutoscaler, "true")
	}
	return f
}

// LabelNeedsAutoscaler labels the features of checks that need the
// autoscaler gpupool runs; a run on a cluster gpupool did not make skips
// them (--skip-labels autoscaler=true).
const LabelNeedsAutoscaler = "autoscaler"

// LabelDisruptive labels the features of disruptive checks; a run on a
// cluster gpupool did not make skips them (--skip-labels disruptive=true)
// unless asked.
const LabelDisruptive = "disruptive"

// LabelProvider labels the features of checks only one provider can make;
// a run skips those of other providers (--skip-labels provider=kind).
const LabelProvider = "provider"
