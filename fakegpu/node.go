package fakegpu

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// NodeObservation is what the controller reads of one node.
type NodeObservation struct {
	Labels      map[string]string
	Annotations map[string]string
	Now         time.Time
}

// NodeDesired is what the simulated stack wants the node to look like.
type NodeDesired struct {
	// Labels: every label the stack owns (GFD's, deploy labels, MIG state),
	// with their values; Remove lists stack-owned labels to delete.
	Labels map[string]string
	Remove []string
	// Capacity and Allocatable of nvidia.com resources; a resource the node
	// had and that is absent here is removed.
	Capacity, Allocatable map[string]int64
	// Annotations the controller keeps on the node ("" value: delete).
	Annotations map[string]string
	// RequeueAfter > 0: reconcile again then (MIG reconfiguration in progress).
	RequeueAfter time.Duration
	// LayoutChanged: the GPUs were repartitioned; GPU pods bound to the
	// node lost their devices.
	LayoutChanged bool
	FromLayout    string
	ToLayout      string
	// PluginDown explains why the device plugin does not serve (empty: it does).
	PluginDown string
}

// Inventory reads a node's GPU inventory from its annotations.
func Inventory(annotations map[string]string) (NodeInventory, bool, error) {
	key, ok := annotations[AnnotationSKU]
	if !ok {
		return NodeInventory{}, false, nil
	}
	sku, err := LookupSKU(key)
	if err != nil {
		return NodeInventory{}, true, fmt.Errorf("annotation %s: %w", AnnotationSKU, err)
	}
	n, err := strconv.Atoi(annotations[AnnotationGPUs])
	if err != nil || n < 1 {
		return NodeInventory{}, true, fmt.Errorf("annotation %s: want a GPU count >= 1, got %q", AnnotationGPUs, annotations[AnnotationGPUs])
	}
	return NodeInventory{SKU: sku, Count: n}, true, nil
}

// Desired runs the simulated GPU Operator on one node: the MIG manager's
// protocol, the device plugin's advertisement and GFD's labels. It is pure:
// the controller applies the result and requeues when asked.
func (s *Stack) Desired(inv NodeInventory, obs NodeObservation, reconfigureDelay time.Duration) NodeDesired {
	labels := copyMap(obs.Labels)
	d := NodeDesired{Labels: map[string]string{}, Annotations: map[string]string{}}
	set := func(k, v string) { d.Labels[k] = v; labels[k] = v }

	// The Operator schedules its operands on GPU nodes through these labels.
	for _, l := range DeployLabels {
		if _, ok := labels[l]; !ok {
			set(l, "true")
		}
	}

	// MIG manager.
	migLayout := obs.Annotations[AnnotationMIGApplied]
	migManager := s.Policy != nil && s.Policy.MIGManagerEnabled && inv.SKU.MIGCapable() && s.MIGParted != nil
	reconfiguring := false
	if migManager {
		desired := labels[LabelMIGConfig]
		if desired == "" {
			desired = s.Policy.MIGManagerDefault
			if desired == "" {
				desired = "all-disabled"
			}
			set(LabelMIGConfig, desired) // GO labels MIG-capable nodes that lack one
		}
		switch {
		case desired == migLayout || s.sameMIGState(inv, migLayout, desired):
			// Already applied (a fresh node's GPUs have MIG disabled, which
			// is what all-disabled asks): success at once, nothing paused.
			set(LabelMIGConfigState, MIGStateSuccess)
			d.Annotations[AnnotationMIGFailed] = ""
			d.Annotations[AnnotationMIGApplied] = desired
			migLayout = desired
		case obs.Annotations[AnnotationMIGFailed] == desired:
			set(LabelMIGConfigState, MIGStateFailed) // tried and failed; wait for a new label
		default:
			since, err := time.Parse(time.RFC3339Nano, obs.Annotations[AnnotationMIGSince])
			if err != nil {
				since = obs.Now
				d.Annotations[AnnotationMIGSince] = since.Format(time.RFC3339Nano)
			}
			if wait := since.Add(reconfigureDelay).Sub(obs.Now); wait > 0 {
				reconfiguring = true
				d.RequeueAfter = wait
				set(LabelMIGConfigState, MIGStatePending)
				for _, l := range DeployLabels {
					if labels[l] != "false" {
						set(l, PausedForMIGChange)
					}
				}
				break
			}
			d.Annotations[AnnotationMIGSince] = ""
			if _, err := s.MIGParted.Apply(desired, inv.SKU, inv.Count); err != nil {
				set(LabelMIGConfigState, MIGStateFailed)
				d.Annotations[AnnotationMIGFailed] = desired
			} else {
				d.LayoutChanged, d.FromLayout, d.ToLayout = true, migLayout, desired
				migLayout = desired
				d.Annotations[AnnotationMIGApplied] = desired
				d.Annotations[AnnotationMIGFailed] = ""
				set(LabelMIGConfigState, MIGStateSuccess)
			}
		}
		if !reconfiguring {
			for _, l := range DeployLabels {
				if labels[l] == PausedForMIGChange {
					set(l, "true")
				}
			}
		}
	}

	// Device plugin and GFD, from the layout actually on the GPUs.
	res := s.nodeWithLayout(labels, inv, migLayout)
	for k, v := range res.Labels {
		if k == LabelMIGConfigState {
			continue // the MIG manager above owns it
		}
		if !reconfiguring { // GFD is paused while the MIG manager works
			set(k, v)
		}
	}
	d.Capacity = res.Resources
	d.Allocatable = copyMap(res.Resources)
	switch {
	case res.Err != nil:
		d.PluginDown = res.Err.Error()
	case reconfiguring:
		d.PluginDown = "paused while the MIG manager applies " + labels[LabelMIGConfig]
	case labels[LabelDeployDevicePlugin] == "false":
		d.PluginDown = "the device plugin is not deployed on this node (" + LabelDeployDevicePlugin + "=false)"
	case obs.Annotations[AnnotationDevicePlugin] == DevicePluginDown:
		d.PluginDown = "the device plugin pod on this node is down (" + AnnotationDevicePlugin + "=down)"
	}
	if d.PluginDown != "" {
		// The kubelet keeps a resource whose plugin went away in capacity
		// and drops its allocatable to 0.
		for k := range d.Allocatable {
			d.Allocatable[k] = 0
		}
	}
	d.Annotations[AnnotationPluginError] = d.PluginDown

	// Labels the stack owns but no longer publishes.
	for k := range obs.Labels {
		if _, keep := d.Labels[k]; keep || !strings.HasPrefix(k, LabelPrefix) || !stackOwnedLabel(k) {
			continue
		}
		if reconfiguring {
			continue
		}
		d.Remove = append(d.Remove, k)
	}
	return d
}

// sameMIGState reports whether layout b leaves the GPUs as layout a does
// ("" being GPUs never configured: MIG disabled).
func (s *Stack) sameMIGState(inv NodeInventory, a, b string) bool {
	state := func(layout string) ([]GPUState, bool) {
		if layout == "" {
			return make([]GPUState, inv.Count), true
		}
		g, err := s.MIGParted.Apply(layout, inv.SKU, inv.Count)
		return g, err == nil
	}
	ga, okA := state(a)
	gb, okB := state(b)
	if !okA || !okB || len(ga) != len(gb) {
		return false
	}
	for i := range ga {
		if ga[i].MIGEnabled != gb[i].MIGEnabled || fmt.Sprint(ga[i].Devices) != fmt.Sprint(gb[i].Devices) {
			return false
		}
	}
	return true
}

// stackOwnedLabel tells the labels GFD and the MIG manager write from the
// ones a platform team sets to pick configs.
func stackOwnedLabel(k string) bool {
	switch k {
	case LabelDevicePluginConfig, LabelMIGConfig:
		return false
	}
	for _, l := range DeployLabels {
		if k == l {
			return false
		}
	}
	return true
}

// nodeWithLayout is Node with the MIG layout fixed to what the MIG manager
// last applied (not what the label asks for).
func (s *Stack) nodeWithLayout(labels map[string]string, inv NodeInventory, layout string) NodeResult {
	l := copyMap(labels)
	if layout == "" {
		layout = "all-disabled"
	}
	if inv.SKU.MIGCapable() {
		l[LabelMIGConfig] = layout
	}
	return s.Node(l, inv)
}

func copyMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
