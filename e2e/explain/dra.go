// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package explain

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	"github.com/gpupool/gpupool/fakegpu"
)

// ImplicitClassPrefix names a DeviceClass as an extended resource, mapped
// or not (dra-facts §1 "DeviceClass"). Explanations count a claim of a
// class that maps no name under it, as a pod limiting it is counted.
const ImplicitClassPrefix = "deviceclass.resource.kubernetes.io/"

// describe names a resource as a reader knows it.
func describe(r string) string {
	if c, ok := strings.CutPrefix(r, ImplicitClassPrefix); ok {
		return "DeviceClass " + c
	}
	return r
}

// classMatcher tells the devices a DeviceClass selects, by its CEL
// selectors as the scheduler evaluates them (k8s.io/dynamic-resource-
// allocation/cel). A selector that fails to compile selects nothing; one
// that fails to evaluate on a device (an attribute the device lacks) is an
// error, which stops the scheduler's allocation (dra-facts §6.8).
type classMatcher []dracel.CompilationResult

func newClassMatcher(c resourcev1.DeviceClass) (classMatcher, bool) {
	var m classMatcher
	for _, sel := range c.Spec.Selectors {
		if sel.CEL == nil {
			continue
		}
		r := dracel.GetCompiler(dracel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: true}).CompileCELExpression(sel.CEL.Expression, dracel.Options{})
		if r.Error != nil {
			return nil, false
		}
		m = append(m, r)
	}
	return m, true
}

func (m classMatcher) matches(driver string, dev resourcev1.Device) (bool, error) {
	in := dracel.Device{Driver: driver, AllowMultipleAllocations: dev.AllowMultipleAllocations, Attributes: dev.Attributes, Capacity: dev.Capacity}
	for i, r := range m {
		ok, _, err := r.DeviceMatches(context.Background(), in)
		if err != nil {
			return false, fmt.Errorf("selector #%d: %w", i, err)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// DRANode is what NVIDIA's DRA driver offers on one node, counted by the
// extended resource name a DeviceClass maps onto its devices, and by each
// class's implicit name (ImplicitClassPrefix).
type DRANode struct {
	// Devices are the published devices serving each name (the pool's
	// newest generation); Allocated those of them claims hold.
	Devices, Allocated map[string]int64
}

// DRA is the DRA side of a cluster, for explanations.
type DRA struct {
	// Nodes by node name.
	Nodes map[string]DRANode
	// ClassResources maps a DeviceClass to the extended resource it maps
	// (classes that map none are absent).
	ClassResources map[string]string
	// Claims by namespace/name.
	Claims map[string]*resourcev1.ResourceClaim
	// Failing says, by the names a DeviceClass serves, how its selectors
	// fail to evaluate on a published device (the first failure seen).
	Failing map[string]string
	classes []draClass
}

// draClass is a DeviceClass as explanations count it: the names its
// devices serve (its implicit name, and the name it maps) and its
// selectors.
type draClass struct {
	name  string
	names []string
	match classMatcher
}

// templateDevices counts, by the names DeviceClasses serve, the devices
// of a machine's ResourceSlice templates: what an autoscaler that plans
// claims on them (autoscaler-facts §10) counts the machine as offering. A
// selector that fails on a device does not select it, as in Karpenter's
// allocator.
func (d *DRA) templateDevices(templates []resourcev1.ResourceSliceSpec) map[string]int64 {
	out := map[string]int64{}
	if d == nil {
		return out
	}
	for _, s := range templates {
		for _, dev := range s.Devices {
			for _, c := range d.classes {
				if ok, err := c.match.matches(s.Driver, dev); ok && err == nil {
					for _, r := range c.names {
						out[r]++
					}
				}
			}
		}
	}
	return out
}

// NewDRA reads the DRA side of a cluster from its objects.
func NewDRA(slices []resourcev1.ResourceSlice, claims []resourcev1.ResourceClaim, classes []resourcev1.DeviceClass) *DRA {
	d := &DRA{Nodes: map[string]DRANode{}, ClassResources: map[string]string{}, Claims: map[string]*resourcev1.ResourceClaim{}, Failing: map[string]string{}}
	for _, c := range classes {
		names := []string{ImplicitClassPrefix + c.Name}
		if r := c.Spec.ExtendedResourceName; r != nil {
			d.ClassResources[c.Name] = *r
			names = append(names, *r)
		}
		if m, ok := newClassMatcher(c); ok {
			d.classes = append(d.classes, draClass{c.Name, names, m})
		}
	}
	byClass := d.classes
	newest := map[string]int64{}
	for _, s := range slices {
		if s.Spec.Driver == fakegpu.DRADriver {
			newest[s.Spec.Pool.Name] = max(newest[s.Spec.Pool.Name], s.Spec.Pool.Generation)
		}
	}
	// device → the names it serves, by pool/device.
	serves := map[string][]string{}
	for _, s := range slices {
		if s.Spec.Driver != fakegpu.DRADriver || s.Spec.NodeName == nil || s.Spec.Pool.Generation != newest[s.Spec.Pool.Name] {
			continue
		}
		n := d.node(*s.Spec.NodeName)
		for _, dev := range s.Spec.Devices {
			for _, c := range byClass {
				ok, err := c.match.matches(s.Spec.Driver, dev)
				if err != nil {
					for _, r := range c.names {
						if _, seen := d.Failing[r]; !seen {
							d.Failing[r] = fmt.Sprintf("DeviceClass %s's %v on device %s of node %s", c.name, err, dev.Name, *s.Spec.NodeName)
						}
					}
				}
				if !ok {
					continue
				}
				for _, r := range c.names {
					n.Devices[r]++
					serves[s.Spec.Pool.Name+"/"+dev.Name] = append(serves[s.Spec.Pool.Name+"/"+dev.Name], r)
				}
			}
		}
	}
	for i := range claims {
		c := &claims[i]
		d.Claims[c.Namespace+"/"+c.Name] = c
		if c.Status.Allocation == nil {
			continue
		}
		for _, res := range c.Status.Allocation.Devices.Results {
			if res.Driver != fakegpu.DRADriver {
				continue
			}
			// NVIDIA's driver names each node's pool after the node.
			n := d.node(res.Pool)
			for _, r := range serves[res.Pool+"/"+res.Device] {
				n.Allocated[r]++
			}
		}
	}
	return d
}

func (d *DRA) node(name string) DRANode {
	n, ok := d.Nodes[name]
	if !ok {
		n = DRANode{Devices: map[string]int64{}, Allocated: map[string]int64{}}
		d.Nodes[name] = n
	}
	return n
}

// ClaimNames are the ResourceClaims a pod's spec.resourceClaims stand
// for: those it names, and those generated from its templates ("" for one
// not generated yet).
func ClaimNames(p *corev1.Pod) []string {
	generated := map[string]string{}
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			generated[s.Name] = *s.ResourceClaimName
		}
	}
	out := make([]string, 0, len(p.Spec.ResourceClaims))
	for _, pc := range p.Spec.ResourceClaims {
		name := generated[pc.Name]
		if pc.ResourceClaimName != nil {
			name = *pc.ResourceClaimName
		}
		out = append(out, name)
	}
	return out
}

// claimRequests is what the pod's unallocated claims ask of each
// resource: a request of a DeviceClass that maps a name counts as its
// count of that name, of any other class as its count of the class's
// implicit name.
func (d *DRA) claimRequests(p *corev1.Pod) map[string]int64 {
	out := map[string]int64{}
	if d == nil {
		return out
	}
	for _, name := range ClaimNames(p) {
		c, ok := d.Claims[p.Namespace+"/"+name]
		if !ok || c.Status.Allocation != nil {
			continue
		}
		for _, req := range c.Spec.Devices.Requests {
			if ex := req.Exactly; ex != nil {
				r, ok := d.ClassResources[ex.DeviceClassName]
				if !ok {
					r = ImplicitClassPrefix + ex.DeviceClassName
				}
				out[r] += max(ex.Count, 1)
			}
		}
	}
	return out
}

// serving is the node's DRA offer of r (nil: none).
func (d *DRA) serving(node, r string) (devices, free int64, ok bool) {
	if d == nil {
		return 0, 0, false
	}
	n, has := d.Nodes[node]
	if !has || n.Devices[r] == 0 {
		return 0, 0, false
	}
	return n.Devices[r], n.Devices[r] - n.Allocated[r], true
}

// offers says what node n offers: its advertised nvidia.com/ resources
// and the names its DRA devices serve.
func (d *DRA) offers(n corev1.Node) string {
	out := advertised([]corev1.Node{n})
	if d != nil {
		var served []string
		for r, k := range d.Nodes[n.Name].Devices {
			if k > 0 && strings.HasPrefix(r, ImplicitClassPrefix) {
				served = append(served, describe(r))
			}
		}
		sort.Strings(served)
		out = append(out, served...)
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, ", ")
}

// failing says how the selectors of the class serving r fail ("" none).
func (d *DRA) failing(r string) string {
	if d == nil {
		return ""
	}
	return d.Failing[r]
}

// anyServes reports whether any node offers r through DRA.
func (d *DRA) anyServes(r string) bool {
	if d == nil {
		return false
	}
	for _, n := range d.Nodes {
		if n.Devices[r] > 0 {
			return true
		}
	}
	return false
}

// LoadDRA reads the DRA side of the cluster cs talks to.
func LoadDRA(ctx context.Context, cs kubernetes.Interface) (*DRA, error) {
	slices, err := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ResourceSlices: %w", err)
	}
	claims, err := cs.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ResourceClaims: %w", err)
	}
	classes, err := cs.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing DeviceClasses: %w", err)
	}
	return NewDRA(slices.Items, claims.Items, classes.Items), nil
}
