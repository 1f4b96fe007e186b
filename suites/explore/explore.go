// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package explore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/gpupool/gpupool/e2e/autoscaler"
	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/expect"
	"github.com/gpupool/gpupool/e2e/explore"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/harness"
	"github.com/gpupool/gpupool/e2e/suite"
	"github.com/gpupool/gpupool/e2e/wait"
	"github.com/gpupool/gpupool/e2e/workload"
	"github.com/gpupool/gpupool/fakegpu"
)

// Objects of the suite's own, named so a reproduction can name them too.
const (
	unlabelledNamespace = "gpupool-explore"
	otherRuntimeClass   = "gpupool-explore-runc"
	missingRuntimeClass = "gpupool-explore-missing"
	// tagImage is workload.Image without its digest.
	tagImage      = "registry.k8s.io/pause:3.10"
	residentLabel = "gpupool.dev/explore-resident"
	// templateLabel marks the ResourceClaimTemplates shapes claim from,
	// and the ConfigMaps and Secrets (envSource) they take their env from.
	templateLabel = "gpupool.dev/explore-template"
	envSource     = "gpupool-explore-devices"
)

func TestExplore(t *testing.T) {
	var fs []features.Feature
	for _, c := range []checks.Check{checks.ExploreRuntimeClass, checks.ExploreSKUPool, checks.ExploreNoCrossTrust, checks.ExploreImagesPinned, checks.ExploreOwnServiceAccount, checks.ExploreNoGPUWithoutAllocation} {
		rule, ok := explore.RuleFor(c.ID)
		if !ok {
			t.Fatalf("no exploration rule for check %s", c.ID)
		}
		fs = append(fs, suite.Feature(c).
			Assess("no pod a tenant can write breaks the rule: the corpus, then shapes drawn within the budget", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
				exploreRule(ctx, t, c, rule)
				return ctx
			}).Feature())
	}
	// Most of a shape's time is waiting on the cluster: the rules go side
	// by side. Admission rules never place their pods (a scheduling gate
	// holds the ones a controller creates), so they take no capacity from
	// the placement rule.
	testenv.TestInParallel(t, fs...)
}

func exploreRule(ctx context.Context, t *testing.T, c checks.Check, rule explore.Rule) {
	r := suite.From(ctx)
	set, err := suite.Exploration()
	if err != nil {
		t.Fatal(err)
	}
	space, cl, err := buildSpace(ctx, r, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rule.Place && !rule.Sight {
		if splitPools(r) == 0 {
			t.Skipf("fleet %s has no shared-GPU pool split by trust domain", r.Fleet.Metadata.Name)
		}
		// A trust domain no namespace belongs to has no tenant to try: a
		// skip would hide the check.
		for _, p := range space.Pools {
			if len(p.Domains) < len(p.Pool.TrustDomains) {
				t.Fatalf("pool %s is split into %d trust domains, but namespaces belong to only %d of them (a namespace belongs to a domain when it carries every label the domain puts on its nodes): their tenants cannot be tried",
					p.Pool.Name, len(p.Pool.TrustDomains), len(p.Domains))
			}
		}
	}
	corpus, err := explore.LoadCorpus(set.Corpus, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := explore.Run(ctx, rule, cl, space, corpus, set.Seed, set.BudgetFor(c.ID), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s (replay with --explore-seed %d)", rep, set.Seed)
	ce := rep.Found
	if ce == nil {
		return
	}
	needs := explore.Needs(ce.Shape, ce.Violation.Neighbours, map[string]bool{unlabelledNamespace: true},
		map[string]*nodev1.RuntimeClass{otherRuntimeClass: otherRuntimeClassObject()}, workload.ServiceAccount, space.Claims)
	path, data, err := ce.Write(set.ReportDir, c.ID, set.Seed, needs)
	if err != nil {
		t.Fatalf("%s; writing the reproduction: %v", ce.Violation.Message, err)
	}
	origin := fmt.Sprintf("found with --explore-seed %d, shrunk over %d failing shapes", set.Seed, ce.Tries)
	if ce.Corpus != "" {
		origin = "regression corpus case " + ce.Corpus
	}
	t.Errorf("expected no pod a tenant can write to break the rule, but %s\nminimal pod (%s): %s\nreproduction (kubectl apply -f on `gpupool up`): %s\n%s",
		ce.Violation.Message, origin, strings.Join(ce.Shape.Choices, "; "), path, body(data))
}

// body is the reproduction without its comment header, for the message,
// each line behind a "| " gutter: reports trim the indentation go test
// puts before logged lines, and the YAML's own must survive it.
func body(data []byte) string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if !strings.HasPrefix(l, "#") {
			out = append(out, "| "+l)
		}
	}
	return strings.Join(out, "\n")
}

// buildSpace reads what a tenant can name on this cluster.
func buildSpace(ctx context.Context, r *harness.Run, check string) (*explore.Space, *explore.Cluster, error) {
	space := &explore.Space{
		Unlabelled: unlabelledNamespace, OtherRuntimeClass: otherRuntimeClass, MissingRuntimeClass: missingRuntimeClass,
		Image: workload.Image, TagImage: tagImage, ServiceAccount: workload.ServiceAccount,
		CUDAImage: workload.CUDAImage, EnvSource: envSource,
		Labels: map[string]string{workload.LabelCheck: check},
	}
	// Most shapes break Pod Security somewhere; the apiserver's warnings
	// about them are noise here (a denial is what counts).
	rc := rest.CopyConfig(r.Cluster.REST)
	rc.WarningHandler = rest.NoWarnings{}
	rc.QPS, rc.Burst = 1000, 2000 // a shape is a few requests, and rules run side by side
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	cl := &explore.Cluster{Client: client, DomainOf: map[string]string{}}
	nodes, err := r.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fleet.LabelPool})
	if err != nil {
		return nil, nil, err
	}
	// A node the autoscaler makes for a shape's pod while the rule runs
	// is read when the pod lands on it.
	cl.Describe = func(n *corev1.Node) (explore.Node, bool) { return describeNode(r, n) }
	advertised := map[string]bool{}
	byPool := map[string][]string{}
	byDomain := map[string][]string{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		// A node of no pool of the fleet is kept as GPU-less, no pool's.
		on, _ := describeNode(r, n)
		cl.Nodes = append(cl.Nodes, on)
		pool := on.Pool
		for name, q := range n.Status.Allocatable {
			// A resource at 0 is one a plugin no longer serves, kept by
			// the kubelet (kubelet-facts §3): no pod can get it.
			if strings.HasPrefix(string(name), explore.ResourcePrefix) && !q.IsZero() {
				advertised[string(name)] = true
			}
		}
		byPool[pool] = append(byPool[pool], n.Name)
		if space.NodeLabels == nil {
			space.NodeLabels = map[string]map[string]string{}
		}
		if _, ok := space.NodeLabels[pool]; !ok {
			space.NodeLabels[pool] = n.Labels
		}
		byDomain[pool+"/"+n.Labels[fleet.LabelTrustDomain]] = append(byDomain[pool+"/"+n.Labels[fleet.LabelTrustDomain]], n.Name)
	}
	for name := range advertised {
		space.Advertised = append(space.Advertised, name)
	}
	sort.Strings(space.Advertised)
	// The autoscaled pools too, where they grow: a tenant aims at them as
	// at any pool, and the suite's residents have had the autoscaler make
	// a node of each.
	pools := slices.Clone(r.Fleet.Spec.Pools)
	if r.Autoscaler {
		for _, ap := range r.Fleet.Spec.AutoscaledPools {
			pools = append(pools, ap.Pool)
		}
	}
	for _, p := range pools {
		if !p.GPU() {
			continue
		}
		res, err := r.IntendedResource(p)
		if err != nil {
			return nil, nil, err
		}
		ps := explore.PoolSpace{Pool: p, Resource: res, Nodes: byPool[p.Name]}
		trustOf, err := r.TrustOf(ctx, p)
		if err != nil {
			return nil, nil, err
		}
		first := map[string]string{} // domain -> its first namespace by name, where shapes go
		for ns, d := range trustOf {
			cl.DomainOf[ns] = d
			if f, ok := first[d]; !ok || ns < f {
				first[d] = ns
			}
		}
		for _, d := range p.TrustDomains {
			if ns, ok := first[d.Name]; ok {
				ps.Domains = append(ps.Domains, explore.DomainSpace{Domain: d, Namespace: ns, Nodes: byDomain[p.Name+"/"+d.Name]})
			}
		}
		space.Pools = append(space.Pools, ps)
	}
	if space.Claims, err = claimTemplates(ctx, r, space.Namespaces(), check); err != nil {
		return nil, nil, err
	}
	if err := envSources(ctx, r, space.Namespaces()); err != nil {
		return nil, nil, err
	}
	return space, cl, nil
}

// describeNode is the oracles' view of a node of the fleet, fixed or
// made by the autoscaler (false: a node of no pool of the fleet).
func describeNode(r *harness.Run, n *corev1.Node) (explore.Node, bool) {
	p, ok := r.Fleet.Design(harness.PoolOf(n))
	mode := p.Mode()
	return explore.Node{Node: n, Pool: p.Name, GPU: p.GPU(),
		SharedGPU: mode == fleet.ModeTimeSlicing || mode == fleet.ModeMPS || p.SharesDevices(), Domain: n.Labels[fleet.LabelTrustDomain]}, ok
}

// envSources creates, in every namespace shapes go to, the ConfigMap and
// the Secret a shape's envFrom names: NVIDIA_VISIBLE_DEVICES=all.
func envSources(ctx context.Context, r *harness.Run, namespaces []string) error {
	data := map[string]string{fakegpu.EnvVisibleDevices: "all"}
	for _, ns := range namespaces {
		meta := metav1.ObjectMeta{Name: envSource, Namespace: ns, Labels: map[string]string{templateLabel: "true"}}
		harness.Own(&meta)
		if _, err := r.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: data}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ConfigMap %s/%s: %w", ns, envSource, err)
		}
		if _, err := r.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: meta, StringData: data}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Secret %s/%s: %w", ns, envSource, err)
		}
	}
	return nil
}

// claimTemplates are the ways a tenant here can claim a GPU through DRA:
// one per DeviceClass of NVIDIA's driver (the one it publishes, or one a
// team wrote selecting its devices), with a ResourceClaimTemplate for one
// device of it in every namespace shapes are drawn into. The templates
// are the suite's, removed by removeTenantObjects; creating one that
// exists is no error, as the rules build their spaces side by side.
func claimTemplates(ctx context.Context, r *harness.Run, namespaces []string, check string) ([]explore.ClaimSpace, error) {
	classes, err := r.Client.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil // a cluster that serves no DRA
		}
		return nil, fmt.Errorf("listing DeviceClasses: %w", err)
	}
	var out []explore.ClaimSpace
	for _, c := range classes.Items {
		if !gpuClass(c) {
			continue
		}
		cs := explore.ClaimSpace{Class: c.Name, Template: "gpupool-explore-" + c.Name}
		for _, ns := range namespaces {
			t := workload.ClaimTemplate(check, ns, cs.Template, c.Name, 1)
			// Shared by the rules running side by side: not one check's,
			// whose teardown would take it from the others.
			delete(t.Labels, workload.LabelCheck)
			t.Labels[templateLabel] = "true"
			harness.Own(&t.ObjectMeta)
			if _, err := r.Client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, t, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("creating ResourceClaimTemplate %s/%s: %w", ns, cs.Template, err)
			}
		}
		out = append(out, cs)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Class < out[j].Class })
	return out, nil
}

// gpuClass tells a DeviceClass of NVIDIA's GPU driver: it maps an
// nvidia.com/ resource, or one of its selectors names the driver.
func gpuClass(c resourcev1.DeviceClass) bool {
	if r := c.Spec.ExtendedResourceName; r != nil && strings.HasPrefix(*r, explore.ResourcePrefix) {
		return true
	}
	for _, sel := range c.Spec.Selectors {
		if sel.CEL != nil && strings.Contains(sel.CEL.Expression, strconv.Quote(fakegpu.DRADriver)) ||
			sel.CEL != nil && strings.Contains(sel.CEL.Expression, "'"+fakegpu.DRADriver+"'") {
			return true
		}
	}
	return false
}

// splitPools counts the time-sliced pools and the DRA pools with
// consumable shares whose nodes are split between trust domains: the ones
// the trust rule has tenants to try on.
func splitPools(r *harness.Run) int {
	n := 0
	for _, p := range r.Fleet.Spec.Pools {
		if (p.Mode() == fleet.ModeTimeSlicing || p.SharesDevices()) && len(p.TrustDomains) >= 2 {
			n++
		}
	}
	return n
}

func otherRuntimeClassObject() *nodev1.RuntimeClass {
	return &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: otherRuntimeClass}, Handler: "runc"}
}

// createTenantObjects makes what the rules draw from that a candidate
// does not provide, and the residents of shared nodes.
func createTenantObjects(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	r := suite.From(ctx)
	cs := r.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: unlabelledNamespace}}
	harness.Own(&ns.ObjectMeta)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctx, err
	}
	rc := otherRuntimeClassObject()
	harness.Own(&rc.ObjectMeta)
	if _, err := cs.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctx, err
	}
	if err := r.EnsureServiceAccounts(ctx); err != nil {
		return ctx, err
	}
	// One well-formed pod of each trust domain on each of its time-sliced
	// nodes, bound there directly.
	for _, p := range r.Fleet.PoolsWithMode(fleet.ModeTimeSlicing) {
		for _, d := range p.TrustDomains {
			tns, err := r.TrustNamespace(ctx, d)
			if err != nil {
				continue // the check says so; the suite still runs
			}
			res, err := r.IntendedResource(p)
			if err != nil {
				return ctx, err
			}
			nodes, err := r.PoolNodes(ctx, p.Name, &d)
			if err != nil {
				return ctx, err
			}
			for _, n := range nodes {
				d := d
				pod := workload.New("explore-resident", tns, "resident-"+n.Name).ForPool(p, &d).GPU(res, 1)
				pod.Labels[residentLabel] = "true"
				harness.Own(&pod.ObjectMeta)
				pod.Spec.NodeName = n.Name
				if _, err := cs.CoreV1().Pods(tns).Create(ctx, pod.Pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					// A candidate that refuses well-formed pods fails other
					// checks; a stray pod is still judged by where it lands.
					fmt.Fprintf(os.Stderr, "explore: no resident pod on %s: %v\n", n.Name, err)
				}
			}
		}
	}
	return ctx, residentsOfAutoscaledPools(ctx, r)
}

// residentsOfAutoscaledPools puts a well-formed pod on each autoscaled
// pool (on each trust domain's NodePool, where the pool is split) and
// waits for the autoscaler to make it a node and the stack to give it its
// GPU: the rules then aim at nodes the autoscaler made as at the fleet's,
// and the trust rule finds a tenant there for a stray pod to land beside.
// The pods keep Karpenter from disrupting their nodes while the suite runs
// (autoscaler-facts §7.3). A pool that gets no node is explored as it is:
// why it does not scale is the autoscaling suite's to say.
func residentsOfAutoscaledPools(ctx context.Context, r *harness.Run) error {
	type resident struct {
		pool    fleet.AutoscaledPool
		pod     *corev1.Pod // as first created, to create again
		created time.Time
		// upSince: since when every node its NodePool made is Ready and
		// the pod is still not bound to one.
		upSince time.Time
		done    string // once settled: where it runs, or why it never will
	}
	if !r.Autoscaler {
		return nil // nothing makes their nodes
	}
	cs := r.Client
	create := func(x *resident) error {
		x.created = time.Now()
		_, err := cs.CoreV1().Pods(x.pod.Namespace).Create(ctx, x.pod.DeepCopy(), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	var rs []*resident
	for _, ap := range r.Fleet.Autoscaled() {
		if !ap.GPU() {
			continue
		}
		ns := unlabelledNamespace
		if len(ap.TrustDomains) == 1 {
			tns, err := r.TrustNamespace(ctx, ap.TrustDomains[0])
			if err != nil {
				continue // the check says so; the suite still runs
			}
			ns = tns
		}
		res, err := r.IntendedResource(ap.Pool)
		if err != nil {
			return err
		}
		// Autoscaled gives a trust domain's NodePool its domain's labels
		// and taints already.
		pod, err := suite.AutoscaledPod(ctx, r, "explore-resident", ap.Pool, nil, ns, "resident-"+ap.NodePool, res, 1)
		if err != nil {
			return err
		}
		pod.Labels[residentLabel] = "true"
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[autoscaler.AnnotationDoNotDisrupt] = "true"
		harness.Own(&pod.ObjectMeta)
		x := &resident{pool: ap, pod: pod}
		if err := create(x); err != nil {
			fmt.Fprintf(os.Stderr, "explore: no resident pod on autoscaled pool %s (NodePool %s): %v\n", ap.Name, ap.NodePool, err)
			continue
		}
		rs = append(rs, x)
	}
	if len(rs) == 0 {
		return nil
	}
	dyn, err := dynamic.NewForConfig(r.Cluster.REST)
	if err != nil {
		return err
	}
	err = wait.For(ctx, "the autoscaler to make each autoscaled pool's resident pod a node, and the simulated stack to give it its GPU", residentTimeout, func(ctx context.Context) (bool, string, error) {
		var waiting []string
		for _, x := range rs {
			if x.done != "" {
				continue
			}
			got, err := cs.CoreV1().Pods(x.pod.Namespace).Get(ctx, x.pod.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				// The taint-eviction controller can take a pod bound to a
				// node the stack has not taken over yet (autoscaler-facts
				// §4.7): a tenant's controller would make it again.
				waiting = append(waiting, x.pod.Name+": gone, created again")
				if err := create(x); err != nil {
					return false, "", err
				}
				continue
			} else if err != nil {
				return false, "", err
			}
			seen := expect.Describe(got)
			switch {
			case got.Status.Phase == corev1.PodFailed || got.Status.Phase == corev1.PodSucceeded:
				x.done = "it ended: " + seen
			case got.Status.Phase == corev1.PodRunning && got.Annotations[fakegpu.AnnotationVisibleDevices]+got.Annotations[fakegpu.AnnotationCDIDevices] != "":
				x.done = "running on node " + got.Spec.NodeName
			case got.Spec.NodeName == "":
				why, noClaim, err := notTaken(ctx, r, dyn, x.pool.NodePool)
				if err != nil {
					return false, "", err
				}
				switch {
				case why == "":
					x.upSince = time.Time{}
				case x.upSince.IsZero():
					x.upSince = time.Now()
				}
				// Nodes Ready may yet take the pod on the scheduler's next
				// try, which a node's update prompts.
				if why != "" && ((noClaim && time.Since(x.created) > noClaimAfter) || (!noClaim && time.Since(x.upSince) > readyNotTakenAfter)) {
					x.done = why + " (" + seen + ")"
					continue
				}
				fallthrough
			default:
				waiting = append(waiting, x.pod.Name+": "+seen)
			}
		}
		return len(waiting) == 0, strings.Join(waiting, "; "), nil
	})
	var te *wait.TimeoutError
	if err != nil && !errors.As(err, &te) {
		return err
	}
	for _, x := range rs {
		if !strings.HasPrefix(x.done, "running on node ") {
			fmt.Fprintf(os.Stderr, "explore: autoscaled pool %s (NodePool %s) is explored without a node of its own: %s\n", x.pool.Name, x.pool.NodePool, orStill(x.done))
		}
	}
	return nil
}

// notTaken says why a NodePool will not give a Pending pod a node: it has
// made none, or every node it made is Ready without taking the pod (a node
// whose stack advertises other than its NodeOverlay promised is never
// initialized, autoscaler-facts §12.2, so Ready is what is waited for). ""
// while a node is still coming.
func notTaken(ctx context.Context, r *harness.Run, dyn dynamic.Interface, nodePool string) (why string, noClaim bool, err error) {
	sel := metav1.ListOptions{LabelSelector: autoscaler.LabelNodePool + "=" + nodePool}
	claims, err := dyn.Resource(autoscaler.NodeClaimResource).List(ctx, sel)
	if err != nil {
		return "", false, err
	}
	if len(claims.Items) == 0 {
		return fmt.Sprintf("no NodeClaim of it %s after the pod", noClaimAfter), true, nil
	}
	nodes, err := r.Client.CoreV1().Nodes().List(ctx, sel)
	if err != nil {
		return "", false, err
	}
	var up []string
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				up = append(up, n.Name)
			}
		}
	}
	if len(up) < len(claims.Items) {
		return "", false, nil
	}
	return fmt.Sprintf("its nodes %s were Ready for %s and did not take the pod", strings.Join(up, ", "), readyNotTakenAfter), false, nil
}

// residentTimeout bounds the wait for the autoscaled pools' residents: a
// scale-up from zero took 2.5 to 3.6 s on an idle machine (measured
// 2026-12-05, docs/measurements.md).
const residentTimeout = 60 * time.Second

// readyNotTakenAfter: a Ready node of the pod's NodePool that has not
// taken it this long never will; the stack's takeover and the scheduler's
// next try take seconds.
const readyNotTakenAfter = 20 * time.Second

// noClaimAfter: Karpenter decides on a Pending pod within its batch, 10 s
// at most by default (--batch-max-duration, autoscaler-facts §5.2). A pool
// with no NodeClaim this long after its resident is not being scaled.
const noClaimAfter = 15 * time.Second

func orStill(s string) string {
	if s == "" {
		return "still Pending at " + residentTimeout.String()
	}
	return s
}

// removeTenantObjects undoes createTenantObjects and waits until the
// residents are gone, so suites after this one find the pools empty.
func removeTenantObjects(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	r := suite.From(ctx)
	cs := r.Client
	zero := int64(0)
	sel := residentLabel + "=true"
	_ = cs.NodeV1().RuntimeClasses().Delete(ctx, otherRuntimeClass, metav1.DeleteOptions{})
	tpls, err := cs.ResourceV1().ResourceClaimTemplates("").List(ctx, metav1.ListOptions{LabelSelector: templateLabel + "=true"})
	if err == nil {
		for _, t := range tpls.Items {
			_ = cs.ResourceV1().ResourceClaimTemplates(t.Namespace).Delete(ctx, t.Name, metav1.DeleteOptions{})
		}
	}
	if cms, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: templateLabel + "=true"}); err == nil {
		for _, o := range cms.Items {
			_ = cs.CoreV1().ConfigMaps(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{})
		}
	}
	if secs, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{LabelSelector: templateLabel + "=true"}); err == nil {
		for _, o := range secs.Items {
			_ = cs.CoreV1().Secrets(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{})
		}
	}
	_ = cs.CoreV1().Namespaces().Delete(ctx, unlabelledNamespace, metav1.DeleteOptions{})
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return ctx, err
	}
	for _, ns := range nss.Items {
		_ = cs.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: sel})
	}
	err = wait.For(ctx, "the explore suite's resident pods to be deleted", 30*time.Second, func(ctx context.Context) (bool, string, error) {
		list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, "", err
		}
		return len(list.Items) == 0, fmt.Sprintf("%d left", len(list.Items)), nil
	})
	return ctx, err
}
