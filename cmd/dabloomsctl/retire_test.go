package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hourLines are the input lines of "hour" h: n keys "h<h>-<i>" with ids
// h*1000+i, so that with --growth 1 and --capacity n each hour fills one
// filter.
func hourLines(h, n int) []string {
	var lines []string
	for i := 0; i < n; i++ {
		lines = append(lines, fmt.Sprintf("h%d-%d\t%d", h, i, h*1000+i))
	}
	return lines
}

// windowFile creates $D/name with one filter of 100 keys per hour 1..hours
// (ids h*1000..h*1000+99).
func windowFile(tr *transcript, name string, hours int) {
	tr.t.Helper()
	tr.step(0, "", "create $D/"+name+" --capacity 100 --error-rate 0.01 --growth 1 --seed 7 -q")
	var lines []string
	for h := 1; h <= hours; h++ {
		lines = append(lines, hourLines(h, 100)...)
	}
	writeLines(tr.t, tr.path(name+".tsv"), lines)
	tr.step(0, "", "add $D/"+name+" --from $D/"+name+".tsv -q")
}

// TestRetire: retire on a file of several filters, text and JSON, the
// keys it forgets and keeps, the ring reusing entries, and the errors.
func TestRetire(t *testing.T) {
	tr := newTranscript(t)
	windowFile(tr, "w.dbl", 6)
	tr.step(0, "", "retire $D/w.dbl --before 1000") // nothing lies below
	tr.step(0, "", "retire $D/w.dbl --before 3000") // hours 1 and 2
	tr.readOnly(0, "w.dbl", "contains $D/w.dbl h1-0 h2-99 h3-0 h6-99")
	tr.step(0, "", "retire $D/w.dbl --before 3099 --json") // hour 3 holds 3099: stays
	tr.step(0, "", "retire $D/w.dbl --before 3100 --no-flush")
	tr.step(0, "", "flush $D/w.dbl -q")
	// Two more hours: the new filters take the retired filters' entries.
	writeLines(t, tr.path("more.tsv"), append(hourLines(7, 100), hourLines(8, 100)...))
	tr.step(0, "", "add $D/w.dbl --from $D/more.tsv")
	tr.step(0, "", "retire $D/w.dbl --before 9223372036854775807") // all but the newest
	tr.readOnly(0, "w.dbl", "contains $D/w.dbl h7-0 h8-0 h8-99")

	// Errors: usage (2), then operational (1).
	os.WriteFile(tr.path("not.dbl"), bytes.Repeat([]byte("not a dablooms file\n"), 2000), 0o644)
	tr.step(2, "", "retire $D/w.dbl")
	tr.step(2, "", "retire $D/w.dbl --before")
	tr.step(2, "", "retire $D/w.dbl --before abc")
	tr.step(2, "", "retire $D/w.dbl --before -1")
	tr.step(2, "", "retire $D/w.dbl --before 9223372036854775808")
	tr.step(2, "", "retire $D/w.dbl --before 18446744073709551616")
	tr.step(2, "", "retire --before 5")
	tr.step(2, "", "retire $D/w.dbl $D/x.dbl --before 5")
	tr.step(1, "", "retire $D/missing.dbl --before 5")
	tr.step(1, "", "retire $D/not.dbl --before 5")
	tr.step(1, "", "retire $D/not.dbl --before 5 --json")
	// An interrupted file is refused, and left as it was.
	windowFile(tr, "i.dbl", 3)
	tr.step(0, "", "add $D/i.dbl late --id 3100 --no-flush -q") // a cut operation leaves the file unflushed
	cutOperation(t, tr.path("i.dbl"), 40)
	tr.readOnly(1, "i.dbl", "retire $D/i.dbl --before 3000")
	tr.golden("retire")
}

// TestRetireJSON: the retire/v1 document has exactly the documented
// fields, with the values of the run.
func TestRetireJSON(t *testing.T) {
	tr := newTranscript(t)
	windowFile(tr, "w.dbl", 5)
	r := tr.step(0, "", "retire $D/w.dbl --before 4000 --json")
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	var keys []string
	for k := range doc {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"before", "condition", "disk_seqnum", "file_size", "filters", "first_filter", "first_id", "flushed",
		"items", "last_id", "mem_seqnum", "path", "retired", "retired_total", "schema"}
	if !slices.Equal(keys, want) {
		t.Errorf("fields %v, want %v", keys, want)
	}
	var res retireJSON
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(tr.path("w.dbl"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Schema != "dabloomsctl.retire/v1" || res.Path != tr.path("w.dbl") || res.Before != 4000 ||
		res.Retired != 3 || res.RetiredTotal != 3 || res.Filters != 2 || res.FirstFilter != 3 ||
		res.FirstID == nil || *res.FirstID != 4000 || res.LastID == nil || *res.LastID != 5099 ||
		res.Items != 200 || res.FileSize != fi.Size() || !res.Flushed || res.Condition != "clean" ||
		res.MemSeqnum != 500 || res.DiskSeqnum != 500 {
		t.Errorf("retire --json:\n%s", r.stdout)
	}
	// Again: nothing more to retire; the totals stay.
	r = tr.step(0, "", "retire $D/w.dbl --before 4000 --json")
	res = retireJSON{}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Retired != 0 || res.RetiredTotal != 3 || res.Filters != 2 {
		t.Errorf("second retire --json (%v):\n%s", err, r.stdout)
	}
	// --no-flush leaves the file unflushed, and says so.
	r = tr.step(0, "", "retire $D/w.dbl --before 5000 --no-flush --json")
	res = retireJSON{}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Retired != 1 || res.Flushed || res.Condition != "unflushed" || res.DiskSeqnum != 0 {
		t.Errorf("retire --no-flush --json (%v):\n%s", err, r.stdout)
	}
}

// TestRetireInspect: inspect shows the retired count and the directory
// entries of a file that retired filters, in text and JSON.
func TestRetireInspect(t *testing.T) {
	tr := newTranscript(t)
	windowFile(tr, "w.dbl", 4)
	tr.step(0, "", "retire $D/w.dbl --before 3000 -q")
	// Hour 5 takes entry 0 (the lowest free), hour 6 entry 1.
	writeLines(t, tr.path("more.tsv"), append(hourLines(5, 100), hourLines(6, 100)...))
	tr.step(0, "", "add $D/w.dbl --from $D/more.tsv -q")

	r := cli(t, "", "inspect", tr.path("w.dbl"), "--json")
	var doc inspectJSON
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("inspect --json (exit %d): %v\n%s", r.code, err, r.stderr)
	}
	if doc.Retired != 2 || len(doc.Filters) != 4 {
		t.Fatalf("inspect --json: retired %d, %d filters; want 2, 4\n%s", doc.Retired, len(doc.Filters), r.stdout)
	}
	for j, want := range []int{2, 3, 0, 1} {
		f := doc.Filters[j]
		if f.Index != j {
			t.Errorf("filter %d: index %d", j, f.Index)
		}
		if f.Entry == nil || *f.Entry != want {
			t.Errorf("filter %d: entry %v, want %d", j, f.Entry, want)
		}
		if f.FirstID == nil || *f.FirstID != uint64(j+3)*1000 {
			t.Errorf("filter %d: first_id %v, want %d", j, f.FirstID, (j+3)*1000)
		}
	}
	r = cli(t, "", "inspect", tr.path("w.dbl"))
	for _, want := range []string{
		"retired:     2 filter(s) since the file was created: filter # below is number 2+# since then\n",
		"  #  entry  ids ",
		"\n  2  0      5000..5099 ",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("inspect lacks %q:\n%s", want, r.stdout)
		}
	}

	// A file that never retired shows neither (the goldens hold the rest).
	windowFile(tr, "n.dbl", 2)
	r = tr.readOnly(0, "n.dbl", "inspect $D/n.dbl --json")
	if strings.Contains(r.stdout, `"retired"`) || strings.Contains(r.stdout, `"entry"`) {
		t.Errorf("inspect --json of a file that never retired:\n%s", r.stdout)
	}
	r = tr.readOnly(0, "n.dbl", "inspect $D/n.dbl")
	if strings.Contains(r.stdout, "retired:") || strings.Contains(r.stdout, "entry") {
		t.Errorf("inspect of a file that never retired:\n%s", r.stdout)
	}
}

// TestRetireVerifiesClean: a file that retired filters, and then grew into
// their entries, verifies clean, and every key of the window is present.
func TestRetireVerifiesClean(t *testing.T) {
	tr := newTranscript(t)
	windowFile(tr, "w.dbl", 5)
	tr.step(0, "", "retire $D/w.dbl --before 3000 -q")
	writeLines(t, tr.path("more.tsv"), hourLines(6, 100))
	tr.step(0, "", "add $D/w.dbl --from $D/more.tsv -q")
	tr.step(0, "", "retire $D/w.dbl --before 4000 -q")
	r := cli(t, "", "verify", tr.path("w.dbl"))
	if r.code != 0 || !strings.Contains(r.stdout, ": clean (0 finding(s))") {
		t.Fatalf("verify after retire: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var keys []string
	for h := 4; h <= 6; h++ {
		for i := 0; i < 100; i++ {
			keys = append(keys, fmt.Sprintf("h%d-%d", h, i))
		}
	}
	r = tr.readOnly(0, "w.dbl", "contains $D/w.dbl --json "+strings.Join(keys, " "))
	var doc struct{ Present, Absent int }
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.Present != 300 {
		t.Errorf("contains of the window's keys (%v): %d present, %d absent", err, doc.Present, doc.Absent)
	}
}

// TestRetireReadOnly: a file that cannot be opened for writing is refused
// with exit 1 and a hint, and left as it was.
func TestRetireReadOnly(t *testing.T) {
	tr := newTranscript(t)
	windowFile(tr, "r.dbl", 3)
	path := tr.path("r.dbl")
	if os.Geteuid() == 0 {
		// root ignores the mode: make the file immutable instead.
		if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
			t.Skipf("running as root and chattr +i failed (%v: %s): cannot make a read-only file", err, out)
		}
		t.Cleanup(func() { exec.Command("chattr", "-i", path).Run() })
	} else if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	r := tr.readOnly(1, "r.dbl", "retire $D/r.dbl --before 3000")
	if !strings.Contains(r.stderr, filepath.Base(path)) || !strings.Contains(r.stderr, "retire writes FILE: it needs read and write permission on FILE") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout: %q", r.stdout)
	}
	r = tr.readOnly(1, "r.dbl", "retire $D/r.dbl --before 3000 --json")
	if r.stdout != "" {
		t.Errorf("retire --json of a read-only file wrote a document: %q", r.stdout)
	}
}
