// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package autoscaler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/gpupool/gpupool/e2e/helmchart"
	"github.com/gpupool/gpupool/e2e/upstream"
	"github.com/gpupool/gpupool/e2e/wait"
)

// Karpenter inside a cluster with real nodes (kind) is the Deployment its
// KWOK provider's own Helm chart makes (autoscaler-facts §2.5), installed
// as upstream installs it: release "karpenter" in kube-system. Its
// permissions are then the chart's (§2.9), its node writes and evictions
// those of its service account, as in a team's cluster.
// In a cluster gpupool did not make, it is a release of the run's own
// (InClusterOptions.Release), so its objects never meet a team's.
const (
	ReleaseName      = "karpenter"
	ReleaseNamespace = "kube-system"
	// ChartSource names the chart in errors and in what a run applied.
	ChartSource = "the Karpenter KWOK provider's chart"

	instanceTypesConfigMap = "karpenter-instance-types"
	instanceTypesDir       = "/etc/karpenter"
	instanceTypesKey       = "instance-types.json"
	container              = "controller"
	// logInstanceTypesFailed is what the provider logs, and then runs on
	// with no instance type to sell, when it cannot read the file
	// (autoscaler-facts §3.4).
	logInstanceTypesFailed = "failed constructing instance types"
)

// Release is where the chart is installed: its release name, which names
// its objects, and its namespace.
type Release struct{ Name, Namespace string }

// DefaultRelease is upstream's: "karpenter" in kube-system.
var DefaultRelease = Release{ReleaseName, ReleaseNamespace}

func (r Release) String() string { return r.Namespace + "/" + r.Name }

func (r Release) orDefault() Release {
	if r == (Release{}) {
		return DefaultRelease
	}
	return r
}

// InClusterOptions make Karpenter's Deployment.
type InClusterOptions struct {
	// Release is where (zero: DefaultRelease).
	Release Release
	// Pulled: the image is pulled by the nodes if they lack it, and the
	// pod tolerates only the control plane's taint (a team's cluster);
	// else the image was loaded into the nodes and is never pulled, and
	// the pod tolerates every taint (kind's one node may keep its
	// control-plane taint).
	Pulled bool
	// Image is the KWOK provider's image, loaded into the nodes
	// (hack/build-kind-images.sh): "name:tag".
	Image string
	// InstanceTypes are what the cloud offers.
	InstanceTypes []InstanceType
	// FeatureGates are the candidate's (none: Karpenter's defaults).
	FeatureGates map[string]bool
	// LogInfo logs at level info (what it decided and why), else errors only.
	LogInfo bool
	// KubeVersion is the cluster's ("v1.37.2").
	KubeVersion string
}

// InClusterObjects renders the chart with the values gpupool sets, and
// adds the ConfigMap the instance types are read from. Values cannot say
// all of it; the rest is patched after rendering, each patch saying why.
func InClusterObjects(opt InClusterOptions) ([]*unstructured.Unstructured, error) {
	// The tag's colon is the last one after the last slash: a registry
	// may have a port.
	i := strings.LastIndex(opt.Image, ":")
	if i <= strings.LastIndex(opt.Image, "/") || i == 0 || i == len(opt.Image)-1 {
		return nil, fmt.Errorf("autoscaler: image %q is not name:tag", opt.Image)
	}
	repo, tag := opt.Image[:i], opt.Image[i+1:]
	if len(opt.InstanceTypes) == 0 {
		return nil, errors.New("autoscaler: no instance types for the cloud to offer")
	}
	fsys, err := upstream.KarpenterChart()
	if err != nil {
		return nil, err
	}
	ch, err := helmchart.Load(fsys, "Karpenter "+upstream.KarpenterVersion()+" KWOK chart")
	if err != nil {
		return nil, err
	}
	vals := inClusterValues(repo, tag, opt.LogInfo, opt.Pulled)
	if errs := ch.Unknown(vals, nil); len(errs) > 0 {
		return nil, fmt.Errorf("autoscaler: %w", errors.Join(errs...))
	}
	rel := opt.Release.orDefault()
	ms, err := ch.Render(rel.Name, rel.Namespace, opt.KubeVersion, vals, "values")
	if err != nil {
		return nil, fmt.Errorf("autoscaler: %w", err)
	}
	types, err := json.MarshalIndent(opt.InstanceTypes, "", "  ")
	if err != nil {
		return nil, err
	}
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": instanceTypesConfigMap, "namespace": rel.Namespace},
		"data":     map[string]any{instanceTypesKey: string(types)},
	}}
	// The ConfigMap first: the pod reads the file once, at its start
	// (autoscaler-facts §3.4).
	out := []*unstructured.Unstructured{cm}
	deployments := 0
	for _, m := range ms {
		if m.Object.GetKind() == "Deployment" {
			deployments++
			if err := patchDeployment(m.Object, opt.FeatureGates); err != nil {
				return nil, fmt.Errorf("autoscaler: %s: %w", m.Template, err)
			}
		}
		out = append(out, m.Object)
	}
	if deployments != 1 {
		return nil, fmt.Errorf("autoscaler: the chart rendered %d Deployments, not one", deployments)
	}
	return out, nil
}

func inClusterValues(repo, tag string, info, pulled bool) map[string]any {
	level := "error"
	if info {
		level = "info"
	}
	pull := corev1.PullNever
	tolerations := []any{map[string]any{"operator": "Exists"}}
	if pulled {
		pull = corev1.PullIfNotPresent
		tolerations = []any{map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}}
	}
	return map[string]any{
		// The tag must be set: the chart's default is not the module's
		// release (autoscaler-facts §2.7).
		"imagePullPolicy": string(pull),
		"logLevel":        level,
		"controller": map[string]any{
			"image": map[string]any{"repository": repo, "tag": tag},
			"env": []any{
				map[string]any{"name": "INSTANCE_TYPES_FILE_PATH", "value": instanceTypesDir + "/" + instanceTypesKey},
				// One Karpenter, the run's: no lease to win or wait for
				// after a restart (autoscaler-facts §2.3).
				map[string]any{"name": "DISABLE_LEADER_ELECTION", "value": "true"},
				// As beside the cluster (Start): fit ResourceClaims to the
				// instance types' devices (autoscaler-facts §10.1).
				map[string]any{"name": "IGNORE_DRA_REQUESTS", "value": "false"},
			},
			"extraVolumeMounts": []any{map[string]any{"name": "instance-types", "mountPath": instanceTypesDir, "readOnly": true}},
		},
		"extraVolumes": []any{map[string]any{"name": "instance-types", "configMap": map[string]any{"name": instanceTypesConfigMap}}},
		// Never on a node Karpenter made, nor on a fleet's KWOK node,
		// where kwok would only pretend to run it.
		"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
			"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{
				map[string]any{"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"},
				map[string]any{"key": "type", "operator": "NotIn", "values": []any{"kwok"}},
			}}},
		}}},
		// What Karpenter reads when it fits claims, which the chart does
		// not grant (autoscaler-facts §10.5.2).
		"additionalClusterRoleRules": []any{map[string]any{
			"apiGroups": []any{"resource.k8s.io"},
			"resources": []any{"resourceslices", "resourceclaims", "deviceclasses"},
			"verbs":     []any{"get", "list", "watch"},
		}},
		"tolerations":                   tolerations,
		"terminationGracePeriodSeconds": 10,
	}
}

// patchDeployment sets what the chart's values cannot:
//   - FEATURE_GATES: the chart's value does not parse with its own values
//     and cannot name NodeOverlay (autoscaler-facts §2.6). The candidate's
//     gates, or none for Karpenter's defaults, as the process beside the
//     cluster is given them.
//   - the readiness probe every second from the start, not every 10 s
//     from 5 s (§2.8): the run waits for it.
func patchDeployment(d *unstructured.Unstructured, gates map[string]bool) error {
	cs, _, err := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if err != nil || len(cs) == 0 {
		return fmt.Errorf("no containers (%v)", err)
	}
	c, ok := cs[0].(map[string]any)
	if !ok || c["name"] != container {
		return fmt.Errorf("the first container is not %q", container)
	}
	env, _ := c["env"].([]any)
	var kept []any
	found := false
	for _, e := range env {
		if m, ok := e.(map[string]any); ok && m["name"] == "FEATURE_GATES" {
			found = true
			if len(gates) > 0 {
				kept = append(kept, map[string]any{"name": "FEATURE_GATES", "value": GateString(gates)})
			}
			continue
		}
		kept = append(kept, e)
	}
	if !found {
		return errors.New("no FEATURE_GATES to replace")
	}
	c["env"] = kept
	probe, _ := c["readinessProbe"].(map[string]any)
	if probe == nil {
		return errors.New("no readinessProbe")
	}
	probe["initialDelaySeconds"] = int64(0)
	probe["periodSeconds"] = int64(1)
	return unstructured.SetNestedSlice(d.Object, cs, "spec", "template", "spec", "containers")
}

// GateString is feature gates as --feature-gates and FEATURE_GATES take
// them: "A=true,B=false", sorted.
func GateString(gates map[string]bool) string {
	var out []string
	for _, g := range slices.Sorted(maps.Keys(gates)) {
		out = append(out, fmt.Sprintf("%s=%t", g, gates[g]))
	}
	return strings.Join(out, ",")
}

// Deployed is Karpenter running as the chart's Deployment.
type Deployed struct {
	client     kubernetes.Interface
	rel        Release
	deployment string
	sel        string
	pod        string
	cancel     context.CancelFunc
	done       chan struct{}
}

// StopDeployment stops a Karpenter Deployment found in a cluster, as
// Deployed.Stop does one a run started: deleted in the foreground, its
// pods awaited gone (one a run killed with SIGKILL left, say).
func StopDeployment(ctx context.Context, client kubernetes.Interface, d *appsv1.Deployment) error {
	k := &Deployed{client: client, rel: Release{Namespace: d.Namespace}, deployment: d.Name, sel: labels.SelectorFromSet(d.Spec.Selector.MatchLabels).String()}
	return k.Stop(ctx)
}

// deploymentOf is the release's one Deployment, found by the instance
// label the chart gives its objects (its name depends on the release's).
func deploymentOf(ctx context.Context, client kubernetes.Interface, rel Release) (*appsv1.Deployment, error) {
	l, err := client.AppsV1().Deployments(rel.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + rel.Name})
	if err != nil {
		return nil, err
	}
	if len(l.Items) != 1 {
		return nil, fmt.Errorf("release %s has %d Deployments, not one", rel, len(l.Items))
	}
	return &l.Items[0], nil
}

// StartDeployed waits until the Deployment the objects made has a ready
// pod, fails at once if its container crashes or the provider could not
// read its instance types, and follows its log into log (nil: none). On
// failure the Deployment is deleted: nothing is left making nodes.
func StartDeployed(ctx context.Context, client kubernetes.Interface, rel Release, log io.Writer, timeout time.Duration) (_ *Deployed, err error) {
	ctx, cancelStart := context.WithTimeout(ctx, timeout)
	defer cancelStart()
	rel = rel.orDefault()
	d, err := deploymentOf(ctx, client, rel)
	if err != nil {
		return nil, fmt.Errorf("autoscaler: %w", err)
	}
	k := &Deployed{client: client, rel: rel, deployment: d.Name, sel: labels.SelectorFromSet(d.Spec.Selector.MatchLabels).String()}
	defer func() {
		if err != nil {
			sctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
			defer cancel()
			if serr := k.Stop(sctx); serr != nil {
				err = fmt.Errorf("%w (and removing it: %v)", err, serr)
			}
		}
	}()
	err = wait.For(ctx, fmt.Sprintf("Karpenter's Deployment %s/%s to have a ready pod", rel.Namespace, d.Name), timeout, func(ctx context.Context) (bool, string, error) {
		p, err := k.current(ctx)
		if err != nil || p == nil {
			return false, "no pod yet", err
		}
		k.pod = p.Name
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount > 0 || cs.State.Terminated != nil {
				return false, "", fmt.Errorf("autoscaler: Karpenter's pod %s ended (restarts %d): %s", p.Name, cs.RestartCount, k.logTail(ctx, p.Name, cs.RestartCount > 0))
			}
			if w := cs.State.Waiting; w != nil && w.Reason != "ContainerCreating" {
				return false, "", fmt.Errorf("autoscaler: Karpenter's pod %s is waiting: %s %s", p.Name, w.Reason, w.Message)
			}
			if cs.Ready {
				return true, "", nil
			}
		}
		why := ""
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
				why = " (" + c.Reason + ": " + c.Message + ")"
			}
		}
		return false, fmt.Sprintf("pod %s %s on %q, not ready%s", p.Name, p.Status.Phase, p.Spec.NodeName, why), nil
	})
	if err != nil {
		return nil, err
	}
	// Its instance types are read before it serves /readyz: a failure to
	// read them is in its log by now. Upstream's main runs on selling
	// nothing (§3.4); gpupool's exits, and the wait above says so.
	if l := k.logSince(ctx, k.pod); strings.Contains(l, logInstanceTypesFailed) {
		return nil, fmt.Errorf("autoscaler: Karpenter in pod %s has no instance types to sell: %s", k.pod, lineWith(l, logInstanceTypesFailed))
	}
	lctx, cancel := context.WithCancel(context.Background())
	k.cancel, k.done = cancel, make(chan struct{})
	go func() {
		defer close(k.done)
		if log != nil {
			k.follow(lctx, k.pod, log)
		}
	}()
	return k, nil
}

// stopTimeout bounds Stop: the pod's grace period is 10 s.
const stopTimeout = 30 * time.Second

// current is the Deployment's pod that is not being deleted, if any.
func (k *Deployed) current(ctx context.Context) (*corev1.Pod, error) {
	pods, err := k.client.CoreV1().Pods(k.rel.Namespace).List(ctx, metav1.ListOptions{LabelSelector: k.sel})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil {
			return &pods.Items[i], nil
		}
	}
	return nil, nil
}

// logTail is the end of the container's log (its previous run's, after a
// restart).
func (k *Deployed) logTail(ctx context.Context, pod string, previous bool) string {
	lines := int64(20)
	b, err := k.client.CoreV1().Pods(k.rel.Namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, Previous: previous, TailLines: &lines}).DoRaw(ctx)
	if err != nil {
		return "(its log: " + err.Error() + ")"
	}
	return strings.TrimSpace(string(b))
}

// logSince is the container's whole log so far, up to 4 MiB.
func (k *Deployed) logSince(ctx context.Context, pod string) string {
	limit := int64(4 << 20)
	b, _ := k.client.CoreV1().Pods(k.rel.Namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, LimitBytes: &limit}).DoRaw(ctx)
	return string(b)
}

func lineWith(log, s string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, s) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// follow copies the container's log until it ends (the pod goes) or ctx
// does.
func (k *Deployed) follow(ctx context.Context, pod string, w io.Writer) {
	rc, err := k.client.CoreV1().Pods(k.rel.Namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, Follow: true}).Stream(ctx)
	if err != nil {
		return
	}
	defer rc.Close()
	_, _ = io.Copy(w, rc)
}

// Stop deletes the Deployment and waits until its pod is gone: only then
// does nothing make nodes. What Karpenter made stays, as with the
// process, and so do the chart's other objects (RBAC, ConfigMap), which
// go with the cluster. A restart during the run is reported: a crashed
// Karpenter made nothing while it was down.
func (k *Deployed) Stop(ctx context.Context) error {
	var restarted error
	if p, err := k.current(ctx); err == nil && p != nil {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount > 0 && k.done != nil {
				restarted = fmt.Errorf("autoscaler: Karpenter's pod %s restarted %d times during the run: %s", p.Name, cs.RestartCount, k.logTail(ctx, p.Name, true))
			}
		}
	}
	fg := metav1.DeletePropagationForeground
	err := k.client.AppsV1().Deployments(k.rel.Namespace).Delete(ctx, k.deployment, metav1.DeleteOptions{PropagationPolicy: &fg})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("autoscaler: deleting Karpenter's Deployment: %w", err)
	}
	err = wait.For(ctx, "Karpenter's pod to be gone", stopTimeout, func(ctx context.Context) (bool, string, error) {
		pods, err := k.client.CoreV1().Pods(k.rel.Namespace).List(ctx, metav1.ListOptions{LabelSelector: k.sel})
		if err != nil {
			return false, "", err
		}
		if len(pods.Items) == 0 {
			return true, "", nil
		}
		return false, fmt.Sprintf("pod %s %s", pods.Items[0].Name, pods.Items[0].Status.Phase), nil
	})
	// The log stream ends with the pod; its last lines are Karpenter's
	// own shutdown.
	if k.cancel != nil {
		k.cancel()
		<-k.done
	}
	return errors.Join(restarted, err)
}
