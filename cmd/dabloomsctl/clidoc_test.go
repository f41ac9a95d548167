//go:build unix

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// docExample is one ```console block of docs/CLI.md: commands, each with
// the output it must print.
type docExample struct {
	line  int // of the block's first command in CLI.md
	steps []docStep
}

type docStep struct {
	line int    // of the command in CLI.md
	cmd  string // after "$ "
	want []string
	exit int // [exit N] after the output; 0 without
}

// parseDocExamples reads the ```console blocks of a Markdown text. In a
// block, a line "$ CMD" is a command for bash, and the lines after it, up to
// the next command, are what it prints (stdout and stderr, as a terminal
// shows them), with these placeholders:
//
//   - "[...]" in a line stands for any text within the line;
//   - a line "..." stands for any number of lines, none included;
//   - a last line "[exit N]" says the command exits N (without it, 0).
func parseDocExamples(text string) ([]docExample, error) {
	var out []docExample
	var cur *docExample
	sc := bufio.NewScanner(strings.NewReader(text))
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		switch {
		case cur == nil && l == "```console":
			cur = &docExample{line: n + 1}
		case cur == nil:
		case l == "```":
			if len(cur.steps) == 0 {
				return nil, fmt.Errorf("line %d: a console block without a $ command", cur.line)
			}
			out = append(out, *cur)
			cur = nil
		case strings.HasPrefix(l, "$ "):
			cur.steps = append(cur.steps, docStep{line: n, cmd: l[2:]})
		case len(cur.steps) == 0:
			return nil, fmt.Errorf("line %d: output before the first $ command of a console block", n)
		default:
			s := &cur.steps[len(cur.steps)-1]
			if m := reExitLine.FindStringSubmatch(l); m != nil {
				s.exit, _ = strconv.Atoi(m[1])
				continue
			}
			s.want = append(s.want, l)
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: a console block that does not end", cur.line)
	}
	return out, nil
}

var reExitLine = regexp.MustCompile(`^\[exit (\d+)\]$`)

// matchLines says whether got matches want, with want's placeholders.
func matchLines(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for i := 0; i <= len(got); i++ {
			if matchLines(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && lineRegexp(want[0]).MatchString(got[0]) && matchLines(want[1:], got[1:])
}

func lineRegexp(want string) *regexp.Regexp {
	parts := strings.Split(want, "[...]")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}

// TestCLIDocExamples runs the ```console examples of docs/CLI.md with the
// built binary, each block in a directory of its own holding a copy of
// the original C dablooms' sample files (testdata/dablooms-0.9.1/*.bin),
// and checks
// that every command prints what the document shows and exits as it says:
// an example whose output changed fails here, not in a user's terminal.
func TestCLIDocExamples(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "CLI.md"))
	if err != nil {
		t.Fatal(err)
	}
	examples, err := parseDocExamples(string(doc))
	if err != nil {
		t.Fatalf("docs/CLI.md: %v", err)
	}
	if len(examples) < 3 {
		t.Fatalf("docs/CLI.md has %d console examples: the parser missed them", len(examples))
	}
	bin := buildBinary(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to run the examples with")
	}
	env := append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"), "LC_ALL=C", "TZ=UTC")
	samples, err := filepath.Glob(filepath.Join("..", "..", "testdata", "dablooms-0.9.1", "*.bin"))
	if err != nil || len(samples) == 0 {
		t.Fatalf("the original's sample files: %v %v", samples, err)
	}
	for _, ex := range examples {
		dir := t.TempDir()
		for _, f := range samples {
			b, err := os.ReadFile(f)
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range ex.steps {
			cmd := exec.Command(bash, "-c", s.cmd)
			cmd.Dir, cmd.Env = dir, env
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatalf("docs/CLI.md:%d: %s: %v", s.line, s.cmd, err)
			}
			got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			if len(out) == 0 {
				got = nil
			}
			if code != s.exit || !matchLines(s.want, got) {
				t.Errorf("docs/CLI.md:%d: $ %s\nexit %d, output:\n%s\nthe document shows exit %d and:\n%s",
					s.line, s.cmd, code, out, s.exit, strings.Join(s.want, "\n"))
			}
		}
	}
}

// The placeholders match what they say, and no more.
func TestDocExamplePlaceholders(t *testing.T) {
	ex, err := parseDocExamples("text\n```console\n$ a\nx [...] z\n...\nlast\n[exit 3]\n$ b\n```\n")
	if err != nil || len(ex) != 1 || len(ex[0].steps) != 2 || ex[0].steps[0].exit != 3 || ex[0].steps[1].want != nil {
		t.Fatalf("parsed %+v, %v", ex, err)
	}
	want := ex[0].steps[0].want
	for _, c := range []struct {
		got string
		ok  bool
	}{
		{"x y z\nlast", true},
		{"x  z\n1\n2\nlast", true},
		{"x y z\nlast\nmore", false},
		{"x y\nlast", false},
		{"w x y z\nlast", false},
	} {
		if matchLines(want, strings.Split(c.got, "\n")) != c.ok {
			t.Errorf("%q against %q: want %v", c.got, want, c.ok)
		}
	}
	for _, bad := range []string{"```console\n```\n", "```console\nout\n$ a\n```\n", "```console\n$ a\n"} {
		if _, err := parseDocExamples(bad); err == nil {
			t.Errorf("%q parsed without an error", bad)
		}
	}
}

// reQuotedGolden finds the plain blocks of docs/CLI.md that quote a golden
// transcript: the paragraph before the block names it.
var reQuotedGolden = regexp.MustCompile("(?s)cmd/dabloomsctl/(testdata/[a-z]+\\.golden)[^`]*?\n\n```\n(.*?)```\n")

// A block of docs/CLI.md quoted from a golden transcript (output that
// needs a file no command makes, such as one a writer left mid-add) holds
// only lines that transcript has, which the tests keep true.
func TestCLIDocQuotesGolden(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "CLI.md"))
	if err != nil {
		t.Fatal(err)
	}
	quotes := reQuotedGolden.FindAllStringSubmatch(string(doc), -1)
	if len(quotes) == 0 {
		t.Fatal("docs/CLI.md quotes no golden transcript: the pattern missed it")
	}
	for _, q := range quotes {
		golden, err := os.ReadFile(q[1])
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.ReplaceAll(string(golden), "$TMP/", ""), "\n")
		for _, want := range strings.Split(strings.TrimSuffix(q[2], "\n"), "\n") {
			if !slices.Contains(lines, want) {
				t.Errorf("docs/CLI.md quotes %s, which has no line\n%s", q[1], want)
			}
		}
	}
}
