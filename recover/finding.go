package recover

import (
	"fmt"
	"strings"
)

// Finding is one observation of Verify, located in the file. Filter, Slot and
// Offset are -1 when they do not apply.
type Finding struct {
	State   State  // how bad it is; Clean for a note
	Filter  int    // directory entry, -1 if none
	Slot    int    // writer slot, -1 if none
	Offset  int64  // byte offset in the file of the field, -1 if unknown
	Field   string // name of the field
	Message string // what is wrong, and what Repair or Rebuild does about it
	// Err is the sentinel the finding corresponds to, when there is one:
	// header.ErrNotDablooms, ErrVersion, ErrChecksum or ErrCorrupt, or
	// scaling.ErrUnclean for interrupted and dirty files.
	Err error
}

func (f Finding) String() string {
	var loc []string
	if f.Filter >= 0 {
		loc = append(loc, fmt.Sprintf("filter %d", f.Filter))
	}
	if f.Slot >= 0 {
		loc = append(loc, fmt.Sprintf("slot %d", f.Slot))
	}
	if f.Offset >= 0 {
		loc = append(loc, fmt.Sprintf("offset %d", f.Offset))
	}
	s := f.State.String()
	if f.Field != "" {
		s += ": " + f.Field
	}
	if len(loc) > 0 {
		s += " (" + strings.Join(loc, ", ") + ")"
	}
	return s + ": " + f.Message
}
