package recover

import (
	"github.com/dablooms/dablooms/header"
)

// The checks of this file are the cross-checks of docs/FORMAT.md's table
// "How damage to each field is seen" that analysis.go does not make: each
// holds only because the writers guarantee it (docs/PROTOCOLS.md).

// retiredAheadWhenClean notes a hot retired word r ahead of the
// directory's count in a file marked clean. A retirement raises the word
// only after it marked the file dirty, and a flush finishes a retirement
// cut short before it marks the file clean (scaling's settleRetirement),
// so no writer leaves it: it is damage, which readers would follow by
// skipping every key of the filters it names. Repair sets it to the
// directory's count (retiredBad): the filters stay, no key is lost.
func (a *analysis) retiredAheadWhenClean(r uint64) {
	a.retiredBad = true
	a.note(Damaged, -1, -1, header.RetiredOffset, "retired", header.ErrCorrupt,
		"the file is marked clean, but the hot retired word %d is ahead of the directory's %d retired filters (a flush finishes a retirement cut short before it marks the file clean, so no writer leaves this): readers would skip the keys of the filters in entries %v; Open refuses the file; Repair sets the word to %d and keeps them",
		r, a.meta.Retired, a.entriesBelow(r), a.meta.Retired)
}

// entriesBelow lists the directory entries of the chain's filters that a
// retired word r would skip (never the newest).
func (a *analysis) entriesBelow(r uint64) []int {
	var out []int
	for j, d := range a.meta.Filters {
		if a.meta.Retired+uint64(j) >= r || j == len(a.meta.Filters)-1 {
			break
		}
		out = append(out, d.Slot)
	}
	return out
}
