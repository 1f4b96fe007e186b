// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package hack

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// gpupool is built with the control plane's flags (static, -trimpath: the
// Makefile's exports, hack/build-control-plane.sh), so Go's build cache
// compiles the k8s.io packages both link once, on a cold machine: about
// 950 of gpupool's 1,040 packages. That holds only while every module
// gpupool links resolves to the version the tools module (k8s.io/kubernetes's
// own pins) resolves it to; one patch apart, and every package above it
// is compiled twice.
func TestGpupoolLinksTheControlPlanesModuleVersions(t *testing.T) {
	linked := goList(t, "..", "list", "-deps", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}", "./cmd/gpupool")
	tools := goList(t, "tools", "list", "-m", "-f", "{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}", "all")
	for mod, v := range linked {
		if tv, ok := tools[mod]; ok && tv != v {
			t.Errorf("gpupool links %s %s, the control plane's build %s %s: align the main go.mod (go get %s@%s), or the shared packages are compiled twice", mod, v, mod, tv, mod, tv)
		}
	}
}

// goList runs go in dir and reads "path version" lines.
func goList(t *testing.T, dir string, args ...string) map[string]string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if path, v, ok := strings.Cut(line, " "); ok && v != "" {
			m[path] = v
		}
	}
	return m
}
