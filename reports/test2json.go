// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package reports

// A test2json converter that needs no go toolchain at run time. It mirrors
// 'go tool test2json -t -p PKG' (cmd/internal/test2json, which cannot be
// imported). The input format, as printed by the testing package:
//
//   - Framing lines announce tests: "=== RUN   T", "=== PAUSE T", "=== CONT  T",
//     "=== NAME  T", "=== ATTR  T key value", "=== ARTIFACTS T dir", and
//     results "--- PASS: T (1.23s)" (also FAIL, SKIP, BENCH), indented four
//     spaces per level when a parent prints a subtest's result. Under
//     -test.v=test2json each framing line starts with ^V, so output that
//     merely looks like framing is not mistaken for it.
//   - Any other line is output of the test named by the latest framing line,
//     except that indented lines after "--- " results belong to the result
//     at that depth.
//   - "PASS" or "FAIL" alone ends the run (go test adds "FAIL\tpkg\t1.2s").

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

const (
	t2jMarker   = 0x16 // ^V, put before framing lines by -test.v=test2json
	t2jMaxLine  = 4096 // longer lines cannot be framing and are passed on in pieces
	t2jMaxChunk = 1024 // longest Output of one event; longer lines become several events
)

// Converter turns the output of a test binary run with -test.v=test2json
// into test2json events, as 'go tool test2json -t -p pkg' does.
// Write and Exited may be called from different goroutines; emit is called
// with the Converter locked and must not call back into it.
type Converter struct {
	mu         sync.Mutex
	pkg        string
	emit       func(Event)
	start      time.Time
	test       string  // test that output is currently attributed to
	reports    []Event // "--- " results held back, outermost first, until their indented output is done
	result     string  // package result so far, from PASS/FAIL lines
	needMarker bool    // a ^V framing line was seen: unmarked lines are plain output from now on
	wrote      bool    // the binary printed anything
	exited     bool
	in, out    t2jSplitter // lines of input; Output pieces of at most t2jMaxChunk bytes
}

// NewConverter returns a Converter that calls emit for each event, starting
// with the "start" event, sent at once.
func NewConverter(pkg string, emit func(Event)) *Converter {
	c := &Converter{pkg: pkg, emit: emit, start: time.Now()}
	c.in = t2jSplitter{buf: make([]byte, 0, t2jMaxLine), line: c.handleLine, part: c.out.write}
	c.out = t2jSplitter{buf: make([]byte, 0, t2jMaxChunk), line: c.emitOutput, part: c.emitOutput}
	c.send(Event{Action: "start"})
	return c
}

// Write takes the binary's combined stdout and stderr, in pieces of any size.
func (c *Converter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.exited {
		c.wrote = c.wrote || len(p) > 0
		c.in.write(p)
	}
	return len(p), nil
}

// Exited is to be called once the binary has exited, with cmd.Wait's error.
// It flushes buffered output and sends the package result: like test2json,
// "fail" if err != nil, else "pass" (or "skip" for "[no test files]").
//
// One difference: when the binary died mid-test (no final PASS/FAIL line),
// test2json sends that result with Test set to the test that was running.
// Exited sends that event too, then the same result as a package-level
// event, so that the stream always ends with one.
func (c *Converter) Exited(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.exited {
		return
	}
	if err != nil && !c.wrote {
		c.in.write(fmt.Appendf(nil, "test2json: %v\n", err)) // test2json's note when nothing says why
	}
	switch {
	case err != nil:
		c.result = "fail"
	case c.result != "skip":
		c.result = "pass"
	}
	c.close()
}

// close flushes partial lines and sends the result, if known. Held "---"
// reports are dropped, as test2json does.
func (c *Converter) close() {
	c.exited = true
	c.in.flush()
	c.out.flush()
	if c.result == "" {
		return
	}
	e := Event{Action: c.result, Elapsed: time.Since(c.start).Round(time.Millisecond).Seconds()}
	c.send(e) // Test becomes c.test, as in test2json
	if c.test != "" {
		c.test = ""
		c.send(e)
	}
}

// handleLine handles one whole line (with its \n, if any) of input.
func (c *Converter) handleLine(line []byte) {
	framed := line[0] == t2jMarker
	if c.needMarker && !framed {
		c.out.write(line)
		return
	}
	if framed {
		c.out.flush() // output left without \n belongs to the test before this line
		line = line[1:]
	}
	trim := string(line)
	if s, ok := strings.CutSuffix(trim, "\n"); ok {
		trim = strings.TrimSuffix(s, "\r")
	}

	if trim == "PASS" || trim == "FAIL" || strings.HasPrefix(trim, "FAIL\t") {
		c.flushReports(0)
		c.needMarker = framed
		c.out.write(line)
		c.result = strings.ToLower(trim[:4])
		return
	}
	if strings.HasPrefix(trim, "?   \t") && strings.HasSuffix(trim, "\t[no test files]") && len(c.reports) == 0 {
		c.result = "skip" // printed by go test for a package without tests; still plain output
	}

	f, ok := parseT2JFrame(trim)
	if !ok {
		if f.indent > 0 && f.indent <= len(c.reports) {
			c.test = c.reports[f.indent-1].Test
		}
		c.out.write(line)
		return
	}
	e := Event{Action: f.action, Test: f.test, Elapsed: f.elapsed}
	if f.report {
		if f.indent > len(c.reports) { // deeper than any open result: not framing after all
			c.out.write(line)
			return
		}
		c.needMarker = framed
		c.flushReports(f.indent) // results of siblings and their subtests are complete
		c.test = f.test
		c.reports = append(c.reports, e)
		c.out.write(line)
		return
	}
	c.needMarker = framed
	c.flushReports(0)
	c.test = f.test
	switch f.action {
	case "name": // only moves output attribution
	case "pause": // the PAUSE line is the test's last output before the pause
		c.out.write(line)
		c.send(e)
	default:
		c.send(e)
		c.out.write(line)
	}
}

// flushReports sends the held results deeper than depth, innermost first.
func (c *Converter) flushReports(depth int) {
	c.test = ""
	for len(c.reports) > depth {
		e := c.reports[len(c.reports)-1]
		c.reports = c.reports[:len(c.reports)-1]
		c.send(e)
	}
}

func (c *Converter) emitOutput(b []byte) { c.send(Event{Action: "output", Output: string(b)}) }

func (c *Converter) send(e Event) {
	e.Time, e.Package = time.Now(), c.pkg
	if e.Test == "" {
		e.Test = c.test
	}
	c.emit(e)
}

// t2jFrame is a parsed framing line.
type t2jFrame struct {
	action  string // run, pause, cont, name, attr, artifacts; pass, fail, skip, bench
	test    string
	report  bool    // a "--- " result rather than a "=== " update
	indent  int     // leading four-space groups of a result (also set for non-framing lines)
	elapsed float64 // from a result's "(1.23s)"
}

var (
	t2jUpdates = []string{"=== RUN   ", "=== PAUSE ", "=== CONT  ", "=== NAME  ", "=== PASS  ",
		"=== FAIL  ", "=== SKIP  ", "=== ATTR  ", "=== ARTIFACTS "}
	t2jReports = []string{"--- PASS: ", "--- FAIL: ", "--- SKIP: ", "--- BENCH: "}
)

// parseT2JFrame parses a line without ^V and line end. For non-framing lines
// it reports false and the line's indentation.
func parseT2JFrame(s string) (f t2jFrame, ok bool) {
	if s == "=== NAME" { // "=== NAME  " (no test) can lose its trailing blanks
		return t2jFrame{action: "name"}, true
	}
	hasPrefix := func(prefixes []string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(s, p) {
				return true
			}
		}
		return false
	}
	if !hasPrefix(t2jUpdates) {
		for strings.HasPrefix(s, "    ") {
			s, f.indent = s[4:], f.indent+1
		}
		if !hasPrefix(t2jReports) {
			return f, false
		}
		f.report = true
	}
	action, name, _ := strings.Cut(s[len("=== "):], " ")
	f.action = strings.ToLower(strings.TrimSuffix(action, ":"))
	f.test = strings.TrimSpace(name)
	switch {
	case f.report:
		if i := strings.Index(f.test, " ("); i >= 0 {
			if d, ok := strings.CutSuffix(f.test[i+2:], "s)"); ok {
				if v, err := strconv.ParseFloat(d, 64); err == nil {
					f.elapsed = v
				}
			}
			f.test = f.test[:i]
		}
	case f.action == "attr" || f.action == "artifacts":
		f.test, _, _ = strings.Cut(f.test, " ") // key/value and path have no field in Event
	}
	return f, true
}

// t2jSplitter cuts a byte stream into lines for line. Lines longer than
// buf's capacity go to part in pieces cut at UTF-8 boundaries, so memory
// stays bounded. A ^V not at the start of a line ends the line before it
// (zero-width): a framing line may follow output that lacks its \n.
type t2jSplitter struct {
	buf        []byte
	mid        bool // part has been given the start of the current line
	line, part func([]byte)
}

func (s *t2jSplitter) write(p []byte) {
	for len(p) > 0 {
		n := copy(s.buf[len(s.buf):cap(s.buf)], p)
		s.buf, p = s.buf[:len(s.buf)+n], p[n:]
		i := 0 // start of unprocessed bytes
		for i < len(s.buf) {
			end, width := t2jLineEnd(s.buf[i:])
			if end < 0 {
				// A benchmark prints its name and a tab before it runs;
				// pass the name on now rather than when the result line ends.
				if !s.mid {
					if tab := bytes.IndexByte(s.buf[i:], '\t'); tab >= 0 && t2jBenchName(bytes.TrimRight(s.buf[i:i+tab], " ")) {
						s.part(s.buf[i : i+tab+1])
						s.mid = true
						i += tab + 1
					}
				}
				break
			}
			if s.mid {
				s.part(s.buf[i : i+end+width])
			} else {
				s.line(s.buf[i : i+end+width])
			}
			s.mid = false
			i += end + width
		}
		if i == 0 && len(s.buf) == cap(s.buf) { // full, no line end: pass on a piece
			i = t2jUTF8Cut(s.buf)
			s.part(s.buf[:i])
			s.mid = true
		}
		s.buf = s.buf[:copy(s.buf, s.buf[i:])]
	}
}

// flush passes on a pending partial line.
func (s *t2jSplitter) flush() {
	if len(s.buf) > 0 {
		s.part(s.buf)
		s.buf = s.buf[:0]
	}
}

// t2jLineEnd returns where the first line in b ends and the width of its end
// (1 for \n, 0 for a ^V that starts the next line), or -1.
func t2jLineEnd(b []byte) (end, width int) {
	for i, c := range b {
		if c == '\n' {
			return i, 1
		}
		if c == t2jMarker && i > 0 {
			return i, 0
		}
	}
	return -1, 0
}

// t2jUTF8Cut returns the length of b without an incomplete UTF-8 sequence at its end.
func t2jUTF8Cut(b []byte) int {
	for k := 1; k < utf8.UTFMax && k <= len(b); k++ {
		c := b[len(b)-k]
		if c&0xc0 == 0x80 { // continuation byte: look further back
			continue
		}
		if c&0xe0 == 0xc0 && k < 2 || c&0xf0 == 0xe0 && k < 3 || c&0xf8 == 0xf0 && k < 4 {
			return len(b) - k
		}
		break
	}
	return len(b)
}

// t2jBenchName reports whether b can be a benchmark name such as BenchmarkX-8.
func t2jBenchName(b []byte) bool {
	rest, ok := bytes.CutPrefix(b, []byte("Benchmark"))
	if !ok {
		return false
	}
	r, _ := utf8.DecodeRune(rest)
	return len(rest) == 0 || !unicode.IsLower(r)
}
