package main

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
)

// internals are words of the library's messages that a user of the CLI
// should not meet: package names, system calls, Go API options.
var internals = []string{"mmapfile:", "statfs", "strconv.", "AllowUnclean", "run recovery", "+Inf counters", "open " /* "open X: open X:" */, "dablooms: "}

func checkWords(t *testing.T, what, stderr string) {
	t.Helper()
	for _, w := range internals {
		if strings.Contains(stderr, w) {
			t.Errorf("%s: stderr shows internals (%q):\n%s", what, w, stderr)
		}
	}
	for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if line != "" && !strings.HasPrefix(line, "dabloomsctl: ") && !strings.HasPrefix(line, "Run '") &&
			!strings.HasPrefix(line, "added ") && !strings.HasPrefix(line, "removed ") {
			t.Errorf("%s: a line of stderr lacks the dabloomsctl: prefix: %q", what, line)
		}
	}
}

// Errors of the library come out in words a user understands, naming the
// file once (issue 31, "Messages that show internals").
func TestMessagesInWords(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.dbl")
	mustCreate(t, path, "--capacity", "10", "--error-rate", "0.1")
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"create", path, "--capacity", "10", "--error-rate", "0.1"}, 1, path + " already exists"},
		{[]string{"create", filepath.Join(dir, "no", "x.dbl"), "--capacity", "10", "--error-rate", "0.1"}, 1, "the directory " + filepath.Join(dir, "no") + " does not exist"},
		{[]string{"add", dir, "k"}, 1, dir + " is a directory"},
		{[]string{"contains", dir, "k"}, 1, dir + " is a directory"},
		{[]string{"add", filepath.Join(dir, "missing.dbl"), "k"}, 1, "missing.dbl does not exist"},
		{[]string{"add", path, "k", "--id", "x"}, 2, `"x" is not an id`},
	}
	// A random file's first bytes are not quoted back (verify and inspect).
	random := filepath.Join(dir, "random.dbl")
	if err := os.WriteFile(random, []byte("\xce\x19,\xb8\xbdH\x11m and more bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"verify", "inspect"} {
		r := cli(t, "", cmd, random)
		if r.code != 1 || strings.Contains(r.stdout, "\xce") || !strings.Contains(r.stdout, `does not start with "DABLOOMS"`) {
			t.Errorf("%s of a random file: exit %d, %q", cmd, r.code, r.stdout)
		}
	}
	for _, c := range cases {
		r := cli(t, "", c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, r.code, r.stderr, c.code, c.want)
		}
		checkWords(t, strings.Join(c.args, " "), r.stderr)
		// The whole path: its base name alone ("001" of a t.TempDir) can
		// recur in the random part of the directory's name.
		if n := strings.Count(r.stderr, c.args[1]); c.code == 1 && n != 1 {
			t.Errorf("%v: stderr names the file %d times, want once: %q", c.args, n, r.stderr)
		}
	}
}

// A full chain is said in words, with what to do; inspect shows the limit
// and how near the file is to it.
func TestFullChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "full.dbl")
	mustCreate(t, path, "--capacity", "1", "--growth", "1", "--error-rate", "0.1")
	var in strings.Builder
	for i := 1; i <= 70; i++ {
		fmt.Fprintf(&in, "k%d\t%d\n", i, i)
	}
	r := cli(t, in.String(), "add", path, "--from", "-")
	if r.code != 1 || !strings.Contains(r.stderr, "full.dbl is full") || !strings.Contains(r.stderr, "retire") ||
		!strings.Contains(r.stderr, "compact") || !strings.Contains(r.stderr, "--capacity") {
		t.Errorf("add to a full chain: exit %d, %q", r.code, r.stderr)
	}
	checkWords(t, "add to a full chain", r.stderr)
	r = cli(t, "", "inspect", path)
	if !strings.Contains(r.stdout, "chain:       64 of at most 64 filter(s): full") {
		t.Errorf("inspect of a full chain:\n%s", r.stdout)
	}
	r = cli(t, "", "inspect", path, "--json")
	var doc struct {
		FilterLimit int `json:"filter_limit"`
		FiltersLeft int `json:"filters_left"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.FilterLimit != 64 || doc.FiltersLeft != 0 {
		t.Errorf("inspect --json of a full chain: %+v, %v", doc, err)
	}
}

// A dablooms file cut short is damaged, exit 3, whatever the length, with
// advice that works; an empty or random file stays exit 1 (issue 27 item 7).
func TestTruncatedAnyLength(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.dbl")
	mustCreate(t, path, "--capacity", "100000", "--error-rate", "0.01")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	random := make([]byte, 5000)
	rand.Read(random)
	for _, c := range []struct {
		name string
		data []byte
		code int
	}{
		{"cut5000", orig[:5000], 3},
		{"cut90000", orig[:90000], 3},
		{"cut8", orig[:8], 3},
		{"random", random, 1},
		{"empty", nil, 1},
	} {
		p := filepath.Join(dir, c.name+".dbl")
		if err := os.WriteFile(p, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"verify", "inspect"} {
			r := cli(t, "", cmd, p)
			if r.code != c.code {
				t.Errorf("%s %s: exit %d, want %d: %s", cmd, c.name, r.code, c.code, r.stderr)
			}
			if c.code == 3 && !strings.Contains(r.stderr, "restore a backup") {
				t.Errorf("%s %s: no advice that works: %s", cmd, c.name, r.stderr)
			}
			r = cli(t, "", cmd, p, "--json")
			var doc struct {
				ExitCode *int `json:"exit_code"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.ExitCode == nil || *doc.ExitCode != c.code || r.code != c.code {
				t.Errorf("%s --json %s: exit %d, %s", cmd, c.name, r.code, r.stdout)
			}
		}
		if r := cli(t, "", "add", p, "k"); r.code != 1 || (c.code == 3) != strings.Contains(r.stderr, "damaged dablooms file") {
			t.Errorf("add to %s: exit %d, %q", c.name, r.code, r.stderr)
		}
	}
}

// --lock-timeout bounds the whole command: after an add timed out waiting
// for an exclusive writer, the flush does not wait for it again.
func TestLockTimeoutOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.dbl")
	mustCreate(t, path, "--capacity", "1000", "--error-rate", "0.01")
	f, err := scaling.Open(path, &scaling.OpenOptions{Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := cli(t, "", "add", path, "c", "--id", "3", "--lock-timeout", "100ms")
	if r.code != 1 || strings.Count(r.stderr, "timed out") != 1 || strings.Contains(r.stderr, "flush:") {
		t.Errorf("add beside an exclusive writer: exit %d, stderr %q; want one lock timeout, no flush", r.code, r.stderr)
	}
	checkWords(t, "add beside an exclusive writer", r.stderr)
	// What held the lock and for how long, in rounded time: not "for over
	// 999.68371ms" (the library's exact duration, which the old code
	// quoted). The library waits for what is left of the command's second
	// when it opens the file: 1s rounded, or some ms less on a busy
	// machine (999ms, 994ms), never more.
	r = cli(t, "", "add", path, "c", "--id", "3", "--lock-timeout", "1s")
	if r.code != 1 || !reWaitedAbout1s.MatchString(r.stderr) || reLongDecimal.MatchString(r.stderr) {
		t.Errorf("add beside an exclusive writer, --lock-timeout 1s: exit %d, stderr %q; want \"(for over 1s)\" or 9xxms", r.code, r.stderr)
	}
}

// reWaitedAbout1s matches the lock message of a wait of 1s, rounded.
var reWaitedAbout1s = regexp.MustCompile(`an exclusive writer \(for over (1s|9\d\dms)\)`)

// reLongDecimal matches a number with more decimals than a message needs.
var reLongDecimal = regexp.MustCompile(`\d\.\d{4,}`)

func TestRoundDurations(t *testing.T) {
	for in, want := range map[string]string{
		"held for over 999.68371ms": "held for over 1s",
		"for 12.345678ms, then":     "for 12ms, then",
		"waited 2.54321s":           "waited 2.5s",
		"waited 1m30.25s":           "waited 1m30.3s",
		"key k5s and 7 ids":         "key k5s and 7 ids",
		"took 350ns":                "took 350ns",
	} {
		checkRewrite(t, "roundDurations", roundDurations, in, want)
	}
}

// checkRewrite checks that f, a rewriting of messages, makes want of in.
func checkRewrite(t *testing.T, name string, f func(string) string, in, want string) {
	t.Helper()
	if got := f(in); got != want {
		t.Errorf("%s(%q) =\n%q, want\n%q", name, in, got, want)
	}
}

// Findings and repair actions name the CLI's commands, not the library's
// functions: "need Rebuild", "Repair zeroes it", "Repair frees it" (issue
// 41 item 4).
func TestFindingsInCLIWords(t *testing.T) {
	for in, want := range map[string]string{
		"the filters marked dirty [0] need Rebuild":                            "the filters marked dirty [0] need 'repair --rebuild-from'",
		"filters [1] need Rebuild (repair --rebuild-from) before it":           "filters [1] need 'repair --rebuild-from' before it",
		"slot of a writer (pid 7) that ended without closing; Repair frees it": "slot of a writer (pid 7) that ended without closing; repair frees it",
		"pending-adds hint 3 with no writer alive; Repair zeroes it":           "pending-adds hint 3 with no writer alive; repair zeroes it",
		"so Verify cannot tell; run Repair":                                    "so verify cannot tell; run repair",
		"a Remove of an id is refused with ErrAmbiguous; Compact rewrites it":  "a Remove of an id is refused as ambiguous; compact rewrites it",
		"RepairOptions and Rebuilder stay":                                     "RepairOptions and Rebuilder stay",
	} {
		checkRewrite(t, "cliWords", cliWords, in, want)
	}
	// End to end: a writer killed between operations leaves its slot,
	// which verify says repair frees.
	path := filepath.Join(t.TempDir(), "w.dbl")
	mustCreate(t, path, "--capacity", "1000", "--error-rate", "0.01")
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	var owner [8]byte
	binary.LittleEndian.PutUint64(owner[:], 12345|1) // a writer that never closed slot 40
	if _, err := fh.WriteAt(owner[:], header.SlotOffset(40)+header.SlotOwnerOffset); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	r := cli(t, "", "verify", path)
	if !strings.Contains(r.stdout, "repair frees it") || libraryWords.MatchString(r.stdout+r.stderr) {
		t.Errorf("verify of a file a writer left: library words or no finding:\n%s%s", r.stdout, r.stderr)
	}
}

// Every command that takes a file, given a missing file, a directory, a
// named pipe, an empty file or a random one, says so in words on stderr
// (no package names, system calls or raw bytes), names the file once, and
// exits 1 (issue 31: "stat nonexist.dbl: no such file or directory" from
// repair; import-dablooms hung on a named pipe).
func TestMessagesEveryCommandBadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.dbl")
	keys := filepath.Join(dir, "keys.tsv")
	mustCreate(t, good, "--capacity", "10", "--error-rate", "0.1")
	if err := os.WriteFile(keys, []byte("k\t1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	random := make([]byte, 100000)
	rand.Read(random)
	copy(random, "not DABLOOMS")
	kinds := []struct {
		name, want string
		make       func(path string) error
	}{
		{"missing", "does not exist", func(string) error { return nil }},
		{"dir", "is a directory", func(p string) error { return os.Mkdir(p, 0o755) }},
		{"fifo", "is a named pipe", func(p string) error { return mkfifo(p) }},
		{"empty", "is empty (0 bytes), not a dablooms file", func(p string) error { return os.WriteFile(p, nil, 0o644) }},
		{"random", "is not a dablooms file", func(p string) error { return os.WriteFile(p, random, 0o644) }},
	}
	for _, k := range kinds {
		f := filepath.Join(dir, k.name+".dbl")
		if err := k.make(f); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out-"+k.name+".dbl")
		for _, args := range [][]string{
			{"add", f, "k", "--id", "1"},
			{"remove", f, "k", "--id", "1"},
			{"contains", f, "k"},
			{"inspect", f},
			{"verify", f},
			{"flush", f},
			{"retire", f, "--before", "5"},
			{"repair", f},
			{"repair", f, "--dry-run"},
			{"repair", f, "--output", out},
			{"compact", f, "--from", keys},
			{"backup", f, out},
			{"restore", f, good},
			{"import-dablooms", f, out, "--capacity", "100", "--error-rate", "0.01"},
			{"create", f, "--capacity", "10", "--error-rate", "0.1"},
		} {
			want := k.want
			switch {
			case args[0] == "create" && k.name == "missing":
				continue // creates it
			case args[0] == "create" && (k.name == "empty" || k.name == "random"):
				want = "already exists"
			case args[0] == "import-dablooms" && (k.name == "empty" || k.name == "random"):
				want = "is not a file of the original C dablooms 0.9.1"
			}
			what := k.name + ": " + strings.Join(args, " ")
			// A command that opens a named pipe waits for a writer for
			// ever: a hang guard (not a timing check) says which one.
			done := make(chan result, 1)
			go func() { done <- cli(t, "", args...) }()
			var r result
			select {
			case r = <-done:
			case <-time.After(time.Minute):
				t.Fatalf("%s: still running after a minute (blocked opening the file?)", what)
			}
			if r.code != 1 || !strings.Contains(r.stderr, filepath.Base(f)+" "+want) {
				t.Errorf("%s: exit %d, stderr %q; want exit 1 and %q", what, r.code, r.stderr, filepath.Base(f)+" "+want)
			}
			checkWords(t, what, r.stderr)
			if n := strings.Count(r.stderr, filepath.Base(f)); n != 1 {
				t.Errorf("%s: stderr names the file %d times, want once: %q", what, n, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, string(random[12:20])) {
				t.Errorf("%s: the output quotes the file's bytes", what)
			}
			os.Remove(out)
		}
	}
}
