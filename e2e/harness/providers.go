// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpupool/gpupool/e2e/checks"
	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/dirs"
	"github.com/gpupool/gpupool/e2e/versions"
	"github.com/gpupool/gpupool/fakegpu"
	"github.com/gpupool/gpupool/fakegpu/nvidiaruntime"
)

// Provider is a cluster provider as the CLI drives it.
type Provider interface {
	cluster.Provider
	// Detach keeps the cluster after this process exits.
	Detach()
	// Remove deletes the clusters of this kind gpupool made that r
	// selects: by default every one no live run owns.
	Remove(ctx context.Context, r cluster.Removal) (cluster.Removed, error)
}

// Providers names the cluster providers, the default first.
var Providers = []string{"embedded", "kind"}

// NewProvider returns the named provider ("" is the default, embedded)
// for a cluster called name.
func NewProvider(kind, name string) (Provider, error) {
	switch kind {
	case "", "embedded":
		p, err := EmbeddedProvider(name)
		if err != nil {
			return nil, err
		}
		return p, nil
	case "kind":
		p, err := KindProvider(name)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
	return nil, fmt.Errorf("unknown provider %q (known: %s)", kind, strings.Join(Providers, ", "))
}

// KindImagesFile lists the images hack/build-kind-images.sh built, as
// name=image lines.
func KindImagesFile() string { return filepath.Join(dirs.CacheDir(), "kind-images") }

// KindProvider returns the kind provider. The node image is KIND_NODE_IMAGE
// if set, else the one hack/build-kind-node-image.sh built here, else
// kind's default (pulled from a registry).
func KindProvider(name string) (*cluster.Kind, error) {
	images, err := readKindImages(KindImagesFile())
	if err != nil {
		return nil, err
	}
	node := os.Getenv("KIND_NODE_IMAGE")
	offline := false
	if node == "" {
		if b, err := os.ReadFile(filepath.Join(dirs.CacheDir(), "kind-node-image")); err == nil {
			node = strings.TrimSpace(string(b))
		}
	}
	offline = strings.HasPrefix(node, "gpupool/kind-node:")
	return cluster.NewKind(cluster.KindConfig{
		Name:             name,
		KindBinary:       filepath.Join(dirs.CacheDir(), "kind-"+versions.Kind, "kind"),
		NodeImage:        node,
		OfflineNodeImage: offline,
		KubeVersion:      versions.Kube,
		KwokVersion:      versions.Kwok,
		StateDir:         dirs.StateDir(),
		// The nvidia handler runs the fake NVIDIA runtime the fake device
		// plugin installs where the toolkit would.
		RuntimeHandlers: []cluster.RuntimeHandler{{Name: fakegpu.RuntimeHandler, BinaryName: filepath.Join(nvidiaruntime.InstallDir, nvidiaruntime.Binary)}},
		KwokImage:       images["kwok"],
		RoleImages:      map[string]string{"device-plugin": images["device-plugin"], "dra-plugin": images["dra-plugin"], "fakegpu-controller": images["fakegpu-controller"], "cuda-probe": images["cuda-probe"], "karpenter": images["karpenter"]},
	})
}

func readKindImages(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, fmt.Errorf("kind provider: %s is missing; run hack/build-kind-images.sh (or make build-kind)", path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok {
			out[k] = v
		}
	}
	for _, want := range []string{"kwok", "device-plugin", "dra-plugin", "fakegpu-controller", "cuda-probe", "karpenter"} {
		if out[want] == "" {
			return nil, fmt.Errorf("kind provider: %s names no %s image; run hack/build-kind-images.sh", path, want)
		}
	}
	return out, sc.Err()
}

// ProviderName is the provider's name, "" meaning the default.
func ProviderName(provider string) string {
	if provider == "" {
		return Providers[0]
	}
	return provider
}

// RunsOn reports whether a check is made on the named provider. A check
// that needs the autoscaler is made only on a cluster gpupool makes (one
// of Providers), as gpupool runs Karpenter only beside those.
func RunsOn(c checks.Check, provider string) bool {
	name := ProviderName(provider)
	if c.NeedsAutoscaler && !slices.Contains(Providers, name) {
		return false
	}
	return c.Provider == "" || c.Provider == name
}

// OtherProvidersLabels is the e2e-framework --skip-labels value that skips
// checks made for other providers than the named one.
func OtherProvidersLabels(provider string) string {
	var others []string
	for _, p := range OtherProviders(provider) {
		others = append(others, checks.LabelProvider+"="+p)
	}
	return strings.Join(others, ",")
}

// OtherProviders names the providers other than the named one.
func OtherProviders(provider string) []string {
	provider = ProviderName(provider)
	var others []string
	for _, p := range Providers {
		if p != provider {
			others = append(others, p)
		}
	}
	return others
}
