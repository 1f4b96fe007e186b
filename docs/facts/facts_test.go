// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package facts

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// shortNames are the names a citation may use, each with its file here
// (README.md, "Citing a fact").
var shortNames = map[string]string{
	"stack-facts":      "nvidia-stack-facts.md",
	"dra-facts":        "dra-facts.md",
	"access":           "gpu-access-facts.md",
	"kubelet-facts":    "kubelet-facts.md",
	"pod-update-facts": "pod-update-facts.md",
	"autoscaler-facts": "autoscaler-facts.md",
	"scheduler-facts":  "scheduler-facts.md",
}

// retired are names that cited a facts file once and must not any more.
var retired = map[string]string{
	"facts":              `ambiguous: cite "stack-facts", "access" or another short name of docs/facts/README.md`,
	"dra":                `write "dra-facts"`,
	"gpu-access-facts":   `write "access"`,
	"nvidia-stack-facts": `write "stack-facts"`,
}

// The files searched for citations, and the directories skipped: build
// output, reports, fuzz and test corpora.
var (
	citingExts = []string{".go", ".md", ".yaml", ".yml", ".sh"}
	skipDirs   = []string{".git", "bin", "testdata", "reports/out", "node_modules"}
)

var (
	// A section sign and its section, perhaps with a step of it
	// ("§4 step 3", "§4 steps 1–2", "§4 steps 5 and 8").
	sectionRE = regexp.MustCompile(`§(\d+(?:\.\d+)*)(?: steps? (\d+)(?:(?:–|-| and | to )(\d+))?)?`)
	// The word a citation names its file by, right before " §".
	nameRE = regexp.MustCompile(`([A-Za-z][A-Za-z0-9.-]*) $`)
	// What starts a comment or quote line, before a citation wrapped
	// onto it.
	leaderRE = regexp.MustCompile(`^[\s/#*>]*`)
	// A line that ends with a word, perhaps the name of a citation whose
	// section is on the next line.
	lastWordRE = regexp.MustCompile(`([A-Za-z][A-Za-z0-9.-]*)$`)

	headingRE  = regexp.MustCompile(`^## (\d+)\.\s`)
	numberedRE = regexp.MustCompile(`^\s*(\d+(?:\.\d+)+)\s`)
	listItemRE = regexp.MustCompile(`^(\d+)\.\s`)
)

// sections lists the sections a facts file has: "n" for a heading
// "## n.", "n.m" for an item numbered "n.m" (at any indentation) or for
// the m-th item "m. " of a numbered list in section n. In a file without
// numbered headings a top-level item "n. " is section n. Code blocks do
// not count.
func sections(text string) map[string]bool {
	have := map[string]bool{}
	current, fenced := "", false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			current = m[1]
			have[current] = true
		} else if m := numberedRE.FindStringSubmatch(line); m != nil {
			have[m[1]] = true
		} else if m := listItemRE.FindStringSubmatch(line); m != nil {
			if current == "" {
				have[m[1]] = true
			} else {
				have[current+"."+m[1]] = true
			}
		}
	}
	return have
}

// citation is one section sign in a line: the name it cites (empty when
// the line names none before it) and the sections it needs.
type citation struct {
	text     string
	name     string
	sections []string
}

// citations finds the section signs of one line. A sign right after a
// word cites that word's file; one after anything else ("access §1.1,
// §3.2") cites the file last named on the line, else carried, the name
// the line before ended with (a citation wrapped between name and
// section), else none.
func citations(line, carried string) []citation {
	var out []citation
	name := ""
	if carried != "" && strings.HasPrefix(line[len(leaderRE.FindString(line)):], "§") {
		name = carried
	}
	for _, loc := range sectionRE.FindAllStringSubmatchIndex(line, -1) {
		m := func(i int) string {
			if loc[2*i] < 0 {
				return ""
			}
			return line[loc[2*i]:loc[2*i+1]]
		}
		text := line[loc[0]:loc[1]]
		if w := nameRE.FindStringSubmatch(line[:loc[0]]); w != nil && isName(w[1]) {
			name = strings.ToLower(w[1])
			text = w[1] + " " + text
		}
		c := citation{text: text, name: name, sections: []string{m(1)}}
		for _, step := range []string{m(2), m(3)} {
			if step != "" {
				c.sections = append(c.sections, m(1)+"."+step)
			}
		}
		out = append(out, c)
	}
	return out
}

// isName says whether a word before " §" names a facts file, rightly or
// not: a short name, a retired one, or anything like a facts file's name.
// Other words ("and §5", "of §8") leave the sign to the name before them.
func isName(word string) bool {
	w := strings.ToLower(word)
	_, short := shortNames[w]
	_, old := retired[w]
	return short || old || strings.HasSuffix(w, "facts") || strings.HasSuffix(w, ".md")
}

// check says what is wrong with a citation, given the sections of each
// facts file and the file the citation is in (a facts file's own bare
// signs cite itself); "" when nothing is.
func check(c citation, have map[string]map[string]bool, self string) string {
	name := c.name
	if name == "" {
		name = self
	}
	if name == "" {
		return "" // a sign whose file its context names: not checked
	}
	if hint, ok := retired[name]; ok {
		return fmt.Sprintf("%q: %s", c.text, hint)
	}
	file, ok := shortNames[name]
	if !ok {
		return fmt.Sprintf("%q: %q is no short name of a facts file (docs/facts/README.md)", c.text, name)
	}
	for _, s := range c.sections {
		if !have[file][s] {
			return fmt.Sprintf("%q: %s has no section %s", c.text, file, s)
		}
	}
	return ""
}

// moduleRoot is the directory above this one that holds go.mod.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// TestCitations holds every citation of a fact in the repository to a
// facts file here and a section that file has.
func TestCitations(t *testing.T) {
	have := map[string]map[string]bool{}
	self := map[string]string{} // facts file → its short name
	for name, file := range shortNames {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		have[file] = sections(string(b))
		self[file] = name
	}
	// Every facts file has a short name.
	mds, _ := filepath.Glob("*.md")
	for _, f := range mds {
		if _, ok := self[f]; !ok && f != "README.md" {
			t.Errorf("docs/facts/%s has no short name: add it to shortNames and README.md", f)
		}
	}

	root := moduleRoot(t)
	cited := map[string]int{} // by short name; "" for signs not checked
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if slices.Contains(skipDirs, rel) || slices.Contains(skipDirs, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !slices.Contains(citingExts, filepath.Ext(path)) || rel == "docs/facts/facts_test.go" {
			return nil // this file's table cites wrongly on purpose
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), "§") {
			return nil
		}
		own := ""
		if dir, file := filepath.Split(rel); dir == "docs/facts/" {
			own = self[file]
		}
		carried := ""
		for i, line := range strings.Split(string(b), "\n") {
			for _, c := range citations(line, carried) {
				if c.name != "" {
					cited[c.name]++
				} else {
					cited[own]++
				}
				if msg := check(c, have, own); msg != "" {
					t.Errorf("%s:%d: %s", rel, i+1, msg)
				}
			}
			carried = ""
			if w := lastWordRE.FindString(line); w != "" && isName(w) {
				carried = strings.ToLower(w)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("citations by short name (\"\": signs whose file the context names): %v", cited)
	if cited["stack-facts"] < 100 {
		t.Errorf("only %d citations of stack-facts found in %s: is the walk right?", cited["stack-facts"], root)
	}
}

// TestSections: how a facts file's sections are read.
func TestSections(t *testing.T) {
	doc := strings.Join([]string{
		"# Title",
		"1. a top-level item before any heading",
		"## 1. First",
		"1.1 an item numbered by hand",
		"   1.2 indented, still numbered",
		"text that mentions 2.0 and 1.9 in passing",
		"## 2. Second",
		"1. the first item of a list in section 2",
		"10. the tenth",
		"```",
		"## 3. inside a code block",
		"```",
	}, "\n")
	var got []string
	for s := range sections(doc) {
		got = append(got, s)
	}
	slices.Sort(got)
	want := []string{"1", "1.1", "1.2", "2", "2.1", "2.10"}
	if !slices.Equal(got, want) {
		t.Errorf("sections = %v, want %v", got, want)
	}
}

// TestFindCitations: what a line cites, and what check says of it.
func TestFindCitations(t *testing.T) {
	have := map[string]map[string]bool{
		"nvidia-stack-facts.md": {"4": true, "4.3": true, "5": true},
		"gpu-access-facts.md":   {"1.1": true, "3.2": true},
	}
	for _, tc := range []struct {
		line, carried, self string
		want                []string // check's verdict per sign, "" for none
	}{
		{line: "// mig-parted (stack-facts §5).", want: []string{""}},
		{line: "// (access §1.1, §3.2)", want: []string{"", ""}},
		{line: "// (access §1.1, §3.3)", want: []string{"", `"§3.3": gpu-access-facts.md has no section 3.3`}},
		{line: "// stack-facts §4 step 3 and §5", want: []string{"", ""}},
		{line: "// stack-facts §4 steps 3–4", want: []string{`"stack-facts §4 steps 3–4": nvidia-stack-facts.md has no section 4.4`}},
		{line: "// (facts §4)", want: []string{`"facts §4": ambiguous: cite "stack-facts", "access" or another short name of docs/facts/README.md`}},
		{line: "// (dra §2)", want: []string{`"dra §2": write "dra-facts"`}},
		{line: "# (harness-facts §1)", want: []string{`"harness-facts §1": "harness-facts" is no short name of a facts file (docs/facts/README.md)`}},
		{line: "// §1.1: a sign whose file the context names", want: []string{""}},
		{line: "// §3.3) wrapped", carried: "access", want: []string{`"§3.3": gpu-access-facts.md has no section 3.3`}},
		{line: "the operator's management spec, §4.4", self: "access", want: []string{`"§4.4": gpu-access-facts.md has no section 4.4`}},
	} {
		var got []string
		for _, c := range citations(tc.line, tc.carried) {
			got = append(got, check(c, have, tc.self))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.line, got, tc.want)
		}
	}
}
