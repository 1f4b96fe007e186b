package scale

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpupool/gpupool/e2e/explain"
	"github.com/gpupool/gpupool/e2e/fleet"
	"github.com/gpupool/gpupool/e2e/workload"
	"github.com/gpupool/gpupool/fakegpu"
)

// Labels on every pod a scale run creates.
const (
	LabelRun   = "gpupool.dev/scale-run"
	LabelPhase = "gpupool.dev/scale-phase"
	LabelEntry = "gpupool.dev/scale-mix" // index into spec.mix
)

// Namespace holds the pods of pools without trust domains.
const Namespace = "gpupool-scale"

// template is a ready-made pod per mix entry and trust domain; pods are
// copies with a name.
type template struct {
	entry    int
	pods     []*corev1.Pod // one per trust domain (or one)
	expected string        // explain category the pod must end in, "" if it must schedule
}

// Resolver says which resource a GPU pool's tenants are told to request
// and which namespace belongs to a trust domain (the harness knows both).
type Resolver interface {
	IntendedResource(p fleet.Pool) (string, error)
	TrustNamespace(ctx context.Context, d fleet.TrustDomain) (string, error)
}

func buildTemplates(ctx context.Context, w *Workload, fl *fleet.Fleet, res Resolver, runID string) ([]template, error) {
	var out []template
	for i, m := range w.Spec.Mix {
		p, ok := fl.Pool(m.Pool)
		if !ok {
			return nil, fmt.Errorf("workload %s: spec.mix[%d].pool: the fleet has no pool %q", w.File, i, m.Pool)
		}
		t := template{entry: i}
		domains := []*fleet.TrustDomain{nil}
		if len(p.TrustDomains) > 0 {
			domains = nil
			for j := range p.TrustDomains {
				domains = append(domains, &p.TrustDomains[j])
			}
		}
		for _, d := range domains {
			ns := Namespace
			if d != nil {
				var err error
				if ns, err = res.TrustNamespace(ctx, *d); err != nil {
					return nil, err
				}
			}
			pod := workload.New("scale", ns, "")
			switch m.Shape {
			case ShapeUntolerated:
				// The pool's selector, the trust domain's tolerations, not the pool's.
				pod = pod.NodeSelector(p.Labels)
				if d != nil {
					pod = pod.NodeSelector(d.Labels).Tolerate(d.Taints...)
				}
				t.expected = explain.NoMatchingPool
			default:
				pod = pod.ForPool(p, d)
			}
			if p.GPU() {
				r, err := res.IntendedResource(p)
				if err != nil {
					return nil, err
				}
				if m.Shape == ShapeWholeGPU {
					r, t.expected = fakegpu.ResourceGPU, explain.WrongResource
				}
				pod = pod.GPU(r, 1)
			}
			pod.Labels[LabelRun] = runID
			pod.Labels[LabelEntry] = fmt.Sprint(i)
			t.pods = append(t.pods, pod.Pod)
		}
		out = append(out, t)
	}
	return out, nil
}

// ensureNamespaces creates the scale namespace and the pods' own service
// account wherever the templates put pods.
func ensureNamespaces(ctx context.Context, cs kubernetes.Interface, ts []template, labels map[string]string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace, Labels: labels}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	seen := map[string]bool{}
	for _, t := range ts {
		for _, p := range t.pods {
			if seen[p.Namespace] {
				continue
			}
			seen[p.Namespace] = true
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: workload.ServiceAccount, Namespace: p.Namespace, Labels: labels}}
			if _, err := cs.CoreV1().ServiceAccounts(p.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("namespace %s: %w", p.Namespace, err)
			}
		}
	}
	return nil
}
