// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpupool/gpupool/e2e/explain"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/fakegpu"
)

// Contract is the pool contract checked over every pod of a run at once:
// the placement assertions of the contract suites, in bulk.
type Contract struct {
	Pods      int `json:"podsChecked"`
	Scheduled int `json:"scheduled"`
	// Violations counts every broken rule; Examples keeps the first few.
	Violations int            `json:"violations"`
	Examples   []string       `json:"examples,omitempty"`
	ByRule     map[string]int `json:"byRule,omitempty"`
	// Pending counts Pending pods by the contract's explanation.
	Pending map[string]int `json:"pending"`
}

// Rules checked, as the report names them.
const (
	RuleSKUMatch        = "pod lands on its own pool"
	RuleExactResource   = "node advertises what the pod asks"
	RuleNotOvercommit   = "node's pods fit its allocatable"
	RuleNoCrossTrust    = "no time-sliced node hosts two trust domains"
	RuleExpectedPending = "deliberately unschedulable pods stay Pending for the contract's reason"
	RuleScheduled       = "well-formed pods are placed"
)

const maxExamples = 10

func (c *Contract) violate(rule, format string, args ...any) {
	c.Violations++
	if c.ByRule == nil {
		c.ByRule = map[string]int{}
	}
	c.ByRule[rule]++
	if len(c.Examples) < maxExamples {
		c.Examples = append(c.Examples, rule+": "+fmt.Sprintf(format, args...))
	}
}

// checkContract looks at the run's live pods (terminal and deleting ones
// aside) against the nodes. expected gives each mix entry's expected
// Pending category ("" for pods that must be placed). dra is the DRA side
// of the cluster, nil when the mix has no DRA pool: a pod's claims are
// held to its node as its limits are (each allocated, its devices
// published on the node, no device in two claims unless it allows it).
func checkContract(fl *fleet.Fleet, w *Workload, expected []string, nodes []corev1.Node, pods []corev1.Pod, namespaces []corev1.Namespace, dra *draState) Contract {
	c := Contract{Pending: map[string]int{}}
	byName := make(map[string]*corev1.Node, len(nodes))
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	trustOf := namespaceTrust(fl, namespaces)
	shared := sharedPools(fl)
	used := map[string]map[string]int64{}
	holders := map[string]map[string]bool{} // pool/device → the claims holding it
	trusts := map[string]map[string]bool{}
	var pending []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		entry, err := strconv.Atoi(p.Labels[LabelEntry])
		if err != nil || entry < 0 || entry >= len(w.Spec.Mix) {
			continue
		}
		c.Pods++
		if p.Spec.NodeName == "" {
			pending = append(pending, p)
			continue
		}
		c.Scheduled++
		m := w.Spec.Mix[entry]
		n := byName[p.Spec.NodeName]
		if n == nil {
			c.violate(RuleSKUMatch, "pod %s/%s is bound to %s, which is not a node of the fleet", p.Namespace, p.Name, p.Spec.NodeName)
			continue
		}
		pool := n.Labels[fleet.LabelPool]
		if expected[entry] != "" {
			c.violate(RuleExpectedPending, "pod %s/%s (%s on %s) was placed on %s of pool %s", p.Namespace, p.Name, m.Shape, m.Pool, n.Name, pool)
		} else if pool != m.Pool {
			c.violate(RuleSKUMatch, "pod %s/%s for pool %s landed on %s of pool %s", p.Namespace, p.Name, m.Pool, n.Name, pool)
		}
		// A limit DRA serves is a claim the scheduler made (dra-facts
		// §3): checked with the pod's claims, not against allocatable.
		viaDRA := dra != nil && p.Status.ExtendedResourceClaimStatus != nil
		for r, q := range explain.GPURequests(p) {
			if alloc, ok := n.Status.Allocatable[corev1.ResourceName(r)]; !ok || alloc.Value() == 0 {
				if viaDRA {
					continue
				}
				c.violate(RuleExactResource, "pod %s/%s asks %s, node %s advertises none", p.Namespace, p.Name, r, n.Name)
			}
			if used[n.Name] == nil {
				used[n.Name] = map[string]int64{}
			}
			used[n.Name][r] += q
		}
		if dra != nil {
			dra.checkClaims(&c, p, n.Name, m.Claim(), holders)
		} else if len(p.Spec.ResourceClaims) > 0 {
			c.violate(RuleExactResource, "pod %s/%s on %s has ResourceClaims, and the mix has no DRA pool", p.Namespace, p.Name, n.Name)
		}
		if shared[pool] {
			if trusts[n.Name] == nil {
				trusts[n.Name] = map[string]bool{}
			}
			trusts[n.Name][trustOf[p.Namespace]] = true
		}
	}
	for node, rs := range used {
		for r, q := range rs {
			if alloc := byName[node].Status.Allocatable[corev1.ResourceName(r)]; q > alloc.Value() {
				c.violate(RuleNotOvercommit, "node %s: pods hold %d %s, it has %d", node, q, r, alloc.Value())
			}
		}
	}
	for _, dev := range slices.Sorted(maps.Keys(holders)) {
		if claims := holders[dev]; len(claims) > 1 && !dra.devices[dev].shared {
			c.violate(RuleNotOvercommit, "device %s of node %s is allocated to %d claims: %v", dev, dra.devices[dev].node, len(claims), slices.Sorted(maps.Keys(claims)))
		}
	}
	for node, ts := range trusts {
		if len(ts) > 1 {
			c.violate(RuleNoCrossTrust, "shared node %s hosts pods of trust domains %v", node, slices.Sorted(maps.Keys(ts)))
		}
	}
	cluster := explain.Cluster{Nodes: nodes, Pods: pods}
	if dra != nil {
		cluster.DRA = dra.explain
	}
	for _, p := range pending {
		entry, _ := strconv.Atoi(p.Labels[LabelEntry])
		why := explain.Pod(p, cluster)
		if len(explain.GPURequests(p)) == 0 && len(p.Spec.ResourceClaims) == 0 {
			why.Category = "cpu-pod"
		}
		c.Pending[why.Category]++
		switch want := expected[entry]; {
		case want == "":
			c.violate(RuleScheduled, "pod %s/%s for pool %s is Pending: %s", p.Namespace, p.Name, w.Spec.Mix[entry].Pool, why)
		case why.Category != want:
			c.violate(RuleExpectedPending, "pod %s/%s (%s on %s) is Pending as %s, want %s", p.Namespace, p.Name, w.Spec.Mix[entry].Shape, w.Spec.Mix[entry].Pool, why, want)
		}
	}
	return c
}

// sharedPools are the pools designed to share GPUs between pods: time
// slicing, MPS, and DRA's consumable shares (several claims on a device).
func sharedPools(fl *fleet.Fleet) map[string]bool {
	out := map[string]bool{}
	for _, p := range allPools(fl) {
		if m := p.Mode(); m == fleet.ModeTimeSlicing || m == fleet.ModeMPS || (p.DRA != nil && p.DRA.ConsumableShares != "") {
			out[p.Name] = true
		}
	}
	return out
}

// draState is the DRA side of the cluster, as the contract check reads it.
type draState struct {
	// claims by namespace/name.
	claims map[string]*resourcev1.ResourceClaim
	// devices NVIDIA's driver publishes, by pool/device, from each pool's
	// newest generation (the only one consumers use, dra-facts §1).
	devices map[string]publishedDevice
	// explain is the same objects read for Pending reasons.
	explain *explain.DRA
}

type publishedDevice struct {
	node string
	// shared: the device takes several claims (allowMultipleAllocations,
	// consumable shares). Partitionable devices sharing counters are not
	// counted against each other here.
	shared bool
}

func newDRAState(slices []resourcev1.ResourceSlice, claims []resourcev1.ResourceClaim, classes []resourcev1.DeviceClass) *draState {
	d := &draState{claims: map[string]*resourcev1.ResourceClaim{}, devices: map[string]publishedDevice{},
		explain: explain.NewDRA(slices, claims, classes)}
	for i := range claims {
		d.claims[claims[i].Namespace+"/"+claims[i].Name] = &claims[i]
	}
	newest := newestGenerations(slices)
	for _, s := range slices {
		if s.Spec.Driver != fakegpu.DRADriver || s.Spec.NodeName == nil || s.Spec.Pool.Generation != newest[s.Spec.Pool.Name] {
			continue
		}
		for _, dev := range s.Spec.Devices {
			d.devices[s.Spec.Pool.Name+"/"+dev.Name] = publishedDevice{node: *s.Spec.NodeName, shared: dev.AllowMultipleAllocations != nil && *dev.AllowMultipleAllocations}
		}
	}
	return d
}

// newestGenerations is each pool of NVIDIA's driver's newest generation.
func newestGenerations(slices []resourcev1.ResourceSlice) map[string]int64 {
	out := map[string]int64{}
	for _, s := range slices {
		if s.Spec.Driver == fakegpu.DRADriver {
			out[s.Spec.Pool.Name] = max(out[s.Spec.Pool.Name], s.Spec.Pool.Generation)
		}
	}
	return out
}

// unpublished lists the nodes whose pool NVIDIA's driver has not
// published whole: no slice, or fewer slices of the newest generation
// than its resourceSliceCount, or no device in them. The driver names
// each node's pool after the node (dra-facts §2).
func unpublished(nodes []string, slices []resourcev1.ResourceSlice) []string {
	newest := newestGenerations(slices)
	count, want, devices := map[string]int64{}, map[string]int64{}, map[string]int{}
	for _, s := range slices {
		if p := s.Spec.Pool; s.Spec.Driver == fakegpu.DRADriver && p.Generation == newest[p.Name] {
			count[p.Name]++
			want[p.Name] = p.ResourceSliceCount
			devices[p.Name] += len(s.Spec.Devices)
		}
	}
	var out []string
	for _, n := range nodes {
		if count[n] == 0 || count[n] < want[n] || devices[n] == 0 {
			out = append(out, n)
		}
	}
	return out
}

// claimRef is one claim a pod uses: its name in the pod and the
// ResourceClaim's ("" when the resourceclaim controller has not made it).
type claimRef struct{ inPod, claim string }

// podClaims are the claims a pod uses: its own (a named claim, or the one
// made from its template, which the pod's status names) and the one the
// scheduler made for limits DRA serves.
func podClaims(p *corev1.Pod) []claimRef {
	made := map[string]string{}
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			made[s.Name] = *s.ResourceClaimName
		}
	}
	var out []claimRef
	for _, pc := range p.Spec.ResourceClaims {
		ref := claimRef{inPod: pc.Name, claim: made[pc.Name]}
		if pc.ResourceClaimName != nil {
			ref.claim = *pc.ResourceClaimName
		}
		out = append(out, ref)
	}
	if e := p.Status.ExtendedResourceClaimStatus; e != nil {
		out = append(out, claimRef{inPod: "(extended resources)", claim: e.ResourceClaimName})
	}
	return out
}

// checkClaims holds the claims of pod p, bound to node, to it: each
// allocated, and every device of NVIDIA's driver it holds published on
// that node; a claim pod must hold at least one. holders collects which
// claims hold each device.
func (d *draState) checkClaims(c *Contract, p *corev1.Pod, node string, claimPod bool, holders map[string]map[string]bool) {
	gpus, before := 0, c.Violations
	for _, ref := range podClaims(p) {
		key := p.Namespace + "/" + ref.claim
		cl := d.claims[key]
		switch {
		case ref.claim == "":
			c.violate(RuleExactResource, "pod %s/%s is bound to %s, but its claim %s was never made", p.Namespace, p.Name, node, ref.inPod)
			continue
		case cl == nil:
			c.violate(RuleExactResource, "pod %s/%s is bound to %s, but its claim %s (%s) does not exist", p.Namespace, p.Name, node, ref.inPod, ref.claim)
			continue
		case cl.Status.Allocation == nil:
			c.violate(RuleExactResource, "pod %s/%s is bound to %s, but its claim %s is not allocated", p.Namespace, p.Name, node, ref.claim)
			continue
		}
		for _, res := range cl.Status.Allocation.Devices.Results {
			if res.Driver != fakegpu.DRADriver {
				continue
			}
			gpus++
			dev := res.Pool + "/" + res.Device
			switch pub, ok := d.devices[dev]; {
			case !ok:
				c.violate(RuleExactResource, "pod %s/%s on %s: its claim %s holds device %s, which NVIDIA's driver does not publish", p.Namespace, p.Name, node, ref.claim, dev)
			case pub.node != node:
				c.violate(RuleExactResource, "pod %s/%s is bound to %s, but its claim %s holds device %s of node %s", p.Namespace, p.Name, node, ref.claim, dev, pub.node)
			}
			if holders[dev] == nil {
				holders[dev] = map[string]bool{}
			}
			holders[dev][key] = true
		}
	}
	if claimPod && gpus == 0 && c.Violations == before {
		c.violate(RuleExactResource, "claim pod %s/%s on %s holds no device of NVIDIA's driver", p.Namespace, p.Name, node)
	}
}

// namespaceTrust maps namespaces to the trust domain whose labels they
// carry ("" for none).
func namespaceTrust(fl *fleet.Fleet, nss []corev1.Namespace) map[string]string {
	out := map[string]string{}
	for _, ns := range nss {
		for _, p := range allPools(fl) {
			for _, d := range p.TrustDomains {
				if labels.SelectorFromSet(d.Labels).Matches(labels.Set(ns.Labels)) {
					out[ns.Name] = d.Name
				}
			}
		}
	}
	return out
}

// allPools are the fleet's pools, fixed and autoscaled.
func allPools(fl *fleet.Fleet) []fleet.Pool {
	out := slices.Clone(fl.Spec.Pools)
	for _, ap := range fl.Spec.AutoscaledPools {
		out = append(out, ap.Pool)
	}
	return out
}
