package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dablooms/dablooms/scaling"
)

// promValue returns the value of the sample of metric whose labels are
// labels in the text format out, failing if there is none.
func promValue(t *testing.T, out, metric, labels string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(metric+"{"+labels+"}") + ` (\S+)$`)
	m := re.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no sample %s{%s} in:\n%s", metric, labels, out)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// inspect --prometheus: the metrics of a file a writer holds open with
// unflushed adds, then of a file that does not exist.
func TestInspectPrometheus(t *testing.T) {
	path := newFile(t)
	f, err := scaling.Open(path, &scaling.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 25 {
		if err := f.AddString("k"+strconv.Itoa(i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	r := cli(t, "", "inspect", "--prometheus", path)
	if r.code != 0 {
		t.Fatalf("inspect --prometheus: exit %d: %s", r.code, r.stderr)
	}
	file := `file="` + path + `"`
	for _, c := range []struct {
		metric, labels string
		want           float64
	}{
		{"dablooms_up", file, 1},
		{"dablooms_items", file, 25},
		{"dablooms_filters", file, 1},
		{"dablooms_mem_seqnum", file, 25},
		{"dablooms_writers", file, 1},
		{"dablooms_condition", `condition="unflushed",` + file, 1},
		{"dablooms_condition", `condition="clean",` + file, 0},
		{"dablooms_filter_items", file + `,filter="0"`, 25},
		{"dablooms_filter_fill", file + `,filter="0"`, 25.0 / 1000},
	} {
		if got := promValue(t, r.stdout, c.metric, c.labels); got != c.want {
			t.Errorf("%s{%s} = %v, want %v", c.metric, c.labels, got, c.want)
		}
	}
	if age := promValue(t, r.stdout, "dablooms_unflushed_age_seconds", file); age < 0 {
		t.Errorf("dablooms_unflushed_age_seconds = %v while unflushed, want >= 0", age)
	}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if !strings.HasPrefix(line, "# HELP dablooms_") && !strings.HasPrefix(line, "# TYPE dablooms_") && !strings.HasPrefix(line, "dablooms_") {
			t.Errorf("not a line of the text format: %q", line)
		}
	}

	missing := path + ".missing"
	r = cli(t, "", "inspect", "--prometheus", missing)
	if r.code == 0 {
		t.Errorf("inspect --prometheus of a missing file: exit 0, want an error")
	}
	if got := promValue(t, r.stdout, "dablooms_up", `file="`+missing+`"`); got != 0 {
		t.Errorf("dablooms_up of a missing file = %v, want 0", got)
	}
	if !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("stderr %q does not say the file does not exist", r.stderr)
	}
}
