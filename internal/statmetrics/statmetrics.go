// Package statmetrics turns a store's scaling.Stats into the metrics
// operators watch, once, for both of their outputs: dabloomsctl inspect
// --prometheus (the text exposition format, written by WriteText) and the
// Prometheus collector of the module github.com/dablooms/dablooms/metrics.
// docs/METRICS.md lists them.
package statmetrics

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dablooms/dablooms/scaling"
)

// Label is a label's name and value.
type Label struct{ Name, Value string }

// Sample is one value of a metric, with its labels (beyond the file's).
type Sample struct {
	Labels []Label
	Value  float64
}

// Metric is one metric family: a gauge unless Counter.
type Metric struct {
	Name    string
	Help    string
	Counter bool
	Samples []Sample
}

func gauge(name, help string, v float64) Metric {
	return Metric{Name: name, Help: help, Samples: []Sample{{Value: v}}}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// conditions are the values of the condition label, in order.
var conditions = []scaling.Condition{scaling.Clean, scaling.Unflushed, scaling.Interrupted, scaling.Dirty}

// FromStats returns the metrics of st, read at now (the age of unflushed
// changes is measured to it).
func FromStats(st scaling.Stats, now time.Time) []Metric {
	ms := []Metric{
		gauge("dablooms_items", "Items in the store: adds minus removes, over every filter.", float64(st.Count)),
		gauge("dablooms_estimated_false_positive_rate", "Expected false-positive rate of a lookup at the current items: the sum over the filters.", st.EstimatedFPR),
		gauge("dablooms_filters", "Filters in the chain.", float64(len(st.Filters))),
		gauge("dablooms_filter_limit", "The most filters the chain can reach; adds fail once the newest of them is full.", float64(st.FilterLimit)),
		{Name: "dablooms_filters_retired_total", Help: "Filters retired from the chain's front since the file was created.", Counter: true,
			Samples: []Sample{{Value: float64(st.Retired)}}},
		gauge("dablooms_mem_seqnum", "mem_seqnum: modifications made to the store.", float64(st.MemSeqnum)),
		gauge("dablooms_disk_seqnum", "disk_seqnum: modifications made durable by the last flush (meaningful while clean).", float64(st.DiskSeqnum)),
		{Name: "dablooms_flushes_total", Help: "Durable flushes completed since the file was created, by every process.", Counter: true,
			Samples: []Sample{{Value: float64(st.Flushes)}}},
		gauge("dablooms_unflushed_age_seconds", "Seconds since the first change after the last flush: how long changes have waited for a flush (0 while clean).", unflushedAge(st, now)),
		gauge("dablooms_writers", "Writer slots held by live handles (processes with the file open read-write).", float64(st.Writers)),
		gauge("dablooms_refresh_error", "1 if filters another handle published could not be mapped (the handle sees only those it has), else 0.", boolValue(st.RefreshError != nil)),
		gauge("dablooms_file_size_bytes", "Size of the store's file in bytes.", float64(st.FileSize)),
	}
	cond := Metric{Name: "dablooms_condition", Help: "The file's condition: 1 for the current one of clean, unflushed, interrupted and dirty (see scaling.Condition)."}
	for _, c := range conditions {
		cond.Samples = append(cond.Samples, Sample{Labels: []Label{{"condition", c.String()}}, Value: boolValue(st.Condition == c)})
	}
	ms = append(ms, cond)
	fill := Metric{Name: "dablooms_filter_fill", Help: "A filter's items over its capacity; filter is its directory index, oldest first."}
	items := Metric{Name: "dablooms_filter_items", Help: "A filter's items; filter is its directory index, oldest first."}
	fpr := Metric{Name: "dablooms_filter_estimated_false_positive_rate", Help: "A filter's expected false-positive rate at its current items."}
	for _, fs := range st.Filters {
		l := []Label{{"filter", strconv.Itoa(fs.Index)}}
		fill.Samples = append(fill.Samples, Sample{Labels: l, Value: fs.Fill})
		items.Samples = append(items.Samples, Sample{Labels: l, Value: float64(fs.Count)})
		fpr.Samples = append(fpr.Samples, Sample{Labels: l, Value: fs.EstimatedFPR})
	}
	return append(ms, fill, items, fpr)
}

func unflushedAge(st scaling.Stats, now time.Time) float64 {
	if st.DirtySince.IsZero() {
		return 0
	}
	return max(0, now.Sub(st.DirtySince).Seconds())
}

// Up is dablooms_up: 1 if the file could be opened and its metrics read.
func Up(ok bool) Metric {
	return gauge("dablooms_up", "1 if the store could be opened and its metrics read, else 0.", boolValue(ok))
}

// WriteText writes ms in the Prometheus text exposition format (version
// 0.0.4), each sample labelled with the file's path.
func WriteText(w io.Writer, file string, ms []Metric) error {
	var b strings.Builder
	for _, m := range ms {
		typ := "gauge"
		if m.Counter {
			typ = "counter"
		}
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", m.Name, escapeHelp(m.Help), m.Name, typ)
		for _, s := range m.Samples {
			// Sorted by name, as Prometheus's own encoder writes them.
			ls := append([]Label{{"file", file}}, s.Labels...)
			slices.SortFunc(ls, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
			b.WriteString(m.Name)
			for i, l := range ls {
				b.WriteString(string("{,"[min(i, 1)]) + l.Name + `="` + escapeLabel(l.Value) + `"`)
			}
			b.WriteString("} " + strconv.FormatFloat(s.Value, 'g', -1, 64) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }
