// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package versions

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// hack/lib.sh builds what the harness runs; the versions must agree or the
// harness looks for binaries that were never built.
func TestVersionsMatchBuildScript(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "hack", "lib.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"KUBE_VERSION": Kube, "ETCD_VERSION": Etcd, "KWOK_VERSION": Kwok, "KIND_VERSION": Kind, "KARPENTER_VERSION": Karpenter} {
		m := regexp.MustCompile(name + `="\$\{` + name + `:-([^}]+)\}"`).FindSubmatch(data)
		if m == nil {
			t.Errorf("hack/lib.sh does not pin %s", name)
			continue
		}
		if string(m[1]) != want {
			t.Errorf("hack/lib.sh pins %s=%s, the harness expects %s", name, m[1], want)
		}
	}
}
