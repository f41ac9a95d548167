package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/recover"
)

// The JSON form of a recover.Report, shared by verify, inspect and repair.
// Field names are part of the documented schema (doc.go, docs/CLI.md).

type findingJSON struct {
	State   string `json:"state"`
	Filter  int    `json:"filter"` // -1: not about one filter
	Slot    int    `json:"slot"`   // -1: not about one writer slot
	Offset  int64  `json:"offset"` // -1: no one byte offset
	Field   string `json:"field"`
	Message string `json:"message"`
}

type filterReportJSON struct {
	Index      int     `json:"index"`
	FirstID    *uint64 `json:"first_id"` // null while the filter is empty
	LastID     *uint64 `json:"last_id"`
	Capacity   uint64  `json:"capacity"`
	Items      uint64  `json:"items"`
	K          int     `json:"k"`
	Counters   uint64  `json:"counters"`
	CounterSum uint64  `json:"counter_sum"`
	Saturated  uint64  `json:"saturated"`
	Dirty      bool    `json:"dirty"`
	Offset     int64   `json:"offset"`
	Length     int64   `json:"length"`
}

type opJSON struct {
	Record  int    `json:"record"`
	Op      string `json:"op"`
	Filter  int    `json:"filter"`
	Hash    string `json:"hash"`    // hex
	Changed string `json:"changed"` // hex bit mask of the key's positions already changed
	Doubt   string `json:"doubt"`   // hex bit mask of positions whose change is uncertain
}

type slotJSON struct {
	Slot int `json:"slot"`
	// Status is "live" (a running process holds the slot), "dead" (its
	// process ended without closing: killed, or crashed) or "closed" (its
	// last owner closed it; it only keeps its count of operations).
	Status    string   `json:"status"`
	Live      bool     `json:"live"`
	PID       uint64   `json:"pid"`
	Completed uint64   `json:"completed"`
	InFlight  []opJSON `json:"in_flight"`
}

type reportJSON struct {
	Schema       string             `json:"schema,omitempty"`
	Path         string             `json:"path"`
	State        string             `json:"state"`
	ExitCode     int                `json:"exit_code"`
	MemSeqnum    uint64             `json:"mem_seqnum"`
	DiskSeqnum   uint64             `json:"disk_seqnum"`
	Phase        string             `json:"phase"`
	Epoch        uint64             `json:"epoch"`
	BootMatches  bool               `json:"boot_matches"`
	FileSize     int64              `json:"file_size"`
	Params       paramsJSON         `json:"params"`
	Findings     []findingJSON      `json:"findings"`
	Filters      []filterReportJSON `json:"filters"`
	Slots        []slotJSON         `json:"slots"`
	NeedsRebuild []int              `json:"needs_rebuild"` // filters whose counters need --rebuild-from
	Actions      []string           `json:"actions"`       // what repair did (or, with --dry-run, would do)
}

func hex64(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }

// reportExit maps a report to the exit code of verify, inspect and repair:
// 0 for clean and unflushed, 3 for the other states, except that a file that
// is not a dablooms file at all (or of an unknown version) is an
// operational error, 1. Only a corrupt report can be that: a damaged file
// has a valid metadata copy, so it is a dablooms file this version reads.
// A file that starts with the dablooms magic but is too short to hold a
// metadata copy is a dablooms file cut short, so damaged: 3, like a file
// cut elsewhere.
func reportExit(r *recover.Report) int {
	if r.State == recover.Clean || r.State == recover.Unflushed {
		return exitOK
	}
	err := r.Err()
	if r.State == recover.Corrupt && errors.Is(err, header.ErrVersion) {
		return exitFail
	}
	if r.State == recover.Corrupt && errors.Is(err, header.ErrNotDablooms) && !startsWithMagic(r.Path) {
		return exitFail
	}
	return exitUnclean
}

func toReportJSON(r *recover.Report) reportJSON {
	out := reportJSON{
		Path: r.Path, State: r.State.String(), ExitCode: reportExit(r),
		MemSeqnum: r.MemSeqnum, DiskSeqnum: r.DiskSeqnum, Phase: r.Phase, Epoch: r.Epoch,
		BootMatches: r.BootMatches, FileSize: r.FileSize, Params: toParamsJSON(r.Params),
		Findings: []findingJSON{}, Filters: []filterReportJSON{}, Slots: []slotJSON{},
		NeedsRebuild: append([]int{}, r.NeedsRebuild...), Actions: []string{},
	}
	for _, a := range r.Actions {
		out.Actions = append(out.Actions, cliWords(a))
	}
	for _, f := range r.Findings {
		f = plainFinding(f)
		out.Findings = append(out.Findings, findingJSON{State: f.State.String(), Filter: f.Filter, Slot: f.Slot, Offset: f.Offset, Field: f.Field, Message: f.Message})
	}
	for _, f := range r.Filters {
		firstID, lastID := jsonIDs(f.FirstID, f.LastID)
		out.Filters = append(out.Filters, filterReportJSON{
			Index: f.Index, FirstID: firstID, LastID: lastID,
			Capacity: f.Capacity, Items: f.Items, K: f.K, Counters: f.Counters, CounterSum: f.CounterSum,
			Saturated: f.Saturated, Dirty: f.Dirty, Offset: f.Offset, Length: f.Length,
		})
	}
	owners := slotOwners(r.Path)
	for _, s := range r.Slots {
		status := "closed"
		switch {
		case s.Live:
			status = "live"
		case owners[s.Slot] != 0 || len(s.InFlight) > 0:
			status = "dead"
		}
		sj := slotJSON{Slot: s.Slot, Status: status, Live: s.Live, PID: s.PID, Completed: s.Completed, InFlight: []opJSON{}}
		for _, o := range s.InFlight {
			sj.InFlight = append(sj.InFlight, opJSON{Record: o.Record, Op: o.Op, Filter: o.Filter, Hash: hex64(o.Hash), Changed: hex64(o.Changed), Doubt: hex64(o.Doubt)})
		}
		out.Slots = append(out.Slots, sj)
	}
	return out
}

// writeFindings prints every finding on its own line.
func writeFindings(w io.Writer, r *recover.Report) {
	for _, f := range r.Findings {
		fmt.Fprintln(w, plainFinding(f).String())
	}
}

// plainFinding says a finding in the CLI's words (cliWords), and a bad
// magic in words: the library quotes the first eight bytes, which for a file that is not a dablooms file at all (a
// random file, a text file) are noise on the terminal.
func plainFinding(f recover.Finding) recover.Finding {
	f.Message = cliWords(f.Message)
	if f.Field != "magic" {
		return f
	}
	// "got ...", or "metadata copy A: got ..." for a file long enough to
	// hold both copies.
	prefix, _, found := strings.Cut(f.Message, "got ")
	if !found || (prefix != "" && !strings.HasSuffix(prefix, ": ")) {
		return f
	}
	if f.Offset == 0 {
		f.Message = prefix + fmt.Sprintf("the file does not start with %q, the mark of a dablooms file", header.Magic[:])
	} else {
		f.Message = prefix + fmt.Sprintf("no %q mark here, where a metadata copy starts", header.Magic[:])
	}
	return f
}

// libraryWords are the names of the library's functions that its findings
// and repair actions use for what a CLI user does with a command.
var libraryWords = regexp.MustCompile(`\b(Rebuild|Repair|Verify|Compact|RetireBefore|Open|Flush|Create)\b`)

// cliWords rewrites a message of package recover in the CLI's words: "need
// Rebuild" becomes "need 'repair --rebuild-from'", "Repair zeroes it"
// "repair zeroes it", and so on. The library's strings stay as they are
// for its own users.
func cliWords(msg string) string {
	msg = strings.ReplaceAll(msg, "Rebuild (repair --rebuild-from)", "Rebuild")
	msg = strings.ReplaceAll(msg, "refused with ErrAmbiguous", "refused as ambiguous")
	return libraryWords.ReplaceAllStringFunc(msg, func(w string) string {
		switch w {
		case "Rebuild":
			return "'repair --rebuild-from'"
		case "RetireBefore":
			return "retire"
		case "Open":
			return "opening"
		}
		return strings.ToLower(w)
	})
}

// String formats a finding as recover.Finding.String does.
func (f findingJSON) String() string {
	return recover.Finding{State: stateOf(f.State), Filter: f.Filter, Slot: f.Slot, Offset: f.Offset, Field: f.Field, Message: f.Message}.String()
}

func stateOf(name string) recover.State {
	for s := recover.Clean; s <= recover.Corrupt; s++ {
		if s.String() == name {
			return s
		}
	}
	return recover.Corrupt
}

// slotOwners reads the owner word of every writer slot: zero when the slot's
// last owner closed it. Errors leave the map empty (every slot "closed"
// unless live or in flight).
func slotOwners(path string) map[int]uint64 {
	owners := map[int]uint64{}
	fh, err := os.Open(path)
	if err != nil {
		return owners
	}
	defer fh.Close()
	b := make([]byte, header.NumSlots*header.SlotSize)
	if _, err := fh.ReadAt(b, header.SlotsOffset); err != nil {
		return owners
	}
	for s := 0; s < header.NumSlots; s++ {
		owners[s] = binary.LittleEndian.Uint64(b[s*header.SlotSize+header.SlotOwnerOffset:])
	}
	return owners
}

// writeSummary prints the one-line summary of a report.
func writeSummary(w io.Writer, label string, r *recover.Report) {
	fmt.Fprintf(w, "%s: %s (%d finding(s))", label, r.State, len(r.Findings))
	if r.Phase != "" {
		fmt.Fprintf(w, "; mem_seqnum %d, disk_seqnum %d, phase %s, epoch %d", r.MemSeqnum, r.DiskSeqnum, r.Phase, r.Epoch)
	}
	fmt.Fprintln(w)
}

// cutShort returns the end of r's last filter and the filters (entries)
// that end past size bytes: a file of size bytes with such filters was
// truncated (cut) and their counters are lost.
func cutShort(r *recover.Report, size int64) (need int64, cut []int) {
	for _, f := range r.Filters {
		end := f.Offset + f.Length
		need = max(need, end)
		if end > size {
			cut = append(cut, f.Index)
		}
	}
	return need, cut
}

// truncatedMeaning says that the file at path, of size bytes, was
// truncated, if its filters (those of r) end past it, and what to do; ""
// if it was not.
func truncatedMeaning(r *recover.Report, size int64, path string) string {
	need, cut := cutShort(r, size)
	if len(cut) == 0 {
		return ""
	}
	return fmt.Sprintf("it was truncated to %d bytes, but its filters need %d: the counters of filters %v were cut off. "+
		"'dabloomsctl repair %s --rebuild-from KEYS' (KEY<TAB>ID lines of every key) rebuilds them; or restore a backup ('dabloomsctl restore')",
		size, need, cut, path)
}

// stateMeaning explains a report's state in a few words, with what to do.
func stateMeaning(r *recover.Report) string {
	if m := truncatedMeaning(r, r.FileSize, r.Path); m != "" && r.State >= recover.Dirty {
		return m
	}
	switch s := r.State; s {
	case recover.Clean:
		return "equal to the last flush; nothing to do"
	case recover.Unflushed:
		return "changed since the last flush on this boot; every completed change is in the page cache and the contents are trustworthy ('flush' makes them durable)"
	case recover.Interrupted:
		return "a writer died in the middle of an operation: 'repair' rolls it back"
	case recover.Dirty:
		return "changed since the last flush and cannot be vouched for (the machine restarted, no boot identity was recorded, or a repair left filters it could not make exact: the state finding says which); 'repair --rebuild-from' rebuilds the filters marked dirty"
	case recover.Damaged:
		return "some filter or hot word is wrong but the file's structure is sound: 'repair' (with --rebuild-from for the filters it cannot fix)"
	case recover.Corrupt:
		if len(r.Filters) == 0 {
			// No metadata copy to work from: repair cannot help.
			return "no metadata copy can be used, so repair cannot help: restore a backup (dabloomsctl backup makes one), " +
				"or create the file anew ('dabloomsctl create --force') and add your keys again ('dabloomsctl add --from KEYS')"
		}
		return "the file's structure is broken: restore a backup, or 'repair --rebuild-from' into --output"
	}
	return ""
}
