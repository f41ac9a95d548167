// Floor 0 (words) of package scaling: the sentinel errors, the error types
// and the Condition a file is in.

package scaling

import (
	"errors"
	"fmt"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/mmapfile"
)

// Errors. The header package's sentinels (ErrNotDablooms, ErrVersion,
// ErrChecksum, ErrCorrupt) and *header.CorruptionError are re-exported so
// callers need import only this package.
var (
	ErrNotDablooms = header.ErrNotDablooms
	ErrVersion     = header.ErrVersion
	ErrChecksum    = header.ErrChecksum
	ErrCorrupt     = header.ErrCorrupt

	// ErrNotPresent: Remove found the key absent from every filter its id may route to; nothing changed.
	ErrNotPresent = errors.New("dablooms: key not present in the filter for this id")
	// ErrAmbiguous: Remove found the key in more than one filter whose id
	// range holds the id (ids that repeat or go backwards make ranges
	// overlap); it changed nothing rather than risk decrementing a filter
	// where the key is only a false positive. The key stays present.
	ErrAmbiguous = errors.New("dablooms: key present in several filters for this id; not removed")
	// ErrInvalidID: an id above 2^63-1 (the top bit of a stored id is a flag).
	ErrInvalidID = errors.New("dablooms: invalid id")
	// ErrClosed: the Filter was closed.
	ErrClosed = errors.New("dablooms: filter is closed")
	// ErrReadOnly: a modification on a Filter opened read-only.
	ErrReadOnly = errors.New("dablooms: filter is read-only")
	// ErrInvalidOption: an option is out of range; the *OptionError names it.
	ErrInvalidOption = errors.New("dablooms: invalid option")
	// ErrFull: the newest filter is full and no filter can follow it: the
	// chain has MaxFilters filters, or the next filter of the schedule
	// (Capacity × GrowthFactor^i at a target tightened by TighteningRatio)
	// cannot be built (Stats().FilterLimit says where the chain ends).
	// RetireBefore, recover.Compact or a larger capacity make room.
	ErrFull = errors.New("dablooms: filter chain is full")
	// ErrNoSlot: every writer slot is taken by a live handle or holds an interrupted operation.
	ErrNoSlot = errors.New("dablooms: no free writer slot")
	// ErrSyncFailed: an earlier sync of this handle failed; it no longer claims durability.
	ErrSyncFailed = errors.New("dablooms: an earlier sync failed; reopen the file")
	// ErrUnclean: the file needs attention before it can be trusted; *StateError says why.
	ErrUnclean = errors.New("dablooms: file is not in a trustworthy state")
	// ErrExists: Create found a file at the path and Overwrite was not set.
	// errors.Is(err, fs.ErrExist) holds for it too.
	ErrExists = mmapfile.ErrExists
	// ErrNetworkFS: the file is on a network file system and AllowNetworkFS was not set.
	ErrNetworkFS = mmapfile.ErrNetworkFS
	// ErrBusy: a file could not be taken for a whole-file rewrite or an
	// exclusive handle: Create with Overwrite of a file older than format
	// 1.3 that a handle has open (a newer file is replaced while open, and
	// its handles move to the new one), a rewrite or exclusive writer that
	// kept the file longer than the wait, or a file replaced again and
	// again while it was being opened.
	ErrBusy = mmapfile.ErrBusy
	// ErrReplaced: the file was replaced by a whole-file rewrite while
	// this handle had it open, and the handle could not open the file
	// that replaced it (the error says why; it tries again on a later
	// call). Lookups report true meanwhile: they cannot rule a key out.
	ErrReplaced = errors.New("dablooms: file was replaced and the handle cannot follow")
	// ErrLockTimeout: a cross-process lock was not granted in time.
	ErrLockTimeout = mmapfile.ErrLockTimeout
)

// CorruptionError locates a problem in a file; see header.CorruptionError.
type CorruptionError = header.CorruptionError

// OptionError names the option that is out of range.
type OptionError struct {
	Field  string
	Value  any
	Reason string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("dablooms: invalid option %s = %v: %s", e.Field, e.Value, e.Reason)
}

func (e *OptionError) Unwrap() error { return ErrInvalidOption }

// StateError is returned by Open when the file's condition is Interrupted or
// Dirty and OpenOptions.AllowUnclean is not set. errors.Is(err, ErrUnclean).
type StateError struct {
	Condition Condition
	Detail    string
}

func (e *StateError) Error() string {
	return fmt.Sprintf("dablooms: file is %s: %s (run recovery, or open with AllowUnclean)", e.Condition, e.Detail)
}

func (e *StateError) Unwrap() error { return ErrUnclean }

// Condition says whether a file's contents can be trusted, from best to
// worst. A handle's Condition is one of the first four; Damaged and
// Corrupt need the whole file read, which only recover's Verify does (its
// Report.State is a Condition).
type Condition int

const (
	// Clean: the file equals its last durable Flush.
	Clean Condition = iota
	// Unflushed: changed since the last Flush, but the machine has not
	// restarted since the change began, so the page cache held every change
	// and the contents are trustworthy (a process may have died between
	// operations).
	Unflushed
	// Interrupted: a writer died in the middle of an operation; its slot
	// records what it changed, and recover.Repair can roll it back.
	Interrupted
	// Dirty: changed since the last Flush and the machine restarted since
	// (an OS crash may have lost pages), or no boot identity can vouch for
	// the changes, or Repair left filters it could not make exact. The
	// filters marked dirty must be rebuilt (recover.Rebuild).
	Dirty
	// Damaged: a metadata copy, a checksum or another value is wrong, and
	// recover.Repair can restore it without the application's data; or a
	// filter's counters were overwritten in a sound structure (a run of
	// saturated counters), and recover.Rebuild restores that filter from
	// the application's data (it is in the Report's NeedsRebuild).
	Damaged
	// Corrupt: the file, or part of it, cannot be trusted.
	Corrupt
)

func (c Condition) String() string {
	switch c {
	case Clean:
		return "clean"
	case Unflushed:
		return "unflushed"
	case Interrupted:
		return "interrupted"
	case Dirty:
		return "dirty"
	case Damaged:
		return "damaged"
	case Corrupt:
		return "corrupt"
	}
	return fmt.Sprintf("condition(%d)", int(c))
}

// ErrNotLive is returned by Freeze for a file whose handles do not watch
// the replaced word (a file without header.FlagLiveReplace, or whose
// metadata cannot be read): a rewrite must then wait until no handle has it
// open (the open lock; see header.OpenLockOffset).
var ErrNotLive = errors.New("dablooms: the file's handles are not told of a replacement")
