package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mustCreate creates the file path with the create flags given, failing
// the test if create fails.
func mustCreate(t *testing.T, path string, flags ...string) {
	t.Helper()
	if r := cli(t, "", append([]string{"create", path, "-q"}, flags...)...); r.code != 0 {
		t.Fatalf("create %s: exit %d: %s", path, r.code, r.stderr)
	}
}

// newFile creates a small file for the input tests.
func newFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.dbl")
	mustCreate(t, path, "--capacity", "1000", "--error-rate", "0.01")
	return path
}

// contained returns contains' answers for keys, "k\ttrue\n..." in order.
func contained(t *testing.T, path string, keys ...string) string {
	t.Helper()
	r := cli(t, "", append([]string{"contains", path}, keys...)...)
	if r.code != 0 {
		t.Fatalf("contains: exit %d: %s", r.code, r.stderr)
	}
	return r.stdout
}

// The input rules of docs/CLI.md, Conventions (issue 31, "Input").
func TestInputBOM(t *testing.T) {
	path := newFile(t)
	if r := cli(t, "\xef\xbb\xbfk1\t1\nk2\t2\n", "add", path, "--from", "-", "-q"); r.code != 0 {
		t.Fatalf("add: exit %d: %s", r.code, r.stderr)
	}
	if got := contained(t, path, "k1", "\xef\xbb\xbfk1"); got != "k1\ttrue\n\xef\xbb\xbfk1\tfalse\n" {
		t.Errorf("a UTF-8 BOM at the start of the input was kept in the first key: %q", got)
	}
}

func TestInputCROnly(t *testing.T) {
	path := newFile(t)
	r := cli(t, "a\t1\rb\t2\rc\t3\r", "add", path, "--from", "-")
	if r.code != 1 || !strings.Contains(r.stderr, "<stdin>:1: a carriage return (CR) inside the line") {
		t.Errorf("CR-only line ends: exit %d, %q", r.code, r.stderr)
	}
	if got := contained(t, path, "a", "a\t1\rb\t2\rc"); strings.Contains(got, "true") {
		t.Errorf("CR-only input added a key: %q", got)
	}
	// A CRLF file is fine.
	if r := cli(t, "a\t1\r\nb\t2\r\n", "add", path, "--from", "-", "-q"); r.code != 0 {
		t.Errorf("CRLF input: exit %d, %q", r.code, r.stderr)
	}
	if got := contained(t, path, "a", "b"); got != "a\ttrue\nb\ttrue\n" {
		t.Errorf("CRLF input: %q", got)
	}
}

// A line of only spaces and tabs is skipped with a warning, one ending in
// a tab included (the old code stopped at a lone tab: bad id "" after the
// tab), as docs/CLI.md says.
func TestInputBlankLines(t *testing.T) {
	path := newFile(t)
	r := cli(t, "k\t1\n   \n\n \t \t5\n\t\n \t\nm\t2\n", "add", path, "--from", "-", "--json")
	if r.code != 0 || !strings.Contains(r.stderr, "<stdin>: skipped 4 line(s) whose key is only spaces or tabs (the first is line 2)") {
		t.Errorf("whitespace-only lines: exit %d, %q", r.code, r.stderr)
	}
	var doc bulkJSON
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.Changed != 2 {
		t.Errorf("whitespace-only lines were added: %+v %v", doc, err)
	}
	if got := contained(t, path, "   ", " \t "); got != "   \tfalse\n \t \tfalse\n" {
		t.Errorf("whitespace-only keys are present: %q", got)
	}
}

func TestRemoveNeedsID(t *testing.T) {
	path := newFile(t)
	if r := cli(t, "", "add", path, "k", "--id", "0", "-q"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := cli(t, "", "remove", path, "k")
	if r.code != 2 || !strings.Contains(r.stderr, "remove needs --id") {
		t.Errorf("remove without --id: exit %d, %q", r.code, r.stderr)
	}
	r = cli(t, "k\n", "remove", path, "--from", "-")
	if r.code != 1 || !strings.Contains(r.stderr, "<stdin>:1: no id") {
		t.Errorf("remove --from a line without an id: exit %d, %q", r.code, r.stderr)
	}
	if got := contained(t, path, "k"); got != "k\ttrue\n" {
		t.Errorf("k was removed: %q", got)
	}
	if r := cli(t, "k\n", "remove", path, "--from", "-", "--id", "0", "-q"); r.code != 0 {
		t.Errorf("remove --id 0: exit %d, %q", r.code, r.stderr)
	}
	if got := contained(t, path, "k"); got != "k\tfalse\n" {
		t.Errorf("k was not removed: %q", got)
	}
}

// An id above 2^63-1 in --from names the line and the limit in words (the
// library's refusal comes mid-batch, which TestBulkStopsAtFailure relies on).
func TestLineIDTooLarge(t *testing.T) {
	path := newFile(t)
	r := cli(t, "a\t1\nb\t9223372036854775808\n", "add", path, "--from", "-")
	if r.code != 1 || !strings.Contains(r.stderr, `dabloomsctl: <stdin>:2: add "b": id 9223372036854775808 is above 2^63-1, the largest id a key can have`) {
		t.Errorf("an id above 2^63-1: exit %d, %q", r.code, r.stderr)
	}
	checkWords(t, "an id above 2^63-1", r.stderr)
	// Every per-line error names FILE:LINE, the library's refusals (the
	// old code said "line 2:" alone) as the parser's; and the parser's
	// states the limit, not "a decimal uint64".
	in := filepath.Join(t.TempDir(), "ids.tsv")
	writeLines(t, in, []string{"a\t1", "b\t9223372036854775808"})
	r = cli(t, "", "add", path, "--from", in)
	if r.code != 1 || !strings.Contains(r.stderr, "\ndabloomsctl: "+in+`:2: add "b": id 9223372036854775808 is above 2^63-1`) {
		t.Errorf("an id above 2^63-1 in a file: exit %d, %q", r.code, r.stderr)
	}
	writeLines(t, in, []string{"a\t1", "b\t99999999999999999999"})
	r = cli(t, "", "add", path, "--from", in)
	if r.code != 1 || !strings.Contains(r.stderr, "\ndabloomsctl: "+in+`:2: bad id "99999999999999999999" after the tab (want KEY or KEY<TAB>ID with ID a decimal from 0 to 2^63-1)`) {
		t.Errorf("an id above 2^64-1 in a file: exit %d, %q", r.code, r.stderr)
	}
}

func TestLongLine(t *testing.T) {
	path := newFile(t)
	in := filepath.Join(t.TempDir(), "huge.tsv")
	if err := os.WriteFile(in, []byte("a\t1\n"+strings.Repeat("x", maxLine+10)+"\t2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := cli(t, "", "add", path, "--from", in)
	if r.code != 1 || !strings.Contains(r.stderr, in+":2: line longer than 16 MiB") {
		t.Errorf("a line over 16 MiB: exit %d, %q", r.code, r.stderr)
	}
	checkWords(t, "a line over 16 MiB", r.stderr)
}

// --skip N resumes a load killed after "checkpoint N": the checkpoints go
// on counting from the start of the input.
func TestSkipResumes(t *testing.T) {
	path := newFile(t)
	var in strings.Builder
	var keys []string
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&in, "k%d\t%d\n", i, i)
		keys = append(keys, fmt.Sprintf("k%d", i))
	}
	r := cli(t, in.String(), "add", path, "--from", "-", "--skip", "4", "--checkpoint", "3", "--json")
	if r.code != 0 || r.stderr != "checkpoint 6\ncheckpoint 9\n" {
		t.Errorf("add --skip 4 --checkpoint 3: exit %d, stderr %q", r.code, r.stderr)
	}
	var doc bulkJSON
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.Skipped != 4 || doc.Processed != 6 || doc.Changed != 6 {
		t.Errorf("add --skip 4: %+v %v", doc, err)
	}
	var want strings.Builder
	for i, k := range keys {
		fmt.Fprintf(&want, "%s\t%t\n", k, i >= 4)
	}
	if got := contained(t, path, keys...); got != want.String() {
		t.Errorf("after --skip 4:\n%s\nwant\n%s", got, want.String())
	}
	r = cli(t, in.String(), "add", path, "--from", "-", "--skip", "20")
	if r.code != 0 || !strings.Contains(r.stderr, "the input holds only 10 key(s)") {
		t.Errorf("--skip past the end: exit %d, %q", r.code, r.stderr)
	}
}

// numberedKeys writes n lines "kI<TAB>I" (I from 1) to a file of keys and
// returns its path and its text.
func numberedKeys(t *testing.T, n int) (path, text string) {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "k%d\t%d\n", i, i)
	}
	path = filepath.Join(t.TempDir(), "k.tsv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b.String()
}

// The progress bar counts keys and keys/s, not bytes; the summary gives
// the time and the rate.
func TestProgressInKeys(t *testing.T) {
	path := newFile(t)
	in, _ := numberedKeys(t, 5000)
	r := cli(t, "", "add", path, "--from", in, "--progress", "always")
	if r.code != 0 || !strings.Contains(r.stderr, "5000 keys, ") || !strings.Contains(r.stderr, " keys/s") || strings.Contains(r.stderr, "B/s") {
		t.Errorf("progress: exit %d, %q", r.code, r.stderr)
	}
	if !reRate.MatchString(r.stderr) {
		t.Errorf("summary without time and rate: %q", r.stderr)
	}
}

// On a terminal of 0 columns the bar, redrawn in place, printed only "\r":
// progress is then a line now and then, and a last one at the end.
func TestProgressNoColumns(t *testing.T) {
	defer func(f func() (int, error)) { terminalWidth = f }(terminalWidth)
	terminalWidth = func() (int, error) { return 0, nil }
	path := newFile(t)
	in, text := numberedKeys(t, 5000)
	r := cli(t, "", "add", path, "--from", in, "--progress", "always")
	if r.code != 0 || strings.Contains(r.stderr, "\r") || !strings.Contains(r.stderr, "add: 5000 keys, ") ||
		!strings.Contains(r.stderr, "100.00% read\n") {
		t.Errorf("progress on 0 columns: exit %d, %q", r.code, r.stderr)
	}
	r = cli(t, text, "contains", path, "--from", "-", "--progress", "always")
	if r.code != 0 || strings.Contains(r.stderr, "\r") || !strings.Contains(r.stderr, "contains: 5000 keys, ") {
		t.Errorf("progress on 0 columns, stdin: exit %d, %q", r.code, r.stderr)
	}
}
