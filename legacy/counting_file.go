package legacy

import "fmt"

// CountingFile is the content of a single counting filter file written by the original (its
// new_counting_bloom): one filter with no scaling header.
type CountingFile struct {
	Capacity  uint64  // the capacity the file was read with
	ErrorRate float64 // the error rate the file was read with
	Filter            // at offset 0
}

// ReadCounting reads the counting filter file at path, which the original created with the
// given capacity and error rate. Its size must be exactly CountingLayout's Bytes, or
// ReadCounting returns an error wrapping ErrSizeMismatch. Invalid parameters give ErrBadParams.
// The file is opened read-only and never modified.
func ReadCounting(path string, capacity uint64, errorRate float64) (*CountingFile, error) {
	l, err := CountingLayout(capacity, errorRate)
	if err != nil {
		return nil, err
	}
	data, err := readFile(path, func(size uint64) error {
		if size != l.Bytes {
			return fmt.Errorf("%w: file is %d bytes; capacity %d at error %g implies %d bytes: not a dablooms 0.9.1 counting file with these parameters",
				ErrSizeMismatch, size, capacity, errorRate, l.Bytes)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &CountingFile{Capacity: capacity, ErrorRate: errorRate, Filter: newFilter(l, data)}, nil
}
