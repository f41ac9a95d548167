package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

var tableHeader = []string{
	"system", "add ns/op", "contains present ns/op", "contains absent ns/op",
	"remove ns/op", "FPR", "false neg", "bytes/key",
}

// writeTables prints the machine line, one table per goroutine count, the
// notes (failures, errors) and the legend.
func writeTables(w io.Writer, rep report, specs []spec) error {
	m := rep.Machine
	fmt.Fprintf(w, "machine: %s/%s, %d CPUs, GOMAXPROCS %d, %s", m.GOOS, m.GOARCH, m.NumCPU, m.GOMAXPROCS, m.GoVersion)
	if m.CPUModel != "" {
		fmt.Fprintf(w, ", %s", m.CPUModel)
	}
	fmt.Fprintln(w)
	c := rep.Config
	fmt.Fprintf(w, "keys: %d present (key-%%012d), %d absent (absent-%%012d), queries shuffled (seed %d); target error %g; median of %d rep(s), interleaved run by run\n",
		c.N, c.Queries, c.Seed, c.TargetFPR, c.Reps)
	if c.PresentQueries != c.N || c.Removes != c.N {
		fmt.Fprintf(w, "phases: %d adds, %d present lookups (a shuffled sample), %d absent lookups, %d removes (the first keys in add order)\n",
			c.N, c.PresentQueries, c.Queries, c.Removes)
	}

	var counts []int
	for _, r := range rep.Rows {
		if len(counts) == 0 || counts[len(counts)-1] != r.Goroutines {
			counts = append(counts, r.Goroutines)
		}
	}
	for _, g := range counts {
		fmt.Fprintln(w)
		if g == 1 {
			fmt.Fprintln(w, "Single goroutine")
		} else {
			fmt.Fprintf(w, "Parallel: %d goroutines (ns/op = wall time / total ops; n/a = not safe for concurrent use)\n", g)
		}
		var cells [][]string
		for _, r := range rep.Rows {
			if r.Goroutines == g {
				cells = append(cells, rowCells(r))
			}
		}
		writeGrid(w, tableHeader, cells)

		fmt.Fprintln(w)
		if g == 1 {
			fmt.Fprintln(w, "Thread CPU time, ns/op (CLOCK_THREAD_CPUTIME_ID of the thread running the loop)")
		} else {
			fmt.Fprintf(w, "Thread CPU time, ns/op (summed over the %d goroutines' threads / total ops)\n", g)
		}
		cells = nil
		for _, r := range rep.Rows {
			if r.Goroutines == g {
				cells = append(cells, cpuCells(r))
			}
		}
		writeGrid(w, cpuHeader, cells)

		if g == 1 {
			writeRatios(w, rep.Rows)
		}
	}

	var notes []string
	for _, s := range rep.Skipped {
		notes = append(notes, "  "+s)
	}
	for _, r := range rep.Rows {
		var parts []string
		if r.AddFailures > 0 {
			parts = append(parts, fmt.Sprintf("%d add failures", r.AddFailures))
		}
		if r.RemoveFailures > 0 {
			parts = append(parts, fmt.Sprintf("%d remove failures", r.RemoveFailures))
		}
		if r.Aborted {
			parts = append(parts, "run aborted, numbers incomplete")
		}
		if len(r.Errors) > 0 {
			parts = append(parts, "errors: "+strings.Join(r.Errors, "; "))
		}
		if len(parts) > 0 {
			notes = append(notes, fmt.Sprintf("  %s (%d goroutine(s)): %s", r.System, r.Goroutines, strings.Join(parts, ", ")))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Notes (worst repetition):")
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "Systems:")
	for _, sp := range specs {
		fmt.Fprintf(w, "  %-14s %s\n", sp.id, sp.desc)
	}
	fmt.Fprintln(w, "FPR: hits among the absent keys; false neg: misses among the present keys (worst rep);")
	fmt.Fprintln(w, "bytes/key: file size (ours, c-original) or the structure's bit/counter/slot array (peers) / n; — = no remove.")
	return nil
}

var cpuHeader = []string{"system", "add", "contains present", "contains absent", "remove", "filters"}

func cpuCells(r row) []string {
	cells := rowCells(r)
	ns := func(v *float64, wall string) string {
		if v == nil {
			if wall == "—" || wall == "error" {
				return wall
			}
			return "n/a"
		}
		return fmt.Sprintf("%.1f", *v)
	}
	filters := ""
	if r.Filters > 0 {
		filters = fmt.Sprint(r.Filters)
	}
	return []string{cells[0], ns(r.AddCPU, cells[1]), ns(r.ContainsPresentCPU, cells[2]),
		ns(r.ContainsAbsentCPU, cells[3]), ns(r.RemoveCPU, cells[4]), filters}
}

// writeRatios prints, when c-original ran, each of this project's rows
// divided by it, op by op, for wall and thread CPU time (medians; below
// 1.00 this project is faster).
func writeRatios(w io.Writer, rows []row) {
	var c *row
	for i := range rows {
		if rows[i].System == cOriginalSpec.id && rows[i].Goroutines == 1 {
			c = &rows[i]
		}
	}
	if c == nil || c.Aborted {
		return
	}
	ratio := func(ours, theirs *float64) string {
		if ours == nil || theirs == nil || *theirs <= 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", *ours / *theirs)
	}
	var cells [][]string
	for _, r := range rows {
		if r.Goroutines != 1 || !strings.HasPrefix(r.System, "ours-") || r.Aborted {
			continue
		}
		cells = append(cells,
			[]string{r.System, "wall", ratio(r.AddNs, c.AddNs), ratio(r.ContainsPresentNs, c.ContainsPresentNs),
				ratio(r.ContainsAbsentNs, c.ContainsAbsentNs), ratio(r.RemoveNs, c.RemoveNs)},
			[]string{r.System, "cpu", ratio(r.AddCPU, c.AddCPU), ratio(r.ContainsPresentCPU, c.ContainsPresentCPU),
				ratio(r.ContainsAbsentCPU, c.ContainsAbsentCPU), ratio(r.RemoveCPU, c.RemoveCPU)})
	}
	if len(cells) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Ratio ours / c-original per op (medians; < 1.00 = ours faster; ours-original is the like-for-like row)")
	writeGrid(w, []string{"system", "clock", "add", "contains present", "contains absent", "remove"}, cells)
}

func rowCells(r row) []string {
	missing := "n/a"
	if r.Aborted {
		missing = "error"
	}
	ns := func(v *float64) string {
		if v == nil {
			return missing
		}
		return fmt.Sprintf("%.1f", *v)
	}
	remove := ns(r.RemoveNs)
	if !r.RemoveSupported {
		remove = "—"
	}
	name := r.System
	if r.Aborted || len(r.Errors) > 0 || r.AddFailures > 0 || r.RemoveFailures > 0 {
		name += " *"
	}
	return []string{
		name,
		ns(r.AddNs),
		ns(r.ContainsPresentNs),
		ns(r.ContainsAbsentNs),
		remove,
		fmt.Sprintf("%.3f%%", 100*r.FPR),
		fmt.Sprintf("%d", r.FalseNegatives),
		fmt.Sprintf("%.2f", r.BytesPerKey),
	}
}

// writeGrid prints a plain-text table: first column left-aligned, the
// others right-aligned, widths measured in runes (for "—").
func writeGrid(w io.Writer, header []string, rows [][]string) {
	width := make([]int, len(header))
	for i, h := range header {
		width[i] = utf8.RuneCountInString(h)
	}
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		for i, c := range cells {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("  " + pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(header)
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
	}
	line(sep)
	for _, r := range rows {
		line(r)
	}
}
