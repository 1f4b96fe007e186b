// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package hack

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gpupool/gpupool/"

// layers says which of the module's top-level directories each may import
// (itself always): suites and cmd on top, e2e below them, fakegpu and
// reports at the ground, so the simulator holds no harness code and the
// harness reaches the NVIDIA facts only through fakegpu. Test files count:
// a test that imports upward ties the layers as much as code does. docs
// holds only tests, which generate the docs' tables from the check catalog
// and the candidates (e2e).
var layers = map[string][]string{
	"cmd":       {"suites", "e2e", "fakegpu", "reports", "manifests"},
	"suites":    {"e2e", "fakegpu", "reports", "manifests"},
	"e2e":       {"fakegpu", "reports", "manifests"},
	"fakegpu":   nil,
	"reports":   nil,
	"manifests": nil,
	"docs":      {"e2e"},
	"hack":      nil,
}

// ground lists packages inside a layer that sit at its bottom, and the
// module's packages each may import (a package path, or a top-level
// directory for all of it). The input formats (e2e/apis and its versions)
// are read by tools and tests that want no harness: they may not reach
// fleet, candidate or scale, which alias their types, nor anything that
// does.
var ground = map[string][]string{
	"e2e/apis":          nil,
	"e2e/apis/v1alpha1": {"e2e/apis", "fakegpu", "manifests"},
}

func TestNothingImportsUpward(t *testing.T) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		from := top(p.ImportPath)
		allowed, known := layers[from]
		if !known {
			t.Errorf("%s: top-level directory %q has no layer in hack/layering_test.go", p.ImportPath, from)
			continue
		}
		below, isGround := ground[strings.TrimPrefix(p.ImportPath, module)]
		for _, imp := range append(append(p.Imports, p.TestImports...), p.XTestImports...) {
			if !strings.HasPrefix(imp, module) || imp == p.ImportPath {
				continue
			}
			to := top(imp)
			if to != from && !slices.Contains(allowed, to) {
				t.Errorf("%s imports %s: %s may import only %v", p.ImportPath, imp, from, allowed)
			}
			if rel := strings.TrimPrefix(imp, module); isGround && !slices.Contains(below, rel) && !slices.Contains(below, to) {
				t.Errorf("%s imports %s: it may import only %v of the module", p.ImportPath, imp, below)
			}
		}
	}
}

func top(importPath string) string {
	rest := strings.TrimPrefix(importPath, module)
	first, _, _ := strings.Cut(rest, "/")
	return first
}
