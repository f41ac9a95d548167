package header

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by Decode wraps one of them.
var (
	// ErrNotDablooms means the bytes do not start with the dablooms magic.
	ErrNotDablooms = errors.New("not a dablooms file")
	// ErrVersion means the file's major version or feature flags are unknown.
	ErrVersion = errors.New("unsupported dablooms format version")
	// ErrChecksum means a metadata copy's checksum does not match.
	ErrChecksum = errors.New("dablooms metadata checksum mismatch")
	// ErrCorrupt means a field holds a value that cannot be right.
	ErrCorrupt = errors.New("corrupt dablooms file")
)

// CorruptionError locates a problem in a file. It unwraps to one of the
// sentinel errors, so errors.Is(err, ErrCorrupt) and errors.As(err, &ce)
// both work.
type CorruptionError struct {
	Offset int64  // byte offset in the file of the offending field, -1 if unknown
	Filter int    // directory entry, -1 if the field is not a filter's
	Field  string // name of the field
	Reason string // what is wrong with it
	Err    error  // the sentinel: ErrNotDablooms, ErrVersion, ErrChecksum or ErrCorrupt
}

func (e *CorruptionError) Error() string {
	loc := fmt.Sprintf("offset %d", e.Offset)
	if e.Filter >= 0 {
		loc += fmt.Sprintf(", filter %d", e.Filter)
	}
	return fmt.Sprintf("%v: %s (%s): %s", e.Err, e.Field, loc, e.Reason)
}

// Unwrap returns the sentinel error.
func (e *CorruptionError) Unwrap() error { return e.Err }

func corrupt(sentinel error, off int64, filter int, field, format string, args ...any) error {
	return &CorruptionError{Offset: off, Filter: filter, Field: field, Reason: fmt.Sprintf(format, args...), Err: sentinel}
}
