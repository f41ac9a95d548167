package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dablooms/dablooms/scaling"
)

// compactFixture creates a chain of 30 filters of 100 keys (key-i with id
// i for i in 1..3000) and a KEYS file of the keys not divisible by 3.
func compactFixture(t *testing.T) (dir, path, keys string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, "c.dbl")
	var all, live strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&all, "key-%d\t%d\n", i, i)
		if i%3 != 0 {
			fmt.Fprintf(&live, "key-%d\t%d\n", i, i)
		}
	}
	mustCreate(t, path, "--capacity", "100", "--error-rate", "0.01", "--growth", "1", "--tightening", "0.9")
	if r := cli(t, all.String(), "add", path, "--from", "-", "-q"); r.code != 0 {
		t.Fatalf("add: %d %s", r.code, r.stderr)
	}
	keys = filepath.Join(dir, "keys.tsv")
	if err := os.WriteFile(keys, []byte(live.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, path, keys
}

// TestCompact: compact turns a 30-filter chain into one filter holding the
// keys of --from, with ids that still route remove, and reports it in text
// and JSON.
func TestCompact(t *testing.T) {
	dir, path, keys := compactFixture(t)
	r := cli(t, "", "compact", path, "--from", keys)
	if r.code != 0 {
		t.Fatalf("compact: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"compacted " + path + ": 30 filter(s) before, 1 after", "keys: 2000 added from " + keys + " (ids 1..2999), capacity 2200", "file size: "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "compact took") {
		t.Errorf("stderr: %s", r.stderr)
	}
	if r := cli(t, "", "verify", path); r.code != 0 {
		t.Fatalf("verify after compact: %d\n%s", r.code, r.stdout)
	}
	f, err := scaling.Open(path, &scaling.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fp := 0
	for i := 1; i <= 3000; i++ {
		has := f.Contains([]byte(fmt.Sprint("key-", i)))
		if i%3 != 0 && !has {
			t.Fatalf("key-%d is absent after compact", i)
		}
		if i%3 == 0 && has {
			fp++
		}
	}
	f.Close()
	if fp > 10 {
		t.Errorf("%d of 1000 keys not in --from are present", fp)
	}
	if r := cli(t, "", "remove", path, "key-4", "--id", "4"); r.code != 0 {
		t.Errorf("remove after compact: %d %s", r.code, r.stderr)
	}
	if names := dirEntries(t, dir); !slices.Equal(names, []string{"c.dbl", "keys.tsv"}) {
		t.Errorf("the directory holds %v", names)
	}

	// JSON, with --capacity (one pass) and --headroom 0.
	r = cli(t, "", "compact", path, "--from", keys, "--capacity", "5000", "--json")
	if r.code != 0 {
		t.Fatalf("compact --json: exit %d\n%s", r.code, r.stderr)
	}
	var j compactJSON
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
		t.Fatal(err)
	}
	if j.Schema != "dabloomsctl.compact/v1" || j.Path != path || j.From != keys || j.FiltersBefore != 1 || j.FiltersAfter != 1 ||
		j.Counted != 0 || j.Keys != 2000 || j.Capacity != 5000 || j.SizeAfter <= 0 || j.Error != "" || j.ExitCode != 0 {
		t.Errorf("JSON %+v", j)
	}
	// The ids of the keys added, not the bounds asked of the source (0 and
	// 2^63-1, issue 31).
	if j.FirstID == nil || j.LastID == nil || *j.FirstID != 1 || *j.LastID != 2999 {
		t.Errorf("JSON first_id, last_id = %v, %v; want 1, 2999", j.FirstID, j.LastID)
	}
	r = cli(t, "", "compact", path, "--from", keys, "--headroom", "0", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &j); r.code != 0 || err != nil || j.Capacity != 2000 || j.Counted != 2000 {
		t.Errorf("--headroom 0: exit %d, %v, %+v", r.code, err, j)
	}
}

func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestCompactErrors: usage errors exit 2; a busy file, a bad KEYS file and
// a missing FILE exit 1 and leave FILE as it was.
func TestCompactErrors(t *testing.T) {
	dir, path, keys := compactFixture(t)
	sum := sha(t, path)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"compact", path}, exitUsage, "needs --from"},
		{[]string{"compact", path, "--from", "-"}, exitUsage, "compact --from - needs --capacity N"},
		{[]string{"compact", path, "--from", keys, "--headroom", "-1"}, exitUsage, "--headroom"},
		{[]string{"compact"}, exitUsage, "takes 1 argument"},
		{[]string{"compact", filepath.Join(dir, "nope.dbl"), "--from", keys}, exitFail, "nope.dbl does not exist"},
		{[]string{"compact", path, "--from", filepath.Join(dir, "nope.tsv")}, exitFail, "the file of keys " + filepath.Join(dir, "nope.tsv") + " does not exist"},
	} {
		r := cli(t, "", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("%v: exit %d, want %d with %q; stderr:\n%s", tc.args, r.code, tc.code, tc.msg, r.stderr)
		}
	}
	noID := filepath.Join(dir, "noid.tsv")
	os.WriteFile(noID, []byte("key-1\t1\nkey-2\n"), 0o644)
	r := cli(t, "", "compact", path, "--from", noID)
	var j compactJSON
	if r.code != exitFail || !strings.Contains(r.stderr, "noid.tsv:2: no id") || !strings.Contains(r.stderr, "left as it was") {
		t.Errorf("no id: exit %d; stderr:\n%s", r.code, r.stderr)
	}

	if sha(t, path) != sum {
		t.Error("a failed compact changed the file")
	}
	if names := dirEntries(t, dir); !slices.Equal(names, []string{"c.dbl", "keys.tsv", "noid.tsv"}) {
		t.Errorf("the directory holds %v", names)
	}

	// --from - with --capacity reads stdin once, as --help says (the old
	// code refused it: "reads --from twice").
	in, err := os.ReadFile(keys)
	if err != nil {
		t.Fatal(err)
	}
	r = cli(t, string(in), "compact", path, "--from", "-", "--capacity", "5000", "--json")
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &j) != nil || j.FiltersAfter != 1 || j.Keys == 0 || j.Capacity != 5000 {
		t.Errorf("--from - --capacity 5000: exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if got := contained(t, path, "key-1"); got != "key-1\ttrue\n" {
		t.Errorf("after compact --from -: %q", got)
	}

	// Live: a reader has the file open (format 1.3): compact replaces the
	// file all the same, and the reader moves to the compacted one.
	f, err := scaling.Open(path, &scaling.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r = cli(t, "", "compact", path, "--from", keys, "--wait", "0", "--json")
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &j) != nil || j.FiltersAfter != 1 {
		t.Errorf("live: exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if n := len(f.Stats().Filters); n != 1 {
		t.Errorf("the open reader sees %d filters after the compaction, want the compacted file's 1", n)
	}
}
