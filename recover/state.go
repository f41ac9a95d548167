package recover

import "fmt"

// State is the condition of a file, from best to worst. A Report's State is
// the worst State of its findings.
type State int

const (
	// Clean: equal to the last durable flush.
	Clean State = iota
	// Unflushed: changed since the last flush, but the machine has not
	// restarted since, so the page cache held every change and the content
	// is trustworthy.
	Unflushed
	// Interrupted: a dead writer left a partial operation; Repair rolls it
	// back from its slot record.
	Interrupted
	// Dirty: changed since the last flush and the machine restarted since
	// (an OS crash may have lost pages), or a filter Repair could not make
	// exact: the filters marked dirty need Rebuild.
	Dirty
	// Damaged: a metadata copy, a checksum or another value is wrong, and
	// Repair can restore it without the application's data; or a filter's
	// counters were overwritten in a sound structure (a run of saturated
	// counters), and Rebuild restores that filter from the application's
	// data (it is in Report.NeedsRebuild).
	Damaged
	// Corrupt: the file, or part of it, cannot be trusted.
	Corrupt
)

func (s State) String() string {
	switch s {
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
	return fmt.Sprintf("state(%d)", int(s))
}
