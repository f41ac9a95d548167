package recover

import "github.com/dablooms/dablooms/scaling"

// State is the condition of a file as Verify sees it, from best to worst:
// scaling's Condition, one enum for both packages. A Report's State is
// the worst State of its findings; Damaged and Corrupt are found only by
// reading the whole file, as Verify does.
type State = scaling.Condition

// The States, scaling's Conditions (see scaling.Condition for each).
const (
	Clean       = scaling.Clean
	Unflushed   = scaling.Unflushed
	Interrupted = scaling.Interrupted
	Dirty       = scaling.Dirty
	Damaged     = scaling.Damaged
	Corrupt     = scaling.Corrupt
)
