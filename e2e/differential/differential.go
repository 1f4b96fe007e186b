// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package differential keeps the simulated kubelet honest. A corpus of pod
// shapes (manifests/differential, one per file) is run twice: on a node
// with a real kubelet, which admits pods through the device-plugin API,
// and on a KWOK node of the same pool, which the simulated kubelet
// (fakegpu) judges. The pod's phase, reason, message and the number of
// distinct devices it holds must agree.
//
// This package is the pure part: the corpus, the pod each side runs, what
// counts as the outcome and the comparison. suites/kubelet runs it.
package differential

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/workload"
	"github.com/gpupool/gpupool/fakegpu/nvidiaruntime"
)

// DefaultCorpus is where the shapes live among the built-in manifests
// (manifests/ of the repository).
const DefaultCorpus = "differential"

// Fields of a shape's Pod that the harness reads or fills.
const (
	// PoolResource is a placeholder limit: the resource the shape's pool is
	// designed for (nvidia.com/gpu.shared on a renamed time-sliced pool,
	// nvidia.com/gpu on an exclusive one), filled in for each side.
	PoolResource = "gpupool.dev/pool-resource"
	// PoolClass is a placeholder deviceClassName in a shape's
	// ResourceClaimTemplates: the DeviceClass that maps the DRA pool's
	// resource, filled in as PoolResource is.
	PoolClass = "gpupool.dev/pool-class"
	// CUDAImage is a placeholder image: the probe under a CUDA image's
	// name and ENV (NVIDIA_VISIBLE_DEVICES=all), filled in for each side.
	CUDAImage = "gpupool.dev/cuda-probe"
	// AnnotationPool names the sharing mode of the pool the shape runs on
	// (exclusive, time-slicing, mps, mig): the fleet's first pool of it;
	// or ModeDRA: the fleet's first pool served by DRA.
	AnnotationPool = "differential.gpupool.dev/pool"
	// ModeDRA runs a shape on a DRA pool: the devices each side holds are
	// also the CDI devices its DRA plugin prepared
	// (fakegpu.AnnotationCDIDevices), which the real side's plugin and the
	// simulated kubelet both record.
	ModeDRA = "dra"
	// AnnotationPlacement says how the harness pins the shape's pods to
	// their nodes: PlacementSelector (the default), through the scheduler
	// with a kubernetes.io/hostname selector; or PlacementNodeName, bound
	// in spec.nodeName as a tenant who skips the scheduler would, so only
	// the kubelet's admission stands between the pod and the node.
	AnnotationPlacement = "differential.gpupool.dev/placement"
	PlacementSelector   = "nodeSelector"
	PlacementNodeName   = "nodeName"
	// LabelShape marks both pods of a shape, so they are deleted together.
	LabelShape = "gpupool.dev/differential-shape"
	// DefaultRuntimeClass is what a shape that names none runs under: the
	// contract's.
	DefaultRuntimeClass = workload.RuntimeClass
)

// Probe modes of the fake device plugin's image (cmd/fake-device-plugin):
// each container prints the variable the device plugin set; an init
// container must exit for the pod to go on, the others keep running.
const (
	ProbeMode     = "probe"
	ProbeOnceMode = "probe-once"
)

// Sides of a shape.
const (
	SideReal = "real"
	SideSim  = "sim"
)

// Shape is one pod shape of the corpus.
type Shape struct {
	// Name is the file's base name without .yaml (also the pods' prefix).
	Name string
	File string
	// Probes is what the shape probes: the comment the file opens with.
	Probes string
	// Mode is the sharing mode of the pool it runs on.
	Mode string
	// Bound: the pods are bound in spec.nodeName (PlacementNodeName).
	Bound bool
	// RuntimeClasses are created before the shape runs and removed after.
	RuntimeClasses []*nodev1.RuntimeClass
	// ClaimTemplates (DRA shapes) are created in the pods' namespace
	// before the shape runs and removed after; both sides' pods claim
	// from them, each getting claims of its own.
	ClaimTemplates []*resourcev1.ResourceClaimTemplate
	// ConfigMaps are created in the pods' namespace before the shape runs
	// and removed after (what a container's envFrom or valueFrom reads).
	ConfigMaps []*corev1.ConfigMap
	// Pod is the template: the shape's containers and limits, with
	// PoolResource where the pool's resource goes.
	Pod *corev1.Pod
}

// modes a shape's pool may have.
var modes = []string{fleet.ModeExclusive, fleet.ModeTimeSlicing, fleet.ModeMPS, fleet.ModeMIG, ModeDRA}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Load reads every *.yaml file of dir as a shape: documents of kind
// RuntimeClass, ResourceClaimTemplate or ConfigMap, then one Pod. Shapes come back in file order, grouped by
// pool mode (in the order the modes first appear, DRA last), so a run
// moves the real node between pools as rarely as it can.
func Load(dir string) ([]Shape, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no pod shapes (*.yaml) in %s", dir)
	}
	sort.Strings(files)
	var out []Shape
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		s, err := Parse(filepath.Base(f), data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		s.File = f
		out = append(out, s)
	}
	first := map[string]int{}
	for i, s := range out {
		if _, ok := first[s.Mode]; !ok {
			first[s.Mode] = i
		}
	}
	// DRA shapes last: their pool takes the device plugin off the real
	// node, and a device-plugin pool joined after it could see the
	// kubelet's stale allocatable before the plugin serves again.
	if _, ok := first[ModeDRA]; ok {
		first[ModeDRA] = len(out)
	}
	sort.SliceStable(out, func(i, j int) bool { return first[out[i].Mode] < first[out[j].Mode] })
	return out, nil
}

// Parse reads one shape file (name is its base name).
func Parse(name string, data []byte) (Shape, error) {
	s := Shape{Name: strings.TrimSuffix(name, ".yaml"), Probes: leadingComment(data)}
	if !dnsLabel.MatchString(s.Name) || len(s.Name) > 50 {
		return s, fmt.Errorf("shape name %q (the file name) must be a DNS label of at most 50 characters: its pods are named after it", s.Name)
	}
	if s.Probes == "" {
		return s, errors.New("the file must open with a comment saying what the shape probes")
	}
	docs, err := splitYAML(data)
	if err != nil {
		return s, err
	}
	for i, d := range docs {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(d, &meta); err != nil {
			return s, fmt.Errorf("document %d: %w", i+1, err)
		}
		switch {
		case meta.Kind == "RuntimeClass" && meta.APIVersion == "node.k8s.io/v1":
			rc := &nodev1.RuntimeClass{}
			if err := yaml.UnmarshalStrict(d, rc); err != nil {
				return s, fmt.Errorf("document %d: %w", i+1, err)
			}
			s.RuntimeClasses = append(s.RuntimeClasses, rc)
		case meta.Kind == "ResourceClaimTemplate" && meta.APIVersion == "resource.k8s.io/v1":
			tmpl := &resourcev1.ResourceClaimTemplate{}
			if err := decodeNamespaced(d, i, meta.Kind, tmpl); err != nil {
				return s, err
			}
			if slices.ContainsFunc(s.ClaimTemplates, func(o *resourcev1.ResourceClaimTemplate) bool { return o.Name == tmpl.Name }) {
				return s, fmt.Errorf("document %d: ResourceClaimTemplate %s: metadata.name is already the shape's", i+1, tmpl.Name)
			}
			s.ClaimTemplates = append(s.ClaimTemplates, tmpl)
		case meta.Kind == "ConfigMap" && meta.APIVersion == "v1":
			cm := &corev1.ConfigMap{}
			if err := decodeNamespaced(d, i, meta.Kind, cm); err != nil {
				return s, err
			}
			s.ConfigMaps = append(s.ConfigMaps, cm)
		case meta.Kind == "Pod" && meta.APIVersion == "v1":
			if s.Pod != nil {
				return s, fmt.Errorf("document %d: a second Pod; a shape is one pod", i+1)
			}
			s.Pod = &corev1.Pod{}
			if err := yaml.UnmarshalStrict(d, s.Pod); err != nil {
				return s, fmt.Errorf("document %d: %w", i+1, err)
			}
		default:
			return s, fmt.Errorf("document %d: %s %s: a shape holds RuntimeClasses, ResourceClaimTemplates, ConfigMaps and one Pod", i+1, meta.APIVersion, meta.Kind)
		}
	}
	if s.Pod == nil {
		return s, errors.New("no Pod")
	}
	if s.Pod.Name != "" && s.Pod.Name != s.Name {
		return s, fmt.Errorf("metadata.name %q: a shape is named by its file (%s); leave it out or say the same", s.Pod.Name, s.Name)
	}
	s.Mode = s.Pod.Annotations[AnnotationPool]
	if !slices.Contains(modes, s.Mode) {
		return s, fmt.Errorf("metadata.annotations[%s] = %q: want the sharing mode of the pool the shape runs on (%s)", AnnotationPool, s.Mode, strings.Join(modes, ", "))
	}
	if len(s.Pod.Spec.Containers) == 0 {
		return s, errors.New("the Pod has no containers")
	}
	if len(s.ClaimTemplates) > 0 && s.Mode != ModeDRA {
		return s, fmt.Errorf("a ResourceClaimTemplate needs a DRA pool: metadata.annotations[%s] must be %s", AnnotationPool, ModeDRA)
	}
	for i, c := range s.Pod.Spec.ResourceClaims {
		if c.ResourceClaimTemplateName == nil || !slices.ContainsFunc(s.ClaimTemplates, func(t *resourcev1.ResourceClaimTemplate) bool { return t.Name == *c.ResourceClaimTemplateName }) {
			return s, fmt.Errorf("spec.resourceClaims[%d] (%s): claim from one of the shape's ResourceClaimTemplates (resourceClaimTemplateName), so both sides get claims of their own", i, c.Name)
		}
	}
	switch placement := s.Pod.Annotations[AnnotationPlacement]; placement {
	case "", PlacementSelector:
	case PlacementNodeName:
		s.Bound = true
	default:
		return s, fmt.Errorf("metadata.annotations[%s] = %q: want %s or %s", AnnotationPlacement, placement, PlacementSelector, PlacementNodeName)
	}
	if s.Pod.Spec.NodeName != "" || s.Pod.Spec.Affinity != nil || len(s.Pod.Spec.Tolerations) > 0 {
		return s, errors.New("placement (nodeName, affinity, tolerations) is the harness's: it pins each side to its node")
	}
	if len(s.Pod.Spec.NodeSelector) > 0 && !s.Bound {
		return s, fmt.Errorf("spec.nodeSelector: only a shape bound in spec.nodeName (metadata.annotations[%s]: %s) may add to the harness's selector, to be judged by the kubelet", AnnotationPlacement, PlacementNodeName)
	}
	return s, nil
}

// decodeNamespaced strictly decodes document i as one of the shape's
// namespaced objects: named, its namespace left to the harness.
func decodeNamespaced(d []byte, i int, kind string, obj metav1.Object) error {
	if err := yaml.UnmarshalStrict(d, obj); err != nil {
		return fmt.Errorf("document %d: %w", i+1, err)
	}
	if obj.GetName() == "" || obj.GetNamespace() != "" {
		return fmt.Errorf("document %d: %s: metadata.name is required and metadata.namespace is the harness's", i+1, kind)
	}
	return nil
}

// leadingComment is the comment block a file opens with, as one line.
func leadingComment(data []byte) string {
	var words []string
	for _, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "#") {
			break
		}
		if w := strings.TrimSpace(strings.TrimPrefix(t, "#")); w != "" {
			words = append(words, w)
		}
	}
	return strings.Join(words, " ")
}

func splitYAML(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
}

func stripComments(d []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(d, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(append(out, line...), '\n')
		}
	}
	return out
}

func allContainers(p *corev1.Pod) []corev1.Container {
	return append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...)
}

// Target is where one side of a shape runs.
type Target struct {
	Side  string // SideReal or SideSim
	Check string // the check id, labelled on the pod for cleanup
	// Namespace is used when the shape names none.
	Namespace string
	Pool      fleet.Pool
	Domain    *fleet.TrustDomain
	// Node is the node the pod is pinned to (kubernetes.io/hostname).
	Node string
	// Resource replaces PoolResource.
	Resource string
	// Class replaces PoolClass (DRA pools: the DeviceClass mapping
	// Resource).
	Class string
	// Image runs every container (the fake device plugin's, in probe mode)
	// but those that name CUDAImage, which run CUDA.
	Image, CUDA string
	// Variables are what each container prints: the first the device IDs
	// it was given (the fake plugin's FAKEGPU_DEVICE_IDS), the others
	// for the log.
	Variables []string
}

// RunsCUDA reports whether a container of the shape names CUDAImage.
func (s Shape) RunsCUDA() bool {
	return slices.ContainsFunc(allContainers(s.Pod), func(c corev1.Container) bool { return c.Image == CUDAImage })
}

// ConfigMapsFor is the shape's ConfigMaps in the target's namespace,
// labelled with its check.
func (s Shape) ConfigMapsFor(t Target) []*corev1.ConfigMap {
	var out []*corev1.ConfigMap
	for _, cm := range s.ConfigMaps {
		cm = cm.DeepCopy()
		cm.APIVersion, cm.Kind = "", ""
		s.place(&cm.ObjectMeta, t)
		out = append(out, cm)
	}
	return out
}

// place puts an object of the shape in the pods' namespace, labelled with
// the check and the shape.
func (s Shape) place(m *metav1.ObjectMeta, t Target) {
	m.Namespace = t.Namespace
	if s.Pod.Namespace != "" {
		m.Namespace = s.Pod.Namespace
	}
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[workload.LabelCheck] = t.Check
	m.Labels[LabelShape] = s.Name
}

// ClaimTemplatesFor is the shape's ResourceClaimTemplates in the target's
// namespace, labelled with its check, the pool's DeviceClass where they
// say PoolClass.
func (s Shape) ClaimTemplatesFor(t Target) []*resourcev1.ResourceClaimTemplate {
	var out []*resourcev1.ResourceClaimTemplate
	for _, tmpl := range s.ClaimTemplates {
		tmpl = tmpl.DeepCopy()
		tmpl.APIVersion, tmpl.Kind = "", ""
		s.place(&tmpl.ObjectMeta, t)
		for i := range tmpl.Spec.Spec.Devices.Requests {
			req := &tmpl.Spec.Spec.Devices.Requests[i]
			if req.Exactly != nil && req.Exactly.DeviceClassName == PoolClass {
				req.Exactly.DeviceClassName = t.Class
			}
			for j := range req.FirstAvailable {
				if req.FirstAvailable[j].DeviceClassName == PoolClass {
					req.FirstAvailable[j].DeviceClassName = t.Class
				}
			}
		}
		out = append(out, tmpl)
	}
	return out
}

// PodFor is the shape's pod for one side: named <shape>-<side>, in the
// shape's namespace or the target's, aimed at the pool as its tenants are
// told to (selector, tolerations, trust domain) and pinned to the node,
// under RuntimeClass nvidia unless the shape names another, with the
// check pods' identity and Pod Security settings where the shape sets
// none, and each container running the probe: "probe-once" for an init
// container that must finish, "probe" for the others.
func (s Shape) PodFor(t Target) *corev1.Pod {
	pod := s.Pod.DeepCopy()
	base := workload.New(t.Check, t.Namespace, s.Name+"-"+t.Side).Pod
	pod.APIVersion, pod.Kind = "", ""
	pod.Name = base.Name
	if pod.Namespace == "" {
		pod.Namespace = t.Namespace
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	for k, v := range base.Labels {
		pod.Labels[k] = v
	}
	pod.Labels[LabelShape] = s.Name
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = base.Spec.ServiceAccountName
	}
	if pod.Spec.TerminationGracePeriodSeconds == nil {
		pod.Spec.TerminationGracePeriodSeconds = base.Spec.TerminationGracePeriodSeconds
	}
	if pod.Spec.SecurityContext == nil {
		pod.Spec.SecurityContext = base.Spec.SecurityContext.DeepCopy()
	}
	if pod.Spec.RuntimeClassName == nil {
		rc := DefaultRuntimeClass
		pod.Spec.RuntimeClassName = &rc
	}
	fill := func(c *corev1.Container, once bool) {
		if c.SecurityContext == nil {
			c.SecurityContext = base.Spec.Containers[0].SecurityContext.DeepCopy()
		}
		switch c.Image {
		case "":
			c.Image = t.Image
		case CUDAImage:
			c.Image = t.CUDA
		}
		if len(c.Command) == 0 && len(c.Args) == 0 {
			mode := ProbeMode
			if once {
				mode = ProbeOnceMode
			}
			c.Args = append([]string{mode}, t.Variables...)
		}
		for name, q := range c.Resources.Limits {
			if string(name) == PoolResource {
				delete(c.Resources.Limits, name)
				c.Resources.Limits[corev1.ResourceName(t.Resource)] = q
			}
		}
		for name, q := range c.Resources.Requests {
			if string(name) == PoolResource {
				delete(c.Resources.Requests, name)
				c.Resources.Requests[corev1.ResourceName(t.Resource)] = q
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		fill(c, !restartable(c))
	}
	for i := range pod.Spec.Containers {
		fill(&pod.Spec.Containers[i], false)
	}
	own := pod.Spec.NodeSelector
	pod.Spec.NodeSelector = nil
	placed := workload.Pod{Pod: pod}.ForPool(t.Pool, t.Domain)
	if !s.Bound {
		return placed.NodeSelector(map[string]string{corev1.LabelHostname: t.Node}).Pod
	}
	placed.Pod.Spec.NodeName = t.Node
	return placed.NodeSelector(own).Pod
}

func restartable(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// Outcome is what a kubelet did with a shape's pod.
type Outcome struct {
	Phase   corev1.PodPhase
	Reason  string
	Message string
	// Devices is the number of distinct device IDs the pod's containers
	// were given.
	Devices int
	// Sight is what each container of a running pod sees, in spec order
	// (nil: not observed): on the real node what the fake NVIDIA runtime
	// (fakegpu/nvidiaruntime) decided from the spec the real kubelet and
	// containerd built, on the KWOK node what the simulated kubelet
	// recorded (fakegpu.AnnotationGPUSight). Not observed on DRA pools:
	// the kind node's containerd (1.6.20, access §1.9) applies no CDI
	// spec (CDI needs containerd 1.7+, stack-facts §6), so a claim's
	// devices never reach the spec there.
	Sight []ContainerSight
	// Containers says what each container is doing. It is reported, never
	// compared.
	Containers string
}

// ContainerSight is how many GPUs one container sees, and how many of
// those are beyond its allocation.
type ContainerSight struct {
	Name              string
	Sees, Unallocated int
}

func (c ContainerSight) String() string {
	return fmt.Sprintf("%s sees %d (%d unallocated)", c.Name, c.Sees, c.Unallocated)
}

// SightOf counts one container's sight: the GPUs it sees, and those not
// among allocated (replica IDs count as their GPU).
func SightOf(name string, sees, allocated []string) ContainerSight {
	c := ContainerSight{Name: name, Sees: len(sees)}
	mine := map[string]bool{}
	for _, a := range allocated {
		gpu, _, _ := strings.Cut(a, "::")
		mine[gpu] = true
	}
	for _, g := range sees {
		if !mine[g] {
			c.Unallocated++
		}
	}
	return c
}

func (o Outcome) String() string {
	reason, msg := o.Reason, o.Message
	if reason == "" {
		reason = "none"
	}
	if msg == "" {
		msg = "none"
	} else {
		msg = fmt.Sprintf("%q", msg)
	}
	s := fmt.Sprintf("phase %s, reason %s, message %s, %d distinct devices", o.Phase, reason, msg, o.Devices)
	if o.Sight != nil {
		parts := make([]string, len(o.Sight))
		for i, c := range o.Sight {
			parts[i] = c.String()
		}
		s += "; " + strings.Join(parts, ", ")
	}
	if o.Containers != "" {
		s += " (" + o.Containers + ")"
	}
	return s
}

// Observe is the outcome of pod, given the device IDs its containers were
// given and what each sees (nil: not observed).
func Observe(p *corev1.Pod, devices []string, sight []ContainerSight) Outcome {
	o := Outcome{Phase: p.Status.Phase, Reason: p.Status.Reason, Message: p.Status.Message, Devices: Distinct(devices), Sight: sight}
	var parts []string
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, c := range list {
			switch {
			case c.State.Waiting != nil:
				parts = append(parts, fmt.Sprintf("%s waiting: %s", c.Name, c.State.Waiting.Reason))
			case c.State.Terminated != nil:
				parts = append(parts, fmt.Sprintf("%s terminated: %s", c.Name, c.State.Terminated.Reason))
			case c.State.Running != nil:
				parts = append(parts, c.Name+" running")
			}
		}
	}
	o.Containers = strings.Join(parts, "; ")
	return o
}

// Distinct counts the distinct non-empty IDs.
func Distinct(ids []string) int {
	seen := map[string]bool{}
	for _, id := range ids {
		if id = strings.TrimSpace(id); id != "" {
			seen[id] = true
		}
	}
	return len(seen)
}

// ParseDevices reads what a probe container logged for variable: the
// device IDs, none when the variable was unset or empty. ok is false while
// the line is not in the log yet.
func ParseDevices(log, variable string) (ids []string, ok bool) {
	prefix := variable + "="
	for _, line := range strings.Split(log, "\n") {
		v, found := strings.CutPrefix(strings.TrimSpace(line), prefix)
		if !found {
			continue
		}
		if v == "" || v == "<unset>" {
			return nil, true
		}
		return strings.Split(v, ","), true
	}
	return nil, false
}

// Logged is the value a probe container logged for variable, as printed
// ("<unset>", or "" before the line is in).
func Logged(log, variable string) string {
	for _, line := range strings.Split(log, "\n") {
		if v, found := strings.CutPrefix(strings.TrimSpace(line), variable+"="); found {
			return v
		}
	}
	return ""
}

// ParseSight reads the GPUs a probe container logged as seen
// (nvidiaruntime.SeesLine): runtime is false when no NVIDIA runtime ran
// it; ok is false while the line is not in the log yet.
func ParseSight(log string) (gpus []string, runtime, ok bool) {
	ids, ok := ParseDevices(log, nvidiaruntime.SeesLine)
	if len(ids) == 1 && ids[0] == nvidiaruntime.NoRuntime {
		return nil, false, ok
	}
	return ids, true, ok
}

// nodeSizes are the parts of a kubelet's OutOf<resource> message that
// describe the node rather than the pod (kubelet-facts §1.4): the real
// node and the KWOK node differ in size and in what else runs there.
var nodeSizes = regexp.MustCompile(`(Node didn't have enough resource: [^,]+, requested: [0-9]+), used: [0-9]+, capacity: [0-9]+`)

// comparable is a status message with the node's own sizes masked.
func comparable(msg string) string {
	return nodeSizes.ReplaceAllString(msg, "$1, used: *, capacity: *")
}

// Compare judges the two outcomes of one shape: nil when phase, reason,
// message (but the node's own sizes in an OutOf<resource> message),
// device count and what each container sees agree, else an error naming
// the shape, what differs and both outcomes.
func Compare(s Shape, real, sim Outcome) error {
	var diff []string
	if real.Phase != sim.Phase {
		diff = append(diff, "phase")
	}
	if real.Reason != sim.Reason {
		diff = append(diff, "reason")
	}
	if comparable(real.Message) != comparable(sim.Message) {
		diff = append(diff, "message")
	}
	if real.Devices != sim.Devices {
		diff = append(diff, "device count")
	}
	if (real.Sight != nil || sim.Sight != nil) && !slices.Equal(real.Sight, sim.Sight) {
		diff = append(diff, "what the containers see")
	}
	if len(diff) == 0 {
		return nil
	}
	where := s.Name
	if s.File != "" {
		where += " (" + s.File + ")"
	}
	return fmt.Errorf("pod shape %s: the simulated kubelet disagrees with a real kubelet on %s\n  real kubelet:      %s\n  simulated kubelet: %s",
		where, strings.Join(diff, ", "), real, sim)
}
