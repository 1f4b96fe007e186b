// Package upstream holds files that upstream projects ship (the GPU
// Operator's CRD, sample and default MIG config), so the harness uses them
// unmodified instead of writing its own. They are copied byte for byte from
// the upstream Go module by hack/update-upstream.sh and embedded in the
// binary: a run needs neither a Go toolchain nor the module cache.
package upstream

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
)

// GPUOperatorModule is the module that carries the ClusterPolicy CRD.
const GPUOperatorModule = "github.com/NVIDIA/gpu-operator"

// gpuOperatorVersion pins the GPU Operator release whose files the harness
// uses. The main module imports none of its Go packages (their dependency
// tree is large), so the pin lives here. hack/update-upstream.sh reads it:
// change it, run the script, and gpu-operator/ holds that version's files.
const gpuOperatorVersion = "v0.0.0-20250917190837-d73a0086a6ba"

// Files of the GPU Operator module, relative to its root.
const (
	ClusterPolicyCRD       = "config/crd/bases/nvidia.com_clusterpolicies.yaml"
	ClusterPolicySample    = "config/samples/v1_clusterpolicy.yaml"
	DefaultMIGPartedConfig = "assets/state-mig-manager/0400_configmap.yaml"
)

// gpuOperatorDir is the embedded copy's directory; its SOURCE file names
// the module, the version and each file's sha256.
const gpuOperatorDir = "gpu-operator"

// all: keeps the chart's _helpers.tpl and .helmignore, which a plain
// directory embed leaves out.
//
//go:embed all:gpu-operator
var gpuOperator embed.FS

// GPUOperatorChartDir is the GPU Operator's Helm chart in its module,
// embedded with every file (dependencies under charts/ included).
const GPUOperatorChartDir = "deployments/gpu-operator"

// GPUOperatorRelease is the GPU Operator release the pinned module is
// (the release-25.3 branch at its v25.3.4 tag): the version a candidate
// names its chart by. The module's Chart.yaml says v1.0.0-devel, as the
// branch does; the release packaging sets the version, nothing else.
const GPUOperatorRelease = "v25.3.4"

// GPUOperatorChart returns the chart's files, relative to its root.
func GPUOperatorChart() (fs.FS, error) {
	return fs.Sub(gpuOperator, path.Join(gpuOperatorDir, GPUOperatorChartDir))
}

// GPUOperatorFile returns the contents of a file of the GPU Operator
// module (ClusterPolicyCRD, ClusterPolicySample, DefaultMIGPartedConfig), as the pinned version ships it.
func GPUOperatorFile(rel string) ([]byte, error) {
	data, err := fs.ReadFile(gpuOperator, path.Join(gpuOperatorDir, rel))
	if err != nil {
		return nil, fmt.Errorf("%s: not among the embedded GPU Operator files (hack/update-upstream.sh copies them): %w", GPUOperatorFileName(rel), err)
	}
	return data, nil
}

// GPUOperatorFileName names a file of the GPU Operator module for messages
// and reports: module@version/path.
func GPUOperatorFileName(rel string) string {
	return GPUOperatorModule + "@" + gpuOperatorVersion + "/" + rel
}

// GPUOperatorVersion is the GPU Operator module version whose files a run
// uses (its CRD, sample and default MIG config).
func GPUOperatorVersion() string { return gpuOperatorVersion }

// KarpenterModule carries the CRDs of Karpenter's NodePools and NodeClaims
// and of its KWOK provider's node class (an autoscaled pool's objects),
// and the provider's Helm chart.
const KarpenterModule = "sigs.k8s.io/karpenter"

// karpenterVersion is the Karpenter release whose CRDs the harness
// installs; it is the one hack/tools/karpenter builds (versions.Karpenter,
// kept equal by a test).
const karpenterVersion = "v1.14.1"

// Files of the Karpenter module, relative to its root: the CRDs Karpenter
// with its KWOK provider needs, in the order they are installed.
var KarpenterCRDs = []string{
	"kwok/charts/crds/karpenter.sh_nodepools.yaml",
	"kwok/charts/crds/karpenter.sh_nodeclaims.yaml",
	"kwok/charts/crds/karpenter.sh_nodeoverlays.yaml",
	"kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml",
}

// all: keeps the chart's _helpers.tpl.
//
//go:embed all:karpenter
var karpenter embed.FS

// KarpenterChartDir is the KWOK provider's Helm chart in the Karpenter
// module, embedded with every file.
const KarpenterChartDir = "kwok/charts"

// KarpenterChart returns the KWOK provider's chart's files, relative to
// its root.
func KarpenterChart() (fs.FS, error) {
	return fs.Sub(karpenter, path.Join("karpenter", KarpenterChartDir))
}

// KarpenterFile returns a file of the Karpenter module as the pinned
// version ships it.
func KarpenterFile(rel string) ([]byte, error) {
	data, err := fs.ReadFile(karpenter, path.Join("karpenter", rel))
	if err != nil {
		return nil, fmt.Errorf("%s@%s/%s: not among the embedded Karpenter files (hack/update-upstream.sh copies them): %w", KarpenterModule, karpenterVersion, rel, err)
	}
	return data, nil
}

// KarpenterVersion is the Karpenter module version whose CRDs a run
// installs.
func KarpenterVersion() string { return karpenterVersion }
