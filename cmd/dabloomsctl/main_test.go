package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/scaling"
	"github.com/spf13/pflag"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

type result struct {
	code           int
	stdout, stderr string
}

// cli runs the real root command in-process.
func cli(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// normaliser rewrites what changes from run to run out of a transcript.
type normaliser struct{ dir string }

var (
	rePID     = regexp.MustCompile(`(pid |"pid": )\d+`)
	reCreated = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	reTmpName = regexp.MustCompile(`\.tmp\d+`)
	// metadata checksums cover the creation time
	reCRC = regexp.MustCompile(`stored [0-9a-f]{8}, computed [0-9a-f]{8}`)
	// add and remove time themselves
	reRate    = regexp.MustCompile(` in [0-9.]+s \([0-9.]+[kM]? keys/s\)`)
	reSeconds = regexp.MustCompile(`"seconds": [0-9.e-]+`)
)

// bootHex is this machine's boot id as the findings print it.
var bootHex = func() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.ReplaceAll(strings.TrimSpace(string(b)), "-", "")
}()

func (n normaliser) apply(s string) string {
	s = strings.ReplaceAll(s, n.dir, "$TMP")
	if bootHex != "" {
		s = strings.ReplaceAll(s, bootHex, "BOOTID")
	}
	s = rePID.ReplaceAllString(s, "${1}PID")
	s = reCreated.ReplaceAllString(s, "CREATED")
	s = reTmpName.ReplaceAllString(s, ".tmpN")
	s = reCRC.ReplaceAllString(s, "stored CRC, computed CRC")
	s = reRate.ReplaceAllString(s, " in Ts (R keys/s)")
	s = reSeconds.ReplaceAllString(s, `"seconds": T`)
	return s
}

// transcript runs steps and records each command with its outputs and exit code.
type transcript struct {
	t    *testing.T
	n    normaliser
	dir  string
	buf  strings.Builder
	last result
}

func newTranscript(t *testing.T) *transcript {
	dir := t.TempDir()
	return &transcript{t: t, n: normaliser{dir: dir}, dir: dir}
}

func (tr *transcript) path(name string) string { return filepath.Join(tr.dir, name) }

// step runs one command line (in which $D stands for the directory) and
// checks its exit code.
func (tr *transcript) step(wantCode int, stdin string, line string) result {
	tr.t.Helper()
	args := strings.Fields(strings.ReplaceAll(line, "$D", tr.dir))
	r := cli(tr.t, stdin, args...)
	fmt.Fprintf(&tr.buf, "$ dabloomsctl %s\n", line)
	if r.stdout != "" {
		fmt.Fprintf(&tr.buf, "--- stdout\n%s", tr.n.apply(r.stdout))
		if !strings.HasSuffix(r.stdout, "\n") {
			tr.buf.WriteString("\n")
		}
	}
	if r.stderr != "" {
		fmt.Fprintf(&tr.buf, "--- stderr\n%s", tr.n.apply(r.stderr))
		if !strings.HasSuffix(r.stderr, "\n") {
			tr.buf.WriteString("\n")
		}
	}
	fmt.Fprintf(&tr.buf, "--- exit %d\n\n", r.code)
	if r.code != wantCode {
		tr.t.Errorf("dabloomsctl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", line, r.code, wantCode, r.stdout, r.stderr)
	}
	tr.last = r
	return r
}

func (tr *transcript) golden(name string) {
	tr.t.Helper()
	checkGolden(tr.t, name, tr.buf.String())
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (go test ./cmd/dabloomsctl -update rewrites it):\n%s", path, diff(string(want), got))
	}
}

// diff shows the first differing lines.
func diff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n  want: %q\n  got:  %q", i+1, w, g)
		}
	}
	return "(no line differs)"
}

func sha(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// readOnly runs a command that must not change the file and checks that the
// file is byte-identical afterwards.
func (tr *transcript) readOnly(wantCode int, file, line string) result {
	tr.t.Helper()
	before := sha(tr.t, tr.path(file))
	r := tr.step(wantCode, "", line)
	if after := sha(tr.t, tr.path(file)); after != before {
		tr.t.Errorf("dabloomsctl %s changed %s", line, file)
	}
	return r
}

func writeLines(t *testing.T, path string, lines []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBasic: create, add, contains, inspect, verify, remove, flush, backup.
func TestBasic(t *testing.T) {
	tr := newTranscript(t)
	var lines []string
	for i := 1; i <= 300; i++ {
		lines = append(lines, fmt.Sprintf("key-%d\t%d", i, i))
	}
	writeLines(t, tr.path("keys.tsv"), lines)
	tr.step(0, "", "create $D/f.dbl --capacity 100 --error-rate 0.01 --seed 0x1234")
	tr.step(1, "", "create $D/f.dbl --capacity 100 --error-rate 0.01 --seed 0x1234")
	tr.step(0, "", "create $D/f.dbl --capacity 100 --error-rate 0.01 --seed 0x1234 --force --json")
	tr.step(0, "", "add $D/f.dbl alpha beta --id 1000")
	tr.step(0, "", "add $D/f.dbl --from $D/keys.tsv --checkpoint 100")
	tr.step(0, "gamma\t2000\ndelta\n", "add $D/f.dbl --from - --id 2001 --json")
	tr.readOnly(0, "f.dbl", "contains $D/f.dbl alpha beta gamma delta key-1 key-300 nope")
	tr.readOnly(0, "f.dbl", "contains $D/f.dbl nope key-7 --json")
	tr.readOnly(0, "f.dbl", "inspect $D/f.dbl")
	tr.readOnly(0, "f.dbl", "inspect $D/f.dbl --json")
	tr.readOnly(0, "f.dbl", "verify $D/f.dbl")
	tr.readOnly(0, "f.dbl", "verify $D/f.dbl --json")
	tr.step(0, "", "remove $D/f.dbl alpha --id 1000")
	tr.step(1, "", "remove $D/f.dbl beta --id 999999")
	tr.readOnly(0, "f.dbl", "contains $D/f.dbl alpha beta")
	tr.step(0, "", "add $D/f.dbl epsilon --id 3000 --no-flush")
	tr.readOnly(0, "f.dbl", "verify $D/f.dbl")
	tr.step(0, "", "flush $D/f.dbl --json")
	tr.step(0, "", "backup $D/f.dbl $D/copy.dbl")
	tr.step(1, "", "backup $D/f.dbl $D/copy.dbl")
	tr.readOnly(0, "copy.dbl", "verify $D/copy.dbl")
	tr.readOnly(0, "copy.dbl", "contains $D/copy.dbl beta epsilon key-150")
	tr.golden("basic")
}

// TestErrors: usage errors exit 2, operational errors 1.
func TestErrors(t *testing.T) {
	tr := newTranscript(t)
	os.WriteFile(tr.path("not.dbl"), bytes.Repeat([]byte("not a dablooms file\n"), 2000), 0o644)
	os.WriteFile(tr.path("bad.tsv"), []byte("k1\t1\nk2\tnot-a-number\n"), 0o644)
	tr.step(2, "", "")
	tr.step(2, "", "frobnicate")
	tr.step(2, "", "add")
	tr.step(2, "", "add $D/f.dbl --bogus")
	tr.step(2, "", "create $D/f.dbl")
	tr.step(2, "", "create $D/f.dbl --capacity 10 --error-rate 1.5")
	tr.step(2, "", "create $D/f.dbl --capacity 10 --error-rate 0.1 --layout weird")
	tr.step(2, "", "create $D/f.dbl --capacity x --error-rate 0.1")
	tr.step(2, "", "verify")
	tr.step(2, "", "inspect a b")
	tr.step(2, "", "add $D/f.dbl")
	tr.step(2, "", "contains $D/f.dbl")
	tr.step(2, "", "inspect $D/f.dbl --progress sometimes")
	tr.step(1, "", "add $D/missing.dbl k")
	tr.step(1, "", "contains $D/missing.dbl k")
	tr.step(1, "", "inspect $D/missing.dbl")
	tr.step(1, "", "verify $D/missing.dbl")
	tr.step(1, "", "flush $D/not.dbl")
	tr.step(1, "", "verify $D/not.dbl")
	tr.step(1, "", "inspect $D/not.dbl")
	tr.step(1, "", "repair $D/not.dbl")
	tr.step(0, "", "create $D/f.dbl --capacity 10 --error-rate 0.1 --seed 1")
	tr.step(1, "", "add $D/f.dbl --from $D/bad.tsv")
	tr.step(1, "", "add $D/f.dbl --from $D/nonexistent.tsv")
	tr.golden("errors")
}

// TestDirtyAndInterrupted: a file marked dirty on another boot, and a file
// with an operation cut short, seen by the read-only commands (which leave
// them byte-identical) and repaired.
func TestDirtyAndInterrupted(t *testing.T) {
	tr := newTranscript(t)
	var lines []string
	for i := 1; i <= 250; i++ {
		lines = append(lines, fmt.Sprintf("link-%d\t%d", i, i))
	}
	writeLines(t, tr.path("truth.tsv"), lines)
	tr.step(0, "", "create $D/d.dbl --capacity 100 --error-rate 0.01 --seed 99")
	tr.step(0, "", "add $D/d.dbl --from $D/truth.tsv")
	// More adds on "another boot", never flushed: the machine's boot id now
	// differs from the one recorded with the dirty mark.
	tr.step(0, "link-251\t251\n", "add $D/d.dbl --from - --no-flush --boot-id other-boot")
	writeLines(t, tr.path("truth.tsv"), append(lines, "link-251\t251"))
	tr.readOnly(3, "d.dbl", "verify $D/d.dbl")
	tr.readOnly(3, "d.dbl", "inspect $D/d.dbl")
	tr.readOnly(0, "d.dbl", "contains $D/d.dbl link-1 link-251")
	tr.step(1, "", "add $D/d.dbl more --id 300")
	tr.step(0, "", "repair $D/d.dbl --dry-run --rebuild-from $D/truth.tsv")
	tr.step(0, "", "repair $D/d.dbl --rebuild-from $D/truth.tsv")
	if _, err := os.Stat(tr.path("d.dbl.bak")); err != nil {
		t.Errorf("no backup kept: %v", err)
	}
	tr.readOnly(0, "d.dbl", "verify $D/d.dbl")
	tr.readOnly(0, "d.dbl", "contains $D/d.dbl link-1 link-100 link-251")

	// An operation cut short: a dead writer's slot record says an add is in
	// flight (as if it was killed right after claiming the record).
	tr.step(0, "", "create $D/i.dbl --capacity 100 --error-rate 0.01 --seed 5")
	tr.step(0, "", "add $D/i.dbl a b c --id 1 --no-flush")
	cutOperation(t, tr.path("i.dbl"), 40)
	tr.readOnly(3, "i.dbl", "verify $D/i.dbl")
	tr.readOnly(3, "i.dbl", "inspect $D/i.dbl --json")
	tr.step(1, "", "add $D/i.dbl d --id 2")
	tr.step(0, "", "repair $D/i.dbl --output $D/i2.dbl")
	tr.readOnly(3, "i.dbl", "verify $D/i.dbl")
	tr.readOnly(0, "i2.dbl", "verify $D/i2.dbl")
	tr.step(0, "", "repair $D/i.dbl --json")
	tr.readOnly(0, "i.dbl", "contains $D/i.dbl a b c")

	// A damaged metadata copy: the other copy is whole.
	tr.step(0, "", "create $D/m.dbl --capacity 100 --error-rate 0.01 --seed 6")
	tr.step(0, "", "add $D/m.dbl x y --id 1")
	damage(t, tr.path("m.dbl"), header.MetaAOffset+100)
	tr.readOnly(3, "m.dbl", "verify $D/m.dbl")
	tr.readOnly(3, "m.dbl", "inspect $D/m.dbl")
	tr.step(0, "", "repair $D/m.dbl")
	tr.readOnly(0, "m.dbl", "verify $D/m.dbl")
	tr.readOnly(0, "m.dbl", "contains $D/m.dbl x y")
	// Both copies damaged: nothing to repair from.
	damage(t, tr.path("m.dbl"), header.MetaAOffset+100)
	damage(t, tr.path("m.dbl"), header.MetaBOffset+100)
	tr.readOnly(3, "m.dbl", "verify $D/m.dbl")
	tr.readOnly(3, "m.dbl", "inspect $D/m.dbl --json")
	tr.step(1, "", "repair $D/m.dbl --output $D/m2.dbl") // nothing written
	tr.golden("unclean")
}

// damage flips a byte of a file.
func damage(t *testing.T, path string, off int64) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var b [1]byte
	fh.ReadAt(b[:], off)
	b[0] ^= 0x5a
	if _, err := fh.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}

// cutOperation writes an in-flight add record (no counter changed yet)
// into writer slot s of a file nobody has open.
func cutOperation(t *testing.T, path string, s int) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], 12345|1)
	fh.WriteAt(b[:], header.SlotOffset(s)+header.SlotOwnerOffset)
	binary.LittleEndian.PutUint64(b[:], header.OpAdd)
	fh.WriteAt(b[:], header.RecordOffset(s, 0)+header.RecOpOffset)
	binary.LittleEndian.PutUint64(b[:], 0xdeadbeef)
	fh.WriteAt(b[:], header.RecordOffset(s, 0)+header.RecHashOffset)
}

// TestHelp: the root help and every subcommand's help are complete.
func TestHelp(t *testing.T) {
	root := newRootCmd(&app{})
	var names []string
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		names = append(names, c.Name())
		if c.Short == "" || c.Long == "" || c.Example == "" {
			t.Errorf("%s: Short, Long and Example must all be set", c.Name())
		}

		if c.Args == nil {
			t.Errorf("%s: no Args validator", c.Name())
		}
		r := cli(t, "", c.Name(), "--help")
		if r.code != 0 || !strings.Contains(r.stdout, c.Example) {
			t.Errorf("%s --help: exit %d, stdout:\n%s", c.Name(), r.code, r.stdout)
		}
		// The usage first, the exit codes last (issue 31).
		if !strings.HasPrefix(r.stdout, "Usage:\n  dabloomsctl "+c.Name()+" ") || !strings.HasSuffix(r.stdout, exitCodesHelp+"\n") {
			t.Errorf("%s --help does not start with its usage and end with the exit codes:\n%s", c.Name(), r.stdout)
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Usage == "" {
				t.Errorf("%s --%s has no usage text", c.Name(), f.Name)
			}
		})
	}
	want := []string{"add", "backup", "bench", "compact", "contains", "create", "flush", "import-dablooms", "inspect", "remove", "repair", "restore", "retire", "upgrade", "verify", "version"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("commands %v, want %v", names, want)
	}
	for _, s := range []string{root.Short, root.Long, root.Example} {
		if s == "" {
			t.Error("root: Short, Long and Example must all be set")
		}
	}
	r := cli(t, "", "--help")
	if r.code != 0 {
		t.Errorf("--help: exit %d", r.code)
	}
	for _, code := range []string{"0  success", "1  operational error", "2  usage error", "3  verify or inspect"} {
		if !strings.Contains(r.stdout, code) {
			t.Errorf("--help does not document exit code %q", code)
		}
	}
	checkGolden(t, "help", r.stdout)
}

// TestBench runs a small benchmark and checks the shape of its output.
func TestBench(t *testing.T) {
	r := cli(t, "", "bench", "--keys", "3000", "--capacity", "1000", "--dir", t.TempDir(), "--json")
	if r.code != 0 {
		t.Fatalf("bench: exit %d: %s", r.code, r.stderr)
	}
	var b benchJSON
	if err := json.Unmarshal([]byte(r.stdout), &b); err != nil {
		t.Fatal(err)
	}
	if b.Schema != "dabloomsctl.bench/v1" || b.Keys != 3000 || b.FalseNeg != 0 || b.Filters < 2 || len(b.Results) != 4 {
		t.Errorf("bench: %+v", b)
	}
	for _, x := range b.Results {
		if x.Ops != 3000 || !(x.NsPerOp > 0) {
			t.Errorf("bench result %+v", x)
		}
	}
	r = cli(t, "", "bench", "-n", "2000", "--dir", t.TempDir(), "-q")
	if r.code != 0 || !regexp.MustCompile(`(?m)^ +add +\d+ +\d+$`).MatchString(r.stdout) || !strings.Contains(r.stdout, "false positives:") {
		t.Errorf("bench text output (exit %d):\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestCancel: a cancelled context stops a bulk add between two operations;
// the file is flushed, consistent and holds exactly the keys processed.
func TestCancel(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.dbl")
	if r := cli(t, "", "create", path, "--capacity", "1000", "--error-rate", "0.01"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var input strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&input, "k%d\t%d\n", i, i)
	}
	// "Ctrl-C" right after the 500th key: the command must stop before the 501st.
	errb := &cancelAt{marker: "checkpoint 500\n", cancel: cancel}
	var out bytes.Buffer
	code := run(ctx, []string{"add", path, "--from", "-", "--json", "--checkpoint", "100"}, strings.NewReader(input.String()), &out, errb)
	if code != exitFail || !strings.Contains(errb.String(), "interrupted after 500 key(s)") {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	var res bulkJSON
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || !res.Flushed || res.Processed != 500 || res.MemSeqnum != 500 || res.DiskSeqnum != 500 || res.Items != 500 {
		t.Errorf("summary %+v", res)
	}
	if r := cli(t, "", "verify", path); r.code != 0 || !strings.Contains(r.stdout, ": clean") {
		t.Errorf("verify after cancel: exit %d\n%s", r.code, r.stdout)
	}
}

// cancelAt is a stderr that cancels when marker is written to it.
type cancelAt struct {
	bytes.Buffer
	marker string
	cancel func()
}

func (c *cancelAt) Write(p []byte) (int, error) {
	if string(p) == c.marker {
		c.cancel()
	}
	return c.Buffer.Write(p)
}

// TestParseLine covers the input format.
func TestParseLine(t *testing.T) {
	for _, c := range []struct {
		in    string
		key   string
		id    uint64
		hasID bool
		err   bool
	}{
		{"k", "k", 0, false, false},
		{"k\t7", "k", 7, true, false},
		{"k\t7\r", "k", 7, true, false},
		{"a\tb\t9", "a\tb", 9, true, false},
		{"k\tx", "", 0, false, true},
		{"k\t-1", "", 0, false, true},
	} {
		key, id, hasID, err := parseLine([]byte(c.in))
		if (err != nil) != c.err || (!c.err && (string(key) != c.key || id != c.id || hasID != c.hasID)) {
			t.Errorf("parseLine(%q) = %q, %d, %v, %v", c.in, key, id, hasID, err)
		}
	}
}

// TestJSONDocumented: every field of every --json document is documented
// in doc.go and in docs/CLI.md.
func TestJSONDocumented(t *testing.T) {
	docs := map[string]string{}
	for _, p := range []string{"doc.go", filepath.Join("..", "..", "docs", "CLI.md")} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs[p] = string(b)
	}
	// CLI.md names a field in code quotes or JSON quotes (`name`, "name");
	// doc.go's plain listings name it as a word.
	documented := func(what, name string) {
		t.Helper()
		for p, d := range docs {
			re := `\b` + name + `\b`
			if strings.HasSuffix(p, ".md") {
				re = "[`\"]" + name + "[`\"]"
			}
			if !regexp.MustCompile(re).MatchString(d) {
				t.Errorf("%s: field %q of %s is not documented", p, name, what)
			}
		}
	}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] {
			return
		}
		seen[typ] = true
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			documented(typ.Name(), name)
			walk(f.Type)
		}
	}
	for _, v := range []any{createJSON{}, bulkJSON{}, reportJSON{}, inspectJSON{}, repairJSON{}, flushJSON{}, backupJSON{}, benchJSON{}, importJSON{}, retireJSON{}, compactJSON{}} {
		walk(reflect.TypeOf(v))
	}
	for _, schema := range []string{"create", "add", "remove", "contains", "verify", "inspect", "repair", "flush", "backup", "bench", "import", "retire", "compact"} {
		for p, d := range docs {
			if !strings.Contains(d, "dabloomsctl."+schema+"/v1") {
				t.Errorf("%s: schema dabloomsctl.%s/v1 is not documented", p, schema)
			}
		}
	}
	// contains writes its document by hand, with no struct to walk: check
	// the field names of a real one.
	path := filepath.Join(t.TempDir(), "c.dbl")
	if r := cli(t, "", "create", path, "--capacity", "10", "--error-rate", "0.1", "-q"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := cli(t, "", "contains", path, "k", "--json")
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("contains --json: %v\n%s", err, r.stdout)
	}
	var fields func(v any)
	fields = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for name, x := range v {
				documented("contains", name)
				fields(x)
			}
		case []any:
			for _, x := range v {
				fields(x)
			}
		}
	}
	fields(doc)
	if res, _ := doc["results"].([]any); len(res) != 1 {
		t.Errorf("contains --json: want one result to check the fields of:\n%s", r.stdout)
	}
}

// TestOneBadCopyExit: a file whose metadata copy A has a bad magic opens
// from copy B: verify and inspect call it damaged, exit 3, in text and
// JSON, and never say it is not a dablooms file (issue 11, item 8).
func TestOneBadCopyExit(t *testing.T) {
	tr := newTranscript(t)
	tr.step(0, "", "create $D/m.dbl --capacity 100 --error-rate 0.01 --seed 6")
	tr.step(0, "", "add $D/m.dbl x y --id 1")
	damage(t, tr.path("m.dbl"), header.MetaAOffset)
	for _, line := range []string{"verify $D/m.dbl", "verify $D/m.dbl --json", "inspect $D/m.dbl", "inspect $D/m.dbl --json"} {
		r := tr.readOnly(3, "m.dbl", line)
		if strings.Contains(r.stderr, "not a dablooms file") {
			t.Errorf("%s: %s", line, r.stderr)
		}
		if strings.HasSuffix(line, "--json") {
			var doc struct {
				State    string `json:"state"`
				ExitCode int    `json:"exit_code"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.State != "damaged" || doc.ExitCode != 3 {
				t.Errorf("%s: state %q, exit_code %d (%v); want damaged, 3", line, doc.State, doc.ExitCode, err)
			}
		}
	}
}

// TestRepairNothingNoBackup: repair of a clean file changes nothing and
// writes no backup, and neither the text nor the JSON names one (issue 11,
// item 11).
func TestRepairNothingNoBackup(t *testing.T) {
	tr := newTranscript(t)
	tr.step(0, "", "create $D/c.dbl --capacity 100 --error-rate 0.01 --seed 7")
	tr.step(0, "", "add $D/c.dbl x y --id 1")
	r := tr.readOnly(0, "c.dbl", "repair $D/c.dbl")
	if strings.Contains(r.stdout, "backup of the original") || !strings.Contains(r.stdout, "no backup was written") {
		t.Errorf("repair of a clean file:\n%s", r.stdout)
	}
	// No finding (not repair's own freeze of the file), and it says the
	// file was left as it is, not "repaired".
	if !strings.Contains(r.stdout, tr.path("c.dbl")+": clean (0 finding(s))") || strings.Contains(r.stdout, "repaired") ||
		!strings.Contains(r.stdout, "nothing to repair: "+tr.path("c.dbl")+" was left as it is") {
		t.Errorf("repair of a clean file must report no finding and say it was left as it is:\n%s", r.stdout)
	}
	r = tr.readOnly(0, "c.dbl", "repair $D/c.dbl --json")
	var doc struct {
		Backup *string `json:"backup"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.Backup == nil || *doc.Backup != "" {
		t.Errorf("repair --json of a clean file: backup %v (%v), want \"\"", doc.Backup, err)
	}
	if _, err := os.Stat(tr.path("c.dbl.bak")); !os.IsNotExist(err) {
		t.Errorf("a backup exists: %v", err)
	}
	// A repair that does replace the file names the backup it kept.
	damage(t, tr.path("c.dbl"), header.MetaBOffset)
	r = tr.step(0, "", "repair $D/c.dbl")
	if !strings.Contains(r.stdout, "backup of the original: "+tr.path("c.dbl.bak")) {
		t.Errorf("repair of a damaged file:\n%s", r.stdout)
	}
	if _, err := os.Stat(tr.path("c.dbl.bak")); err != nil {
		t.Errorf("no backup: %v", err)
	}
}

// TestRemoveAmbiguousGoesOn: remove --from counts a key present in two
// filters for its id (scaling.ErrAmbiguous) like a not-present one, goes on
// with the next lines, reports both counts and exits 1 (issue 11, item 13).
func TestRemoveAmbiguousGoesOn(t *testing.T) {
	tr := newTranscript(t)
	path := tr.path("a.dbl")
	// Adds routed as version 1.0 did (no late-add index): the filling
	// below makes a file whose Removes can be ambiguous.
	o := &scaling.Options{Capacity: 10, ErrorRate: 0.01, Seed: 3}
	testknobs.Set(o, &testknobs.Knobs{LegacyRouting: true})
	f, err := scaling.Create(path, o)
	if err != nil {
		t.Fatal(err)
	}
	add := func(k string, id uint64) {
		if err := f.Add([]byte(k), id); err != nil {
			t.Fatal(err)
		}
	}
	add("dup", 5)
	for i := uint64(1); len(f.Stats().Filters) < 2; i++ {
		add(fmt.Sprint("fill-", i), i)
	}
	// Fill filter 0 past its slack, so that an Add with an id in its range
	// goes to filter 1 (whose range, with version 1.0's routing, then holds
	// that id too; version 1.1 would record it as a late Add).
	for i := 0; f.Stats().Filters[0].Count < 10+10/64+16; i++ {
		add(fmt.Sprint("slack-", i), 5)
	}
	add("dup", 5) // into filter 1
	add("keep", 6)
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	writeLines(t, tr.path("rm.tsv"), []string{"dup\t5", "keep\t6", "never-added\t7"})
	r := tr.step(1, "", "remove $D/a.dbl --from $D/rm.tsv")
	for _, want := range []string{"removed 1 key(s) of 3 processed (1 not present, 1 ambiguous)", `ambiguous: "dup" (id 5)`, `not present: "never-added" (id 7)`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	writeLines(t, tr.path("rm2.tsv"), []string{"dup\t5", "fill-1\t1"})
	r = tr.step(1, "", "remove $D/a.dbl --from $D/rm2.tsv --json")
	var doc struct{ Processed, Changed, NotPresent, Ambiguous uint64 }
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Processed != 2 || doc.Changed != 1 || doc.Ambiguous != 1 {
		t.Errorf("remove --json: %+v, want 2 processed, 1 changed, 1 ambiguous", doc)
	}
}

// TestTruncatedAdvice: verify's advice for a truncated file works: repair
// --rebuild-from into --output makes a clean file holding every key. When
// too much is missing to rebuild, verify says to restore a backup, and
// repair exits 1 without a "re-added" count (issue 11, item 15).
func TestTruncatedAdvice(t *testing.T) {
	tr := newTranscript(t)
	var lines, keys []string
	for i := 1; i <= 500; i++ {
		lines = append(lines, fmt.Sprintf("k%d\t%d", i, i))
		keys = append(keys, fmt.Sprintf("k%d", i))
	}
	writeLines(t, tr.path("keys.tsv"), lines)
	tr.step(0, "", "create $D/f.dbl --capacity 100 --error-rate 0.01 --seed 8")
	tr.step(0, "", "add $D/f.dbl --from $D/keys.tsv")
	st, err := os.Stat(tr.path("f.dbl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(tr.path("f.dbl"), st.Size()-header.PageSize); err != nil {
		t.Fatal(err)
	}
	r := tr.readOnly(3, "f.dbl", "verify $D/f.dbl")
	if !strings.Contains(r.stderr, "it was truncated") || !strings.Contains(r.stderr, "'dabloomsctl repair "+tr.path("f.dbl")+" --rebuild-from KEYS'") {
		t.Errorf("verify's advice: %s", r.stderr)
	}
	// repair without --rebuild-from extends the file, which is then dirty:
	// it says why (the truncation) and what to run, not that the machine
	// restarted (the old code did).
	r = tr.step(3, "", "repair $D/f.dbl --output $D/e.dbl")
	if !strings.Contains(r.stderr, "e.dbl is still dirty: it was truncated to ") || strings.Contains(r.stderr, "restarted") ||
		!strings.Contains(r.stderr, "'dabloomsctl repair "+tr.path("e.dbl")+" --rebuild-from KEYS'") || libraryWords.MatchString(r.stdout) {
		t.Errorf("repair of a truncated file without --rebuild-from:\n%s%s", r.stdout, r.stderr)
	}
	r = tr.step(0, "", "repair $D/f.dbl --rebuild-from $D/keys.tsv --output $D/g.dbl")
	if !strings.Contains(r.stdout, "key(s) re-added") {
		t.Errorf("repair:\n%s", r.stdout)
	}
	tr.readOnly(0, "g.dbl", "verify $D/g.dbl")
	r = tr.readOnly(0, "g.dbl", "contains $D/g.dbl "+strings.Join(keys, " "))
	if strings.Contains(r.stdout, "false") {
		t.Errorf("false negatives after the rebuild:\n%s", r.stdout)
	}

	// More than half of the file gone (a large first filter cut after its
	// first page): nothing can be rebuilt.
	tr.step(0, "", "create $D/big.dbl --capacity 50000 --error-rate 0.01 --seed 8")
	if err := os.Truncate(tr.path("big.dbl"), header.DataOffset+header.PageSize); err != nil {
		t.Fatal(err)
	}
	r = tr.readOnly(3, "big.dbl", "verify $D/big.dbl")
	if !strings.Contains(r.stderr, "restore a backup") || strings.Contains(r.stderr, "--rebuild-from") {
		t.Errorf("verify's advice: %s", r.stderr)
	}
	r = tr.step(1, "", "repair $D/big.dbl --rebuild-from $D/keys.tsv --output $D/h.dbl")
	if strings.Contains(r.stdout, "re-added") {
		t.Errorf("repair that wrote nothing:\n%s", r.stdout)
	}
}

// Every command that opens a file refuses a FIFO at once instead of
// blocking in open(2) (issue 11 item 7: inspect and contains hung).
func TestFIFORefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := mkfifo(path); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"inspect", path}, {"contains", path, "k"}, {"verify", path}, {"add", path, "k"},
		{"remove", path, "k", "--id", "1"}, {"flush", path}, {"repair", path}, {"retire", path, "--before", "1"},
	} {
		done := make(chan result, 1)
		go func() { done <- cli(t, "", args...) }()
		select {
		case r := <-done:
			if r.code != 1 || !strings.Contains(r.stderr, "not a regular file") {
				t.Errorf("%v on a FIFO: exit %d, %q; want 1, not a regular file", args, r.code, r.stderr)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%v on a FIFO blocked", args)
		}
	}
}
