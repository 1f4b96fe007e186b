// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package fakegpu

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// reporter is what the assertion helpers need: *testing.T or a *rowCheck.
type reporter interface {
	Errorf(format string, args ...any)
}

// rowCheck collects the failures of one table row. A row whose code is known
// to disagree with upstream carries a bug text: it still asserts the
// upstream behaviour, and is skipped with "BUG: ..." while it fails. Once
// the code is fixed the row fails, asking for the marker to be removed.
type rowCheck struct {
	t     *testing.T
	fails []string
}

func newRowCheck(t *testing.T) *rowCheck { return &rowCheck{t: t} }

func (c *rowCheck) Errorf(format string, args ...any) {
	c.fails = append(c.fails, fmt.Sprintf(format, args...))
}

// finish reports the collected failures, or skips the row if it is a known bug.
func (c *rowCheck) finish(bug string) {
	c.t.Helper()
	switch {
	case bug == "":
		for _, f := range c.fails {
			c.t.Error(f)
		}
	case len(c.fails) == 0:
		c.t.Errorf("row is marked BUG %q but now matches upstream: remove the bug marker", bug)
	default:
		c.t.Skipf("BUG: %s (the row asserts the expected behaviour; got: %s)", bug, strings.Join(c.fails, "; "))
	}
}

// checkErr asserts err is nil when want is empty, else that it contains
// every substring of want.
func checkErr(r reporter, err error, want ...string) {
	switch {
	case len(want) == 0 && err != nil:
		r.Errorf("unexpected error: %v", err)
	case len(want) > 0 && err == nil:
		r.Errorf("want an error containing %q, got nil", want)
	case len(want) > 0:
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				r.Errorf("error %q does not contain %q", err, w)
			}
		}
	}
}

func checkResources(r reporter, got, want map[string]int64) {
	if !maps.Equal(got, want) {
		r.Errorf("resources = %v, want %v", fmtResources(got), fmtResources(want))
	}
}

func fmtResources(m map[string]int64) string {
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// checkLabels asserts the labels in want are set to those values and the
// labels in absent are not set.
func checkLabels(r reporter, got map[string]string, want map[string]string, absent ...string) {
	keys := sortedKeys(want)
	for _, k := range keys {
		v, ok := got[k]
		switch {
		case !ok:
			r.Errorf("label %s missing, want %q", k, want[k])
		case v != want[k]:
			r.Errorf("label %s = %q, want %q", k, v, want[k])
		}
	}
	sort.Strings(absent)
	for _, k := range absent {
		if v, ok := got[k]; ok {
			r.Errorf("label %s = %q, want it absent", k, v)
		}
	}
}

func mustSKU(t *testing.T, key string) SKU {
	t.Helper()
	s, err := LookupSKU(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustDevicePluginConfig(t *testing.T, doc string) *DevicePluginConfig {
	t.Helper()
	c, err := ParseDevicePluginConfig([]byte(doc))
	if err != nil {
		t.Fatalf("ParseDevicePluginConfig: %v\n%s", err, doc)
	}
	return c
}

func mustMIGPartedConfig(t *testing.T, doc string) *MIGPartedConfig {
	t.Helper()
	c, err := ParseMIGPartedConfig([]byte(doc))
	if err != nil {
		t.Fatalf("ParseMIGPartedConfig: %v\n%s", err, doc)
	}
	return c
}

// migAll is n GPUs all MIG-enabled with the same devices.
func migAll(n int, devices map[string]int) []GPUState {
	out := make([]GPUState, n)
	for i := range out {
		out[i] = GPUState{MIGEnabled: true, Devices: devices}
	}
	return out
}

// migFirst is n GPUs of which the first enabled are MIG-enabled with devices.
func migFirst(n, enabled int, devices map[string]int) []GPUState {
	out := make([]GPUState, n)
	for i := 0; i < enabled; i++ {
		out[i] = GPUState{MIGEnabled: true, Devices: devices}
	}
	return out
}

// The GPU Operator module the tests read unmodified files from. The version
// is the one pinned for this repository; a require line for the module in
// go.mod, if there is one, takes precedence.
const (
	gpuOperatorModule  = "github.com/NVIDIA/gpu-operator"
	gpuOperatorVersion = "v0.0.0-20250917190837-d73a0086a6ba"
)

var gpuOperator struct {
	once sync.Once
	dir  string
	err  error
}

// gpuOperatorDir returns the directory of the GPU Operator module in the
// module cache, downloading it through the module proxy if needed.
// (fakegpu must not import the e2e harness, so this is a local helper.)
func gpuOperatorDir(t *testing.T) string {
	t.Helper()
	gpuOperator.once.Do(func() {
		version := gpuOperatorVersion
		if v := goModVersion(gpuOperatorModule); v != "" {
			version = v
		}
		cmd := exec.Command("go", "mod", "download", "-json", gpuOperatorModule+"@"+version)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var info struct{ Dir, Error string }
		if jerr := json.Unmarshal(out, &info); jerr != nil && err == nil {
			err = jerr
		}
		switch {
		case err != nil:
			gpuOperator.err = fmt.Errorf("go mod download %s@%s: %v: %s%s", gpuOperatorModule, version, err, info.Error, stderr.String())
		case info.Dir == "":
			gpuOperator.err = fmt.Errorf("go mod download %s@%s: no Dir in output: %s", gpuOperatorModule, version, out)
		default:
			gpuOperator.dir = info.Dir
		}
	})
	if gpuOperator.err != nil {
		t.Fatal(gpuOperator.err)
	}
	return gpuOperator.dir
}

// goModVersion returns the version go.mod requires of module, or "".
func goModVersion(module string) string {
	data, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == module {
			return f[1]
		}
	}
	return ""
}

// readGPUOperatorFile reads a file of the GPU Operator module, unmodified.
func readGPUOperatorFile(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(gpuOperatorDir(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
