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
// directory for all of it); a key ending in "/*" is every package under
// it. The input formats (e2e/apis and each version under it) are read by
// tools and tests that want no harness: they may not reach fleet,
// candidate or scale, which alias their types, nor anything that does.
// groundTests is what their tests may import besides: the built-in
// manifests they decode.
var (
	ground = map[string][]string{
		"e2e/apis":   nil,
		"e2e/apis/*": {"e2e/apis", "fakegpu"},
	}
	groundTests = []string{"manifests"}
)

// groundOf is the ground entry of the package at rel, if any.
func groundOf(rel string) ([]string, bool) {
	if below, ok := ground[rel]; ok {
		return below, true
	}
	for k, below := range ground {
		if prefix, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(rel, prefix) {
			return below, true
		}
	}
	return nil, false
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
		below, isGround := groundOf(strings.TrimPrefix(p.ImportPath, module))
		tests := append(slices.Clone(p.TestImports), p.XTestImports...)
		for _, imp := range append(slices.Clone(p.Imports), tests...) {
			if !strings.HasPrefix(imp, module) || imp == p.ImportPath {
				continue
			}
			to := top(imp)
			if to != from && !slices.Contains(allowed, to) {
				t.Errorf("%s imports %s: %s may import only %v", p.ImportPath, imp, from, allowed)
			}
			if rel := strings.TrimPrefix(imp, module); isGround && !slices.Contains(below, rel) && !slices.Contains(below, to) &&
				!(slices.Contains(tests, imp) && !slices.Contains(p.Imports, imp) && slices.Contains(groundTests, to)) {
				t.Errorf("%s imports %s: it may import only %v of the module (its tests also %v)", p.ImportPath, imp, below, groundTests)
			}
		}
	}
}

func top(importPath string) string {
	rest := strings.TrimPrefix(importPath, module)
	first, _, _ := strings.Cut(rest, "/")
	return first
}
