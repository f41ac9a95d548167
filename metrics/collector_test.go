package metrics

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dablooms/dablooms/internal/statmetrics"
	"github.com/dablooms/dablooms/scaling"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// store creates a file with 30 unflushed adds, held open by f, and a
// Collector whose clock reads 90 s after the first of them.
func store(t *testing.T) (*scaling.Filter, *Collector) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.dbl")
	f, err := scaling.Create(path, &scaling.Options{Capacity: 1000, ErrorRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	for i := range 30 {
		if err := f.AddString(fmt.Sprint("key", i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	c := NewCollector(f)
	since := f.Stats().DirtySince
	if since.IsZero() {
		t.Fatal("30 unflushed adds, and Stats().DirtySince is zero")
	}
	c.now = func() time.Time { return since.Add(90 * time.Second) }
	return f, c
}

// A registry scraped over HTTP serves the store's numbers.
func TestCollectorScrape(t *testing.T) {
	f, c := store(t)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	path := f.Stats().Path
	l := fmt.Sprintf(`file=%q`, path)
	want := fmt.Sprintf(`
# HELP dablooms_up 1 if the store could be opened and its metrics read, else 0.
# TYPE dablooms_up gauge
dablooms_up{%[1]s} 1
# HELP dablooms_items Items in the store: adds minus removes, over every filter.
# TYPE dablooms_items gauge
dablooms_items{%[1]s} 30
# HELP dablooms_writers Writer slots held by live handles (processes with the file open read-write).
# TYPE dablooms_writers gauge
dablooms_writers{%[1]s} 1
# HELP dablooms_mem_seqnum mem_seqnum: modifications made to the store.
# TYPE dablooms_mem_seqnum gauge
dablooms_mem_seqnum{%[1]s} 30
# HELP dablooms_unflushed_age_seconds Seconds since the first change after the last flush: how long changes have waited for a flush (0 while clean).
# TYPE dablooms_unflushed_age_seconds gauge
dablooms_unflushed_age_seconds{%[1]s} 90
# HELP dablooms_condition The file's condition: 1 for the current one of clean, unflushed, interrupted and dirty (see scaling.Condition).
# TYPE dablooms_condition gauge
dablooms_condition{condition="clean",%[1]s} 0
dablooms_condition{condition="dirty",%[1]s} 0
dablooms_condition{condition="interrupted",%[1]s} 0
dablooms_condition{condition="unflushed",%[1]s} 1
# HELP dablooms_filter_fill A filter's items over its capacity; filter is its directory index, oldest first.
# TYPE dablooms_filter_fill gauge
dablooms_filter_fill{%[1]s,filter="0"} 0.03
`, l)
	names := []string{"dablooms_up", "dablooms_items", "dablooms_writers", "dablooms_mem_seqnum",
		"dablooms_unflushed_age_seconds", "dablooms_condition", "dablooms_filter_fill"}
	if err := testutil.ScrapeAndCompare(srv.URL, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}

	// After a Flush: clean, nothing waits.
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(only(t, c, "dablooms_unflushed_age_seconds")); got != 0 {
		t.Errorf("after Flush: dablooms_unflushed_age_seconds = %v, want 0", got)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// The text dabloomsctl inspect --prometheus writes (statmetrics.WriteText)
// parses as the exposition format and holds exactly what the Collector
// collects.
func TestInspectTextMatchesCollector(t *testing.T) {
	f, c := store(t)
	st := f.Stats()
	var text bytes.Buffer
	ms := append([]statmetrics.Metric{statmetrics.Up(true)}, statmetrics.FromStats(st, c.now())...)
	if err := statmetrics.WriteText(&text, st.Path, ms); err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(c, &text); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c); n < 20 {
		t.Errorf("collected %d samples, want every metric's", n)
	}
}

// A closed store's collector says so: dablooms_up 0 and nothing else.
func TestCollectorClosed(t *testing.T) {
	f, c := store(t)
	f.Close()
	want := `
# HELP dablooms_up 1 if the store could be opened and its metrics read, else 0.
# TYPE dablooms_up gauge
dablooms_up{file=""} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

// only returns the one sample of metric name that c collects.
func only(t *testing.T, c prometheus.Collector, name string) prometheus.Collector {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: "copy"},
				func() float64 { return mf.GetMetric()[0].GetGauge().GetValue() })
		}
	}
	t.Fatalf("no single sample of %s", name)
	return nil
}
