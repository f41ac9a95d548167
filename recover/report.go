package recover

import (
	"errors"
	"fmt"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/mmapfile"
	"github.com/dablooms/dablooms/scaling"
)

// Report is the result of Verify (and of Repair and Rebuild: the Verify
// report of the file they wrote).
type Report struct {
	Path     string
	State    State     // the worst State among the findings
	Findings []Finding // every problem and note, located
	Filters  []FilterReport
	Slots    []SlotReport // only slots that are live, owned, hold a record in flight or have counted operations
	// MemSeqnum is the sum of the operations completed through every slot
	// record, or 0 while an operation is in flight (or was interrupted).
	MemSeqnum uint64
	// DiskSeqnum is the stored disk_seqnum while the phase is clean, else 0.
	DiskSeqnum  uint64
	Phase       string // phase of the state word: clean, marking, dirty, flushing
	Epoch       uint64 // epoch of the state word
	BootMatches bool   // the boot identity recorded with the dirty mark is this machine's current one
	FileSize    int64
	Params      header.Params
	// NeedsRebuild lists the filters (directory entries) whose counters cannot be trusted: Rebuild
	// re-adds their keys from the application's data.
	NeedsRebuild []int
	// Actions lists what Repair or Rebuild did (or, with DryRun, would do).
	Actions []string
	// Backup is where an in-place Repair or Rebuild kept the original file;
	// "" when it kept none (nothing to repair, Output, DryRun, NoBackup, or
	// an error).
	Backup string
	// Written says that Repair or Rebuild wrote the repaired file (over the
	// original, or to Output); false when the file was left as it is
	// (nothing to repair in place), for DryRun, and on an error.
	Written bool
}

// FilterReport describes one filter of the chain.
type FilterReport struct {
	// Index is the filter's directory entry (header.FilterDesc.Slot, as
	// scaling's Stats names it): its place in the chain in a file without
	// retired filters, not in a ring file (Report.Filters is in chain order).
	Index           int
	FirstID, LastID uint64 // id range of the filter line (MaxUint64, 0 while empty)
	Sealed          bool   // the range no longer widens (a newer filter exists)
	Capacity, Items uint64 // Items is the raw item count word
	K               int
	Counters        uint64 // number of counters
	CounterSum      uint64 // sum of the counters
	Saturated       uint64 // counters at 15
	Dirty           bool   // marked with the current epoch while the file is not clean
	Offset, Length  int64
}

// OpRecord is an in-flight operation record of a writer slot.
type OpRecord struct {
	Slot, Record int
	Op           string // "add" or "remove" (or "invalid(n)")
	Filter       int    // directory entry; in a ring file, possibly one whose filter was retired
	Hash         uint64 // key hash of the filter (salted for native-hash filters)
	Changed      uint64 // bit j: position j's counter differs from before the operation
	Doubt        uint64 // bit j: the change of position j may or may not have happened
}

// SlotReport describes a writer slot.
type SlotReport struct {
	Slot      int
	Live      bool   // another process holds the slot's lock
	PID       uint64 // process id recorded by the owner (informational)
	Completed uint64 // operations completed through the slot's records
	InFlight  []OpRecord
}

// Err returns nil for a clean or unflushed file, and otherwise an error for
// the worst finding: a *header.CorruptionError wrapping header.ErrNotDablooms,
// ErrVersion, ErrChecksum or ErrCorrupt for damaged and corrupt files, and an
// error wrapping scaling.ErrUnclean for interrupted and dirty ones.
func (r *Report) Err() error {
	if r == nil || r.State <= Unflushed {
		return nil
	}
	for _, f := range r.Findings {
		if f.State != r.State {
			continue
		}
		if f.State >= Damaged {
			sentinel := f.Err
			if sentinel == nil {
				sentinel = header.ErrCorrupt
			}
			return &header.CorruptionError{Offset: f.Offset, Filter: f.Filter, Field: f.Field, Reason: f.Message, Err: sentinel}
		}
		return fmt.Errorf("%w: %s is %s: %s", scaling.ErrUnclean, r.Path, r.State, f.Message)
	}
	if r.State >= Damaged {
		return &header.CorruptionError{Offset: -1, Filter: -1, Field: "file", Reason: r.State.String(), Err: header.ErrCorrupt}
	}
	return fmt.Errorf("%w: %s is %s", scaling.ErrUnclean, r.Path, r.State)
}

// The errors of this package.
var (
	// ErrBusy: another process has the file open for writing (it holds a
	// writer slot or the growth lock), or, for a repair in place, any handle
	// has it open (read-only ones included: they hold the open lock), and
	// RepairOptions.Wait ran out.
	// It is mmapfile.ErrBusy (scaling.ErrBusy too): one sentinel for "in
	// use" whichever package refuses.
	ErrBusy = mmapfile.ErrBusy
	// ErrNoSource: Rebuild was called without a Source.
	ErrNoSource = errors.New("recover: Rebuild needs a Source")
	// ErrUnrepairable: the file has no valid metadata copy; nothing can be
	// repaired or rebuilt (restore a backup).
	ErrUnrepairable = errors.New("recover: no valid metadata copy; restore a backup")
	// ErrNotRegular: the path is not a regular file.
	ErrNotRegular = mmapfile.ErrNotRegular
)
