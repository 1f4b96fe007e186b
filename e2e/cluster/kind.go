// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/support/kind"

	"github.com/gpupool/gpupool/e2e/wait"
)

// KindConfig configures a kind cluster.
type KindConfig struct {
	// Name of the cluster; must be unique on the machine (NewRunName).
	Name string
	// KindBinary is the kind command to run.
	KindBinary string
	// NodeImage is the node image; empty means kind's default, which is
	// pulled from a registry.
	NodeImage string
	// OfflineNodeImage: the node image is gpupool's own build
	// (hack/build-kind-node-image.sh), which carries a bridge CNI because
	// kind's default CNI image cannot be pulled.
	OfflineNodeImage bool
	KubeVersion      string
	KwokVersion      string
	// StateDir holds one directory per gpupool kind cluster (owner file,
	// kind config, kubeconfig), so the stale sweep only sees gpupool's.
	StateDir string
	// RuntimeHandlers are added to the node's containerd (what a GPU
	// Operator's container toolkit adds for its runtime).
	RuntimeHandlers []RuntimeHandler
	// KwokImage is a local image of the kwok controller; it is loaded into
	// the node and runs in the cluster, managing only the nodes annotated
	// kwok.x-k8s.io/node=fake.
	KwokImage string
	// RoleImages are local images loaded into the node before Up returns,
	// by the role the harness gives them ("device-plugin").
	RoleImages map[string]string
	// WaitTimeout bounds each wait of Up (node Ready, kwok available).
	WaitTimeout time.Duration
}

// RuntimeHandler is a runtime handler of the node's containerd: runc's
// shim running BinaryName in runc's place ("": runc itself). The binary
// may appear after the node starts (a DaemonSet installs it); until then
// the handler's containers fail to start.
type RuntimeHandler struct {
	Name, BinaryName string
}

func (c KindConfig) images() []string {
	var out []string
	for _, img := range c.RoleImages {
		out = append(out, img)
	}
	sort.Strings(out)
	return out
}

// Kind is the provider for clusters with a real kubelet: kind's node
// containers in Docker, with KWOK nodes beside them for the fleet's size.
type Kind struct {
	cfg      KindConfig
	provider *kind.Cluster
	detached bool
}

// NewKind checks what the provider needs is there and returns it.
func NewKind(cfg KindConfig) (*Kind, error) {
	if cfg.WaitTimeout == 0 {
		cfg.WaitTimeout = 3 * time.Minute
	}
	if st, err := os.Stat(cfg.KindBinary); err != nil || st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("kind cluster: no kind binary at %s; run hack/build-control-plane.sh kind (or make build-kind)", cfg.KindBinary)
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		return nil, fmt.Errorf("kind cluster: the Docker engine does not answer (docker info: %v); run hack/setup-docker.sh", err)
	}
	if cfg.KwokImage == "" {
		return nil, errors.New("kind cluster: no kwok controller image; run hack/build-kind-images.sh (or make build-kind)")
	}
	for _, img := range append([]string{cfg.NodeImage, cfg.KwokImage}, cfg.images()...) {
		if img == "" {
			continue
		}
		if err := exec.Command("docker", "image", "inspect", img).Run(); err != nil && (img != cfg.NodeImage || cfg.OfflineNodeImage) {
			return nil, fmt.Errorf("kind cluster: image %s is not in the Docker engine; run make build-kind", img)
		}
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return nil, err
	}
	return &Kind{cfg: cfg}, nil
}

// Kind implements Provider.
func (k *Kind) Kind() string { return "kind" }

func (k *Kind) clustersDir() string { return filepath.Join(k.cfg.StateDir, "kind") }

func (k *Kind) clusterDir(name string) string { return filepath.Join(k.clustersDir(), name) }

// Dir is the cluster's state directory.
func (k *Kind) Dir() string { return k.clusterDir(k.cfg.Name) }

// Detach marks the cluster as kept after this process exits.
func (k *Kind) Detach() { k.detached = true }

// NodeName is the kind node the cluster's real kubelet runs.
func (k *Kind) NodeName() string { return k.cfg.Name + "-control-plane" }

// Up implements Provider.
func (k *Kind) Up(ctx context.Context) (*Cluster, error) {
	if err := k.SweepStale(ctx); err != nil {
		return nil, err
	}
	dir := k.Dir()
	if err := writeOwner(dir, k.detached); err != nil {
		return nil, err
	}
	cfgFile := filepath.Join(dir, "kind-config.yaml")
	if err := os.WriteFile(cfgFile, []byte(k.config()), 0o644); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	// kind creates a Docker network for its nodes and never removes it;
	// when gpupool's cluster brings it, gpupool's last cluster takes it.
	if exec.CommandContext(ctx, "docker", "network", "inspect", kindNetwork).Run() != nil {
		if err := os.WriteFile(k.networkMarker(), nil, 0o644); err != nil {
			return nil, err
		}
	}
	k.provider = kind.NewCluster(k.cfg.Name)
	k.provider.WithPath(k.cfg.KindBinary)
	if k.cfg.NodeImage != "" {
		k.provider.WithOpts(kind.WithImage(k.cfg.NodeImage))
	}
	// --kubeconfig: kind would otherwise merge the cluster into the user's
	// ~/.kube/config.
	if _, err := k.provider.Create(ctx, "--config", cfgFile, "--kubeconfig", kubeconfig); err != nil {
		return nil, fmt.Errorf("kind cluster %s: %w", k.cfg.Name, err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 500, 1000
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	if err := k.waitNodeReady(ctx, client); err != nil {
		return nil, err
	}
	for _, img := range append([]string{k.cfg.KwokImage}, k.cfg.images()...) {
		if err := k.provider.LoadImage(ctx, img); err != nil {
			return nil, fmt.Errorf("kind cluster %s: loading image %s: %w", k.cfg.Name, img, err)
		}
		if err := k.nameByDigest(ctx, img); err != nil {
			return nil, fmt.Errorf("kind cluster %s: %w", k.cfg.Name, err)
		}
	}
	if err := installKwok(ctx, client, k.cfg.KwokImage, k.cfg.WaitTimeout); err != nil {
		return nil, fmt.Errorf("kind cluster %s: %w", k.cfg.Name, err)
	}
	image := k.cfg.NodeImage
	if image == "" {
		image = "kind's default node image"
	}
	return &Cluster{
		Name:       k.cfg.Name,
		Kubeconfig: kubeconfig,
		REST:       rc,
		Components: map[string]string{
			"kubernetes": k.cfg.KubeVersion,
			"kwok":       k.cfg.KwokVersion,
			"provider":   "kind (" + image + ")",
		},
		RealNodes: []string{k.NodeName()},
		Images:    k.cfg.RoleImages,
	}, nil
}

// config is the kind cluster configuration: one control-plane node whose
// kubelet is the real one the kind-only checks need.
func (k *Kind) config() string {
	var b strings.Builder
	b.WriteString("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnetworking:\n  apiServerAddress: 127.0.0.1\n")
	if k.cfg.OfflineNodeImage {
		// kindnetd's image cannot be pulled; the offline image has a bridge CNI.
		b.WriteString("  disableDefaultCNI: true\n")
	}
	// The kubelet computes its node's status every nodeStatusUpdateFrequency
	// and posts it only when it changed (kubelet-facts §6): at 1 s, a
	// device plugin's resource shows within a second instead of up to 10,
	// and every wait on the real node ends that much sooner. The report
	// frequency keeps its default, so an unchanged status is not posted
	// every second.
	b.WriteString("kubeadmConfigPatches:\n- |\n  kind: KubeletConfiguration\n  nodeStatusUpdateFrequency: 1s\n  nodeStatusReportFrequency: 5m\n")
	if hostCgroupV1() {
		// kubelet 1.35+ refuses cgroup v1 unless told otherwise.
		b.WriteString("  failCgroupV1: false\n")
	}
	var patches []string
	for _, h := range k.cfg.RuntimeHandlers {
		p := fmt.Sprintf(`[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%[1]s]
  runtime_type = "io.containerd.runc.v2"
  base_runtime_spec = "/etc/containerd/cri-base.json"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%[1]s.options]
    SystemdCgroup = true`, h.Name)
		if h.BinaryName != "" {
			p += fmt.Sprintf("\n    BinaryName = %q", h.BinaryName)
		}
		patches = append(patches, p)
	}
	if !BoundingSetHasSysResource() {
		// runc in the node cannot lower OOM scores without CAP_SYS_RESOURCE:
		// every pod sandbox would fail to start.
		patches = append(patches, "[plugins.\"io.containerd.grpc.v1.cri\"]\n  restrict_oom_score_adj = true")
	}
	if len(patches) > 0 {
		b.WriteString("containerdConfigPatches:\n")
		for _, p := range patches {
			b.WriteString("- |-\n")
			for _, line := range strings.Split(p, "\n") {
				b.WriteString("  " + line + "\n")
			}
		}
	}
	b.WriteString("nodes:\n- role: control-plane\n")
	return b.String()
}

func (k *Kind) waitNodeReady(ctx context.Context, client kubernetes.Interface) error {
	node := k.NodeName()
	return wait.For(ctx, "kind node "+node+" to be Ready", k.cfg.WaitTimeout, func(ctx context.Context) (bool, string, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, fmt.Sprintf("Ready=%s (%s: %s)", c.Status, c.Reason, c.Message), nil
			}
		}
		return false, "no Ready condition yet", nil
	})
}

// Down implements Provider.
func (k *Kind) Down(ctx context.Context) error {
	return k.deleteCluster(ctx, k.cfg.Name)
}

func (k *Kind) deleteCluster(ctx context.Context, name string) error {
	dir := k.clusterDir(name)
	var errs []error
	// kind delete is idempotent: a cluster that never came up is fine.
	cmd := exec.CommandContext(ctx, k.cfg.KindBinary, "delete", "cluster", "--name", name, "--kubeconfig", filepath.Join(dir, "kubeconfig"))
	if out, err := cmd.CombinedOutput(); err != nil {
		errs = append(errs, fmt.Errorf("kind delete cluster %s: %w: %s", name, err, out))
	}
	errs = append(errs, os.RemoveAll(dir))
	errs = append(errs, k.removeNetworkIfLast(ctx))
	errs = append(errs, removeTempKubeconfigs("kind", name))
	// Karpenter's, beside the cluster (TempPrefix): a run killed with
	// SIGKILL leaves it.
	errs = append(errs, removeTempDirs(name))
	return errors.Join(errs...)
}

// SweepStale removes gpupool kind clusters whose owning process is gone.
// A leftover that cannot be removed is reported, not fatal: this run's
// cluster has a name of its own, and `gpupool down` retries the removal.
func (k *Kind) SweepStale(ctx context.Context) error {
	return sweepStale(ctx, k.clustersDir(), "kind cluster", k.deleteCluster)
}

// Remove deletes the gpupool kind clusters r selects (Removal).
func (k *Kind) Remove(ctx context.Context, r Removal) (Removed, error) {
	return removeClusters(ctx, k.clustersDir(), r, k.deleteCluster)
}

// nameByDigest gives a loaded image its repo@digest name in the node's
// containerd too: a loaded image has no registry to resolve a digest
// against, and pods pinned by digest (what a pinned-images policy asks)
// would otherwise try to pull.
func (k *Kind) nameByDigest(ctx context.Context, image string) error {
	ref := image
	if first, _, ok := strings.Cut(ref, "/"); !ok || !strings.ContainsAny(first, ".:") {
		ref = "docker.io/" + ref
	}
	out, err := exec.CommandContext(ctx, "docker", "exec", k.NodeName(), "ctr", "-n", "k8s.io", "images", "ls", "name=="+ref).Output()
	if err != nil {
		return fmt.Errorf("listing %s in the node's containerd: %w", ref, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 {
		return fmt.Errorf("image %s is not in the node's containerd after kind load", ref)
	}
	f := strings.Fields(lines[1])
	if len(f) < 3 || !strings.HasPrefix(f[2], "sha256:") {
		return fmt.Errorf("cannot read the digest of %s from %q", ref, lines[1])
	}
	repo, _, _ := strings.Cut(ref, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	if out, err := exec.CommandContext(ctx, "docker", "exec", k.NodeName(), "ctr", "-n", "k8s.io", "images", "tag", "--force", ref, repo+"@"+f[2]).CombinedOutput(); err != nil {
		return fmt.Errorf("naming %s by digest: %w: %s", ref, err, out)
	}
	return nil
}

// kindNetwork is the Docker network kind puts every node on.
const kindNetwork = "kind"

func (k *Kind) networkMarker() string {
	return filepath.Join(k.clustersDir(), ".gpupool-created-kind-network")
}

// removeNetworkIfLast removes kind's Docker network if a gpupool cluster
// created it and no gpupool cluster and no container is left on it.
func (k *Kind) removeNetworkIfLast(ctx context.Context) error {
	if _, err := os.Stat(k.networkMarker()); err != nil {
		return nil
	}
	entries, _ := os.ReadDir(k.clustersDir())
	for _, e := range entries {
		if e.IsDir() {
			return nil
		}
	}
	out, err := exec.CommandContext(ctx, "docker", "network", "inspect", "-f", "{{len .Containers}}", kindNetwork).Output()
	if err != nil {
		return os.Remove(k.networkMarker()) // already gone
	}
	if strings.TrimSpace(string(out)) != "0" {
		return nil // someone else's containers use it
	}
	if out, err := exec.CommandContext(ctx, "docker", "network", "rm", kindNetwork).CombinedOutput(); err != nil {
		return fmt.Errorf("docker network rm %s: %w: %s", kindNetwork, err, out)
	}
	return os.Remove(k.networkMarker())
}

func hostCgroupV1() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err != nil
}

// BoundingSetHasSysResource reports whether this process's capability
// bounding set holds CAP_SYS_RESOURCE (capability 24); some VMs lack it,
// and then privileged containers cannot be granted it.
func BoundingSetHasSysResource() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return true
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			var bnd uint64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%x", &bnd); err != nil {
				return true
			}
			return bnd&(1<<24) != 0
		}
	}
	return true
}
