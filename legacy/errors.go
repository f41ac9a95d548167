package legacy

import "errors"

var (
	// ErrBadParams reports a capacity, error rate or filter index the original could not have
	// used to write a file.
	ErrBadParams = errors.New("legacy: bad parameters")

	// ErrSizeMismatch reports a file whose size is not one the given parameters imply: it is
	// not a dablooms 0.9.1 file, or not one made with these parameters, or it is damaged.
	ErrSizeMismatch = errors.New("legacy: file size does not match parameters")
)
