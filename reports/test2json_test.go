// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestT2JParseFrame(t *testing.T) {
	for _, tc := range []struct {
		line string
		ok   bool
		want t2jFrame
	}{
		{"=== RUN   TestA", true, t2jFrame{action: "run", test: "TestA"}},
		{"=== RUN   TestA/b_c#01", true, t2jFrame{action: "run", test: "TestA/b_c#01"}},
		{"=== PAUSE TestA/p", true, t2jFrame{action: "pause", test: "TestA/p"}},
		{"=== CONT  TestA/p", true, t2jFrame{action: "cont", test: "TestA/p"}},
		{"=== NAME  TestA", true, t2jFrame{action: "name", test: "TestA"}},
		{"=== NAME  ", true, t2jFrame{action: "name"}},
		{"=== NAME", true, t2jFrame{action: "name"}},
		{"=== ATTR  TestA key a value", true, t2jFrame{action: "attr", test: "TestA"}},
		{"=== ARTIFACTS TestA /tmp/x", true, t2jFrame{action: "artifacts", test: "TestA"}},
		{"--- PASS: TestA (1.23s)", true, t2jFrame{action: "pass", test: "TestA", report: true, elapsed: 1.23}},
		{"    --- FAIL: TestA/sub (0.50s)", true, t2jFrame{action: "fail", test: "TestA/sub", report: true, indent: 1, elapsed: 0.5}},
		{"        --- SKIP: TestA/b/c (0.00s)", true, t2jFrame{action: "skip", test: "TestA/b/c", report: true, indent: 2}},
		{"--- BENCH: BenchmarkX-8", true, t2jFrame{action: "bench", test: "BenchmarkX-8", report: true}},
		{"--- PASS: TestA (soon)", true, t2jFrame{action: "pass", test: "TestA", report: true}},
		{"    x_test.go:12: hello", false, t2jFrame{indent: 1}},
		{"=== RUN TestA", false, t2jFrame{}},
		{"  --- PASS: TestA (0.00s)", false, t2jFrame{}},
		{"    === RUN   TestA", false, t2jFrame{indent: 1}},
		{"PASS", false, t2jFrame{}},
	} {
		got, ok := parseT2JFrame(tc.line)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseT2JFrame(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

// t2jConvert feeds in to a Converter in pieces of chunk bytes (0: all at once,
// -1: line by line) and returns the events.
func t2jConvert(pkg string, in []byte, chunk int, exit error) []Event {
	var evs []Event
	c := NewConverter(pkg, func(e Event) { evs = append(evs, e) })
	switch {
	case chunk < 0:
		for _, l := range bytes.SplitAfter(in, []byte("\n")) {
			c.Write(l)
		}
	case chunk == 0:
		c.Write(in)
	default:
		for len(in) > 0 {
			n := min(chunk, len(in))
			c.Write(in[:n])
			in = in[n:]
		}
	}
	c.Exited(exit)
	return evs
}

// t2jBrief renders events as "action test output" lines, without Time and Elapsed.
func t2jBrief(evs []Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%s %s %q\n", e.Action, e.Test, e.Output)
	}
	return b.String()
}

func TestConverter(t *testing.T) {
	in := "\x16=== RUN   TestA\n" +
		"    a_test.go:1: hi\n" +
		"\x16=== RUN   TestA/sub\n" +
		"partial\x16--- FAIL: TestA/sub (0.10s)\n" +
		"    a_test.go:2: boom\n" +
		"\x16=== NAME  TestA\n" +
		"--- PASS: NotFraming (0.00s)\n" +
		"\x16--- FAIL: TestA (0.20s)\n" +
		"\x16=== NAME  \n" +
		"\x16FAIL\n"
	want := `start  ""
run TestA ""
output TestA "=== RUN   TestA\n"
output TestA "    a_test.go:1: hi\n"
run TestA/sub ""
output TestA/sub "=== RUN   TestA/sub\n"
output TestA/sub "partial"
output TestA/sub "--- FAIL: TestA/sub (0.10s)\n"
output TestA/sub "    a_test.go:2: boom\n"
fail TestA/sub ""
output TestA "--- PASS: NotFraming (0.00s)\n"
output TestA "--- FAIL: TestA (0.20s)\n"
fail TestA ""
output  "FAIL\n"
fail  ""
`
	for _, chunk := range []int{0, -1, 1, 7} {
		evs := t2jConvert("p", []byte(in), chunk, errors.New("exit status 1"))
		if got := t2jBrief(evs); got != want {
			t.Errorf("chunk %d: got\n%s\nwant\n%s", chunk, got, want)
		}
		for _, e := range evs {
			if e.Package != "p" || e.Time.IsZero() {
				t.Errorf("chunk %d: %+v: want Package p and Time", chunk, e)
			}
			if want := map[string]float64{"TestA/sub": 0.1, "TestA": 0.2}[e.Test]; e.Action == "fail" && e.Test != "" && e.Elapsed != want {
				t.Errorf("chunk %d: %s Elapsed = %v, want %v", chunk, e.Test, e.Elapsed, want)
			}
		}
	}
}

func TestConverterExited(t *testing.T) {
	exit3 := errors.New("exit status 3")
	for _, tc := range []struct {
		name, in string
		err      error
		want     string
	}{
		{"died mid-test", "\x16=== RUN   TestD\nbye\n", exit3,
			"start  \"\"\nrun TestD \"\"\noutput TestD \"=== RUN   TestD\\n\"\noutput TestD \"bye\\n\"\nfail TestD \"\"\nfail  \"\"\n"},
		{"no output", "", exit3, "start  \"\"\noutput  \"test2json: exit status 3\\n\"\nfail  \"\"\n"},
		{"partial last line", "\x16PASS\nbye", nil, "start  \"\"\noutput  \"PASS\\n\"\noutput  \"bye\"\npass  \"\"\n"},
		{"no test files", "?   \tp\t[no test files]\n", nil, "start  \"\"\noutput  \"?   \\tp\\t[no test files]\\n\"\nskip  \"\"\n"},
	} {
		if got := t2jBrief(t2jConvert("p", []byte(tc.in), 0, tc.err)); got != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

func TestConverterLongLines(t *testing.T) {
	in := "\x16=== RUN   TestL\n" + strings.Repeat("é", 3000) + "\n" + strings.Repeat("x", 5000) + "\n\x16PASS\n"
	for _, chunk := range []int{0, 1, 1000} {
		var all strings.Builder
		for _, e := range t2jConvert("p", []byte(in), chunk, nil) {
			if len(e.Output) > t2jMaxChunk || !utf8.ValidString(e.Output) {
				t.Errorf("chunk %d: bad Output piece %q", chunk, e.Output)
			}
			all.WriteString(e.Output)
		}
		if want := strings.ReplaceAll(in, "\x16", ""); all.String() != want {
			t.Errorf("chunk %d: Output does not add up to the input", chunk)
		}
	}
}

// The tests below compare with the real 'go tool test2json'.

func t2jNeedGo(t *testing.T) {
	t.Helper()
	// go test runs where go does: the comparison is never skipped.
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the reference is 'go tool test2json': %v", err)
	}
}

// t2jRef is test2json's event, with pointers to see which fields are set.
type t2jRef struct {
	Action, Package, Test string
	Elapsed               *float64
	Output                *string
}

// t2jSame compares the converter's events with test2json's, ignoring
// Time. Elapsed must be equal, except for the closing results (after the
// last output), where it is wall time: there it must only be set.
func t2jSame(t *testing.T, got []Event, want []t2jRef) {
	t.Helper()
	lastOut := func(n int, isOut func(int) bool) int {
		for i := n - 1; i >= 0; i-- {
			if isOut(i) {
				return i
			}
		}
		return -1
	}
	gotEnd := lastOut(len(got), func(i int) bool { return got[i].Action == "output" })
	wantEnd := lastOut(len(want), func(i int) bool { return want[i].Action == "output" })
	line := func(action, pkg, test, out, elapsed string) string {
		return fmt.Sprintf("%s pkg=%s test=%s elapsed=%s %q", action, pkg, test, elapsed, out)
	}
	var g, w []string
	for i, e := range got {
		el := fmt.Sprint(e.Elapsed)
		if i > gotEnd {
			el = "set"
		}
		g = append(g, line(e.Action, e.Package, e.Test, e.Output, el))
	}
	for i, e := range want {
		el := "0"
		if e.Elapsed != nil {
			el = fmt.Sprint(*e.Elapsed)
		}
		if i > wantEnd && e.Elapsed != nil {
			el = "set"
		}
		w = append(w, line(e.Action, e.Package, e.Test, t2jDeref(e.Output), el))
	}
	for i := range max(len(g), len(w)) {
		if i >= len(g) || i >= len(w) || g[i] != w[i] {
			t.Fatalf("events differ at %d of %d/%d:\n got  %s\n want %s", i, len(g), len(w), t2jAt(g, i), t2jAt(w, i))
		}
	}
}

func t2jAt(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(end)"
}

func t2jParseRef(t *testing.T, js []byte) []t2jRef {
	t.Helper()
	var evs []t2jRef
	dec := json.NewDecoder(bytes.NewReader(js))
	for dec.More() {
		var e t2jRef
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("test2json output: %v", err)
		}
		evs = append(evs, e)
	}
	return evs
}

// t2jMerged joins adjacent output events of the same test: how a line is cut
// into events may depend on how the input was cut into writes.
func t2jMerged(evs []Event) []Event {
	var out []Event
	for _, e := range evs {
		if n := len(out); n > 0 && e.Action == "output" && out[n-1].Action == "output" && out[n-1].Test == e.Test {
			out[n-1].Output += e.Output
			continue
		}
		out = append(out, e)
	}
	return out
}

// TestConverterGolden runs test2json's own test data through the
// Converter, when GOROOT has its sources.
func TestConverterGolden(t *testing.T) {
	t2jNeedGo(t)
	root, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(root)), "src/cmd/internal/test2json/testdata/*.test"))
	if len(files) == 0 {
		t.Fatal("no test2json test data in GOROOT/src/cmd/internal/test2json/testdata: the Go distribution ships it")
	}
	for _, file := range files {
		in, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		js, err := os.ReadFile(strings.TrimSuffix(file, ".test") + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var want []Event // the golden files are made without -t: no Elapsed
		for _, e := range t2jParseRef(t, js) {
			want = append(want, Event{Action: e.Action, Test: e.Test, Output: t2jDeref(e.Output)})
		}
		for _, lines := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/lines=%v", filepath.Base(file), lines), func(t *testing.T) {
				var evs []Event
				c := NewConverter("", func(e Event) { evs = append(evs, e) })
				if lines {
					for _, l := range bytes.SplitAfter(in, []byte("\n")) {
						c.Write(l)
					}
				} else {
					c.Write(in)
				}
				c.close() // end of input without Exited, as these files were made
				if got := t2jBrief(evs); got != t2jBrief(want) {
					t.Errorf("got\n%s\nwant\n%s", got, t2jBrief(want))
				}
			})
		}
	}
}

func t2jDeref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

const t2jProgram = `package t2j

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestPass(t *testing.T) {
	t.Log("logged")
	fmt.Println("printed to stdout")
	fmt.Print("no newline")
}

func TestFail(t *testing.T) {
	t.Error("boom")
	t.Logf("multi\nline")
}

func TestSkip(t *testing.T) { t.Skip("not today") }

func TestNested(t *testing.T) {
	t.Attr("owner", "gpupool team")
	t.Run("a", func(t *testing.T) {
		t.Run("b c", func(t *testing.T) { t.Log("deep") })
		t.Run("fails", func(t *testing.T) { t.Fatal("deep failure") })
	})
	t.Log("after subtests")
	t.Run("skipped", func(t *testing.T) { t.Skip() })
}

func TestParallel(t *testing.T) {
	for i := range 3 {
		t.Run(fmt.Sprint("p", i), func(t *testing.T) {
			t.Parallel()
			t.Log("parallel", i)
			fmt.Println("stdout from", t.Name())
		})
	}
}

func TestLong(t *testing.T) {
	fmt.Println(strings.Repeat("x", 5000))
	fmt.Println(strings.Repeat("é", 3000))
	t.Log(strings.Repeat("y", 2000))
}

func TestLooksLikeFraming(t *testing.T) {
	fmt.Println("--- FAIL: TestFake (0.00s)")
	fmt.Println("=== RUN   TestFake")
	fmt.Println("FAIL")
}

func BenchmarkLog(b *testing.B) {
	for b.Loop() {
	}
	b.Log("bench log")
}

func TestDie(t *testing.T) {
	if os.Getenv("T2J_DIE") == "" {
		t.Skip("set T2J_DIE")
	}
	fmt.Println("about to die")
	t.Log("dying")
	os.Exit(3)
}
`

// buildT2J builds t2jProgram and returns the test binary.
func buildT2J(t *testing.T) string {
	t.Helper()
	t2jNeedGo(t)
	dir := t.TempDir()
	for name, text := range map[string]string{"go.mod": "module example.com/t2j\n\ngo 1.26\n", "t2j_test.go": t2jProgram} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "t2j.test")
	cmd := exec.Command("go", "test", "-c", "-o", bin, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	return bin
}

// runT2J runs the binary as go tool test2json would (stdout and stderr in one stream).
func runT2J(bin string, env []string, args ...string) ([]byte, error) {
	var out bytes.Buffer
	cmd := exec.Command(bin, append([]string{"-test.v=test2json"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// runTest2JSON runs 'go tool test2json -t -p example.com/t2j args...' with the given stdin.
func runTest2JSON(t *testing.T, stdin string, env []string, args ...string) []t2jRef {
	t.Helper()
	cmd := exec.Command("go", append([]string{"tool", "test2json", "-t", "-p", "example.com/t2j"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	if stdin != "" {
		f, err := os.Open(stdin) // a file, so test2json reads it in one piece, like t2jConvert(..., 0, ...)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	js, err := cmd.Output()
	if err != nil && len(js) == 0 {
		t.Fatalf("go tool test2json: %v\n%s", err, stderr.Bytes())
	}
	return t2jParseRef(t, js)
}

func TestConverterMatchesTest2JSON(t *testing.T) {
	bin := buildT2J(t)
	out, exit := runT2J(bin, nil, "-test.bench=.", "-test.benchtime=1x")
	if exit == nil {
		t.Fatalf("want the binary to fail (TestFail), got success:\n%s", out)
	}
	stdin := filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(stdin, out, 0o644); err != nil {
		t.Fatal(err)
	}
	// test2json reading stdin sees no exit status; the final FAIL line gives the result.
	want := runTest2JSON(t, stdin, nil)
	for _, chunk := range []int{0, -1} {
		t.Run(fmt.Sprint(chunk), func(t *testing.T) { t2jSame(t, t2jConvert("example.com/t2j", out, chunk, exit), want) })
	}
	// Writes of 3 bytes may cut a benchmark line differently; compare merged output.
	wantEvs := t2jMerged(t2jConvert("example.com/t2j", out, 0, exit))
	if got := t2jMerged(t2jConvert("example.com/t2j", out, 3, exit)); t2jBrief(got) != t2jBrief(wantEvs) {
		t.Errorf("3-byte writes: got\n%s\nwant\n%s", t2jBrief(got), t2jBrief(wantEvs))
	}
	if last := want[len(want)-1]; last.Action != "fail" || last.Test != "" {
		t.Errorf("test2json ended with %+v, want package fail", last)
	}
}

func TestConverterDiedMatchesTest2JSON(t *testing.T) {
	bin := buildT2J(t)
	env := []string{"T2J_DIE=1"}
	out, exit := runT2J(bin, env, "-test.run=^TestDie$")
	var ee *exec.ExitError
	if !errors.As(exit, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("want exit status 3, got %v:\n%s", exit, out)
	}
	// Here test2json runs the binary itself, to see its exit status.
	want := runTest2JSON(t, "", env, bin, "-test.v=test2json", "-test.run=^TestDie$")
	if last := want[len(want)-1]; last.Action != "fail" {
		t.Fatalf("test2json ended with %+v, want fail", last)
	} else if last.Test != "" {
		// test2json gives the result to the test that was running; Exited
		// follows it with a package-level event.
		last.Test = ""
		want = append(want, last)
	}
	got := t2jConvert("example.com/t2j", out, 0, exit)
	t2jSame(t, got, want)
	if last := got[len(got)-1]; last.Action != "fail" || last.Test != "" || last.Package != "example.com/t2j" {
		t.Errorf("Converter ended with %+v, want package fail", last)
	}
}
