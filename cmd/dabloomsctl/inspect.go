package main

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/statmetrics"
	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
	"github.com/spf13/cobra"
)

type formatJSON struct {
	Major      uint16 `json:"major"`
	Minor      uint16 `json:"minor"`
	Generation uint64 `json:"generation"`
	Copy       string `json:"copy"` // "A" or "B": the metadata copy in use
}

type inspectFilterJSON struct {
	Index        int     `json:"index"`           // position in the chain, oldest first
	Entry        *int    `json:"entry,omitempty"` // directory entry; only when it is not index (a file that retired filters)
	FirstID      *uint64 `json:"first_id"`        // null while empty
	LastID       *uint64 `json:"last_id"`
	Capacity     uint64  `json:"capacity"`
	Items        uint64  `json:"items"`
	Fill         float64 `json:"fill"`
	ErrorTarget  float64 `json:"error_target"`
	EstimatedFPR float64 `json:"estimated_fpr"`
	K            int     `json:"k"`
	Counters     uint64  `json:"counters"`
	Bytes        int64   `json:"bytes"`
	Offset       int64   `json:"offset"`
	Layout       string  `json:"layout"`
	Hash         string  `json:"hash"`
	Saturated    *uint64 `json:"saturated"` // null if verify could not read the filter
	Dirty        bool    `json:"dirty"`
}

type inspectJSON struct {
	Schema         string              `json:"schema"`
	Path           string              `json:"path"`
	Format         *formatJSON         `json:"format"`  // null if no metadata copy is readable
	Created        string              `json:"created"` // RFC 3339, "" if unknown
	FileSize       int64               `json:"file_size"`
	Params         *paramsJSON         `json:"params"` // null if the file cannot be opened
	Condition      string              `json:"condition"`
	State          string              `json:"state"`
	ExitCode       int                 `json:"exit_code"`
	MemSeqnum      uint64              `json:"mem_seqnum"`
	DiskSeqnum     uint64              `json:"disk_seqnum"`
	Phase          string              `json:"phase"`
	Epoch          uint64              `json:"epoch"`
	SeqnumMeaning  string              `json:"seqnum_meaning"`
	Items          uint64              `json:"items"`
	Retired        uint64              `json:"retired,omitempty"` // filters retired since creation; absent if none
	FilterLimit    int                 `json:"filter_limit"`      // the most filters the chain can reach (header.MaxFilters or fewer)
	FiltersLeft    int                 `json:"filters_left"`      // filter_limit minus the filters in the chain: 0 = full once the newest is
	EstimatedFPR   float64             `json:"estimated_fpr"`
	LiveSlots      int                 `json:"live_slots"`
	DeadSlots      int                 `json:"dead_slots"`
	ClosedSlots    int                 `json:"closed_slots"`
	InterruptedOps int                 `json:"interrupted_ops"`
	Slots          []slotJSON          `json:"slots"`
	Filters        []inspectFilterJSON `json:"filters"`
	Findings       []findingJSON       `json:"findings"`

	advice string // what to do about the state (text output only)
}

func newInspectCmd(a *app) *cobra.Command {
	var prometheus bool
	cmd := &cobra.Command{
		Use:   "inspect FILE",
		Short: "Show a file's parameters, state, writers and filters",
		Long: `inspect shows what a file holds: its format version, parameters, size,
condition, mem_seqnum and disk_seqnum and what they mean right now, the
writer slots in use (live: held by a running process; dead: left by a
process that died, with the operations it cut short), and a table of the
filters: id range, capacity, items, fill (with a bar), false-positive rate
estimated from the fill against the filter's target, counters saturated at
15 (they can never be decremented again), and whether the filter changed
since the last flush.

It opens the file read-only, whatever its condition, and never writes; the
saturated counters and the slots come from the same deep check as verify.
The exit code is 3 if the file is interrupted, dirty, damaged or corrupt.

--prometheus prints instead the metrics operators watch (items, fill,
estimated false-positive rate, filters, seqnums, condition, writers, flushes,
the age of unflushed changes; docs/METRICS.md) in Prometheus's text format,
for node_exporter's textfile collector. It only opens the file read-only
(no deep check) and exits 0 whenever it printed them; a file it cannot open
gives dablooms_up 0, the error on stderr and the usual exit code.`,
		Example: `  dabloomsctl inspect spam.dbl
  dabloomsctl inspect spam.dbl --json | jq '.filters[] | {index, fill}'
  dabloomsctl inspect spam.dbl --prometheus > /var/lib/node_exporter/spam.prom.tmp
  mv /var/lib/node_exporter/spam.prom.tmp /var/lib/node_exporter/spam.prom`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			if prometheus {
				return a.inspectPrometheus(path)
			}
			out, err := a.inspect(path)
			if err != nil {
				return err
			}
			if a.json {
				if err := a.writeJSON(out); err != nil {
					return err
				}
				return silentExit(out.ExitCode)
			}
			writeInspect(a.stdout, out, isTerminal(a.stdout))
			if out.ExitCode == exitFail {
				a.warnf("%s", unreadable(path))
			} else if out.ExitCode != exitOK {
				a.warnf("%s is %s: %s; 'dabloomsctl verify %s' gives the details", path, out.State, out.advice, path)
			}
			return silentExit(out.ExitCode)
		},
	}
	cmd.Flags().BoolVar(&prometheus, "prometheus", false, "print the metrics in Prometheus's text format (docs/METRICS.md)")
	return cmd
}

// inspectPrometheus prints the file's metrics in Prometheus's text format
// (internal/statmetrics), or dablooms_up 0 if it cannot open the file.
func (a *app) inspectPrometheus(path string) error {
	if err := checkFile(path); err != nil {
		statmetrics.WriteText(a.stdout, path, []statmetrics.Metric{statmetrics.Up(false)})
		return err
	}
	f, err := a.openRO(path)
	if err != nil {
		statmetrics.WriteText(a.stdout, path, []statmetrics.Metric{statmetrics.Up(false)})
		return err
	}
	defer f.Close()
	ms := append([]statmetrics.Metric{statmetrics.Up(true)}, statmetrics.FromStats(f.Stats(), time.Now())...)
	return statmetrics.WriteText(a.stdout, path, ms)
}

func (a *app) inspect(path string) (*inspectJSON, error) {
	// The deep check first: if the file cannot even be opened we still
	// learn why.
	rep, verr := recover.VerifyWithOptions(path, withBootID(&recover.VerifyOptions{}, a.bootID))
	f, err := a.openRO(path)
	if err != nil {
		// A file verify found sound that still cannot be opened failed
		// for another reason (a 32-bit process cannot map it, say): that
		// error is the cause, not the report.
		if rep != nil && reportExit(rep) != exitOK || isCorruption(err) {
			if rep == nil {
				rep = corruptReport(path, err)
			}
			code := reportExit(rep)
			if code == exitOK {
				code = exitFail
			}
			return &inspectJSON{
				Schema: "dabloomsctl.inspect/v1", Path: path, State: rep.State.String(), ExitCode: code,
				Condition: "unknown", Findings: toReportJSON(rep).Findings, Slots: []slotJSON{}, Filters: []inspectFilterJSON{},
				advice: stateMeaning(rep),
			}, nil
		}
		return nil, err
	}
	defer f.Close()
	if verr != nil {
		a.warnf("verify: %v (saturated counters and slots unknown)", verr)
	}
	st := f.Stats()
	p := f.Params()
	out := &inspectJSON{
		Schema: "dabloomsctl.inspect/v1", Path: path, FileSize: st.FileSize, Params: ptr(toParamsJSON(p)),
		Condition: st.Condition.String(), MemSeqnum: st.MemSeqnum, DiskSeqnum: st.DiskSeqnum,
		Phase: st.Phase, Epoch: st.Epoch, Items: st.Count, EstimatedFPR: st.EstimatedFPR,
		Slots: []slotJSON{}, Filters: []inspectFilterJSON{}, Findings: []findingJSON{},
	}
	if m, which, err := readMeta(path); err == nil {
		out.Format = &formatJSON{Major: m.Major, Minor: m.Minor, Generation: m.Generation, Copy: string(rune('A' + which))}
		out.Created = time.Unix(0, m.Created).UTC().Format(time.RFC3339)
	}
	saturated := map[int64]uint64{} // by offset: a filter's offset names it whatever its index means
	out.State = out.Condition
	if rep != nil {
		rj := toReportJSON(rep)
		out.State, out.Findings, out.Slots = rj.State, rj.Findings, rj.Slots
		for _, fr := range rep.Filters {
			saturated[fr.Offset] = fr.Saturated
		}
		for _, s := range out.Slots {
			switch s.Status {
			case "live":
				out.LiveSlots++
			case "dead":
				out.DeadSlots++
				out.InterruptedOps += len(s.InFlight)
			default:
				out.ClosedSlots++
			}
		}
	}
	switch {
	case rep != nil:
		out.ExitCode = reportExit(rep)
		out.advice = stateMeaning(rep)
	case st.Condition == scaling.Interrupted || st.Condition == scaling.Dirty:
		out.ExitCode = exitUnclean
		out.advice = "run 'dabloomsctl repair'"
	}
	out.SeqnumMeaning = seqnumMeaning(st)
	out.Retired = st.Retired
	out.FilterLimit = st.FilterLimit
	out.FiltersLeft = max(st.FilterLimit-len(st.Filters), 0)
	for j, fs := range st.Filters {
		firstID, lastID := jsonIDs(fs.FirstID, fs.LastID)
		fj := inspectFilterJSON{
			Index: j, FirstID: firstID, LastID: lastID,
			Capacity: fs.Capacity, Items: fs.Count, Fill: fs.Fill, ErrorTarget: fs.ErrorTarget,
			EstimatedFPR: fs.EstimatedFPR, K: fs.K, Counters: fs.Counters, Bytes: fs.Bytes, Offset: fs.Offset,
			Layout: fs.Layout, Hash: fs.Hash, Dirty: fs.Dirty,
		}
		if fs.Index != j {
			fj.Entry = ptr(fs.Index)
		}
		if s, ok := saturated[fs.Offset]; ok {
			fj.Saturated = &s
		}
		out.Filters = append(out.Filters, fj)
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }

// readMeta reads the metadata copy in use, for the format version.
func readMeta(path string) (*header.Meta, int, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, 0, err
	}
	b := make([]byte, 2*header.MetaSize)
	if _, err := io.ReadFull(fh, b); err != nil {
		return nil, 0, err
	}
	p, err := header.Pick(b, fi.Size())
	if err != nil {
		return nil, 0, err
	}
	return p.Meta, p.Which, nil
}

// seqnumMeaning says what the two seqnums mean at this moment.
func seqnumMeaning(st scaling.Stats) string {
	switch st.Condition {
	case scaling.Clean:
		return fmt.Sprintf("clean: disk_seqnum = mem_seqnum = %d modifications, all durable since the last flush", st.DiskSeqnum)
	case scaling.Unflushed:
		if st.MemSeqnum == 0 {
			return "changed since the last flush (disk_seqnum 0); mem_seqnum 0: an operation is in progress right now"
		}
		return fmt.Sprintf("changed since the last flush (disk_seqnum 0); mem_seqnum %d modifications completed, in the page cache but not all durable: 'flush' makes them so", st.MemSeqnum)
	case scaling.Interrupted:
		return "interrupted: mem_seqnum 0 because a dead writer left an operation in flight; disk_seqnum 0 because the file changed since the last flush"
	case scaling.Dirty:
		return "dirty: disk_seqnum 0 and the changes cannot be vouched for (a restart, no boot identity, or filters a repair could not make exact): the filters marked dirty need 'repair --rebuild-from'"
	}
	return ""
}

func writeInspect(w io.Writer, o *inspectJSON, fancy bool) {
	fmt.Fprintf(w, "file:        %s\n", o.Path)
	if o.Format != nil {
		fmt.Fprintf(w, "format:      dablooms %d.%d (metadata copy %s, generation %d), created %s\n",
			o.Format.Major, o.Format.Minor, o.Format.Copy, o.Format.Generation, o.Created)
	}
	if o.Condition == "unknown" {
		fmt.Fprintf(w, "state:       %s\n", o.State)
		for _, f := range o.Findings {
			fmt.Fprintf(w, "  %s\n", f)
		}
		return
	}
	p := o.Params
	fmt.Fprintf(w, "size:        %s (%d bytes)\n", humanBytes(o.FileSize), o.FileSize)
	fmt.Fprintf(w, "parameters:  capacity %d, error rate %s, growth %g, tightening %g\n",
		p.Capacity, fmtRate(p.ErrorRate), p.GrowthFactor, p.TighteningRatio)
	fmt.Fprintf(w, "             hash %s, seed %s, layout %s\n", p.Hash, p.Seed, p.Layout)
	fmt.Fprintf(w, "condition:   %s", o.Condition)
	if o.State != o.Condition {
		fmt.Fprintf(w, " (deep check: %s)", o.State)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "seqnums:     mem %d, disk %d, phase %s, epoch %d\n", o.MemSeqnum, o.DiskSeqnum, o.Phase, o.Epoch)
	fmt.Fprintf(w, "             %s\n", o.SeqnumMeaning)
	fmt.Fprintf(w, "items:       %d in %d filter(s); estimated false-positive rate %s (bound %s)\n",
		o.Items, len(o.Filters), fmtRate(o.EstimatedFPR), fmtRate(p.ErrorRate))
	fmt.Fprintf(w, "chain:       %d of at most %d filter(s)", len(o.Filters), o.FilterLimit)
	switch {
	case o.FiltersLeft == 0:
		fmt.Fprint(w, ": full once the newest filter is; then 'retire' or 'compact' makes room")
	case o.FiltersLeft*4 <= o.FilterLimit:
		fmt.Fprintf(w, ": %d more before the file is full; 'retire' or 'compact' makes room", o.FiltersLeft)
	}
	fmt.Fprintln(w)
	if o.Retired > 0 {
		fmt.Fprintf(w, "retired:     %d filter(s) since the file was created: filter # below is number %d+# since then\n", o.Retired, o.Retired)
	}
	fmt.Fprintf(w, "writers:     %d live, %d dead (ended without closing), %d closed", o.LiveSlots, o.DeadSlots, o.ClosedSlots)
	if o.InterruptedOps > 0 {
		fmt.Fprintf(w, ", %d operation(s) cut short", o.InterruptedOps)
	}
	fmt.Fprintln(w)
	for _, s := range o.Slots {
		fmt.Fprintf(w, "  slot %-3d %-7s pid %d, %d modification(s) completed", s.Slot, s.Status, s.PID, s.Completed)
		for _, op := range s.InFlight {
			fmt.Fprintf(w, "; %s on filter %d in flight (record %d)", op.Op, op.Filter, op.Record)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "filters:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// A file that retired filters places them in directory entries that
	// are not their positions: show the entry then (it is what findings
	// and in-flight operations name).
	entries := false
	for _, f := range o.Filters {
		entries = entries || f.Entry != nil
	}
	if entries {
		fmt.Fprintln(tw, "  #\tentry\tids\tcapacity\titems\tfill\t\test.FPR\ttarget\tk\tsaturated\tdirty")
	} else {
		fmt.Fprintln(tw, "  #\tids\tcapacity\titems\tfill\t\test.FPR\ttarget\tk\tsaturated\tdirty")
	}
	for _, f := range o.Filters {
		ids := "-"
		if f.FirstID != nil {
			ids = idRange(*f.FirstID, *f.LastID)
		}
		sat := "?"
		if f.Saturated != nil {
			sat = fmt.Sprint(*f.Saturated)
		}
		dirty := "no"
		if f.Dirty {
			dirty = "yes"
		}
		fmt.Fprintf(tw, "  %d\t", f.Index)
		if entries {
			entry := f.Index
			if f.Entry != nil {
				entry = *f.Entry
			}
			fmt.Fprintf(tw, "%d\t", entry)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%5.1f%%\t%s\t%s\t%d\t%s\t%s\n",
			ids, f.Capacity, f.Items, fillBar(f.Fill, 20, fancy), 100*f.Fill,
			fmtRate(f.EstimatedFPR), fmtRate(f.ErrorTarget), f.K, sat, dirty)
	}
	tw.Flush()
	if len(o.Findings) > 0 {
		fmt.Fprintln(w, "findings:")
		for _, f := range o.Findings {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
}
