package legacy

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// ScalingFile is the content of a scaling filter file written by the original.
type ScalingFile struct {
	Capacity  uint64  // the capacity the file was read with
	ErrorRate float64 // the error rate the file was read with

	MaxID uint64 // largest id ever added
	// MemSeqnum counts the original's adds and removes; 0 means a writer died in the middle of
	// one. DiskSeqnum is MemSeqnum as of the last completed flush, or 0 if the file changed
	// after it (or was never flushed).
	MemSeqnum, DiskSeqnum uint64

	Filters []Filter // oldest first; at least one
}

// ReadScaling reads the scaling filter file at path, which the original created with the given
// capacity and error rate. The number of filters follows from the file's size, which must be
// exactly the header plus the first n >= 1 filters' sizes (see Layout); otherwise ReadScaling
// returns an error wrapping ErrSizeMismatch. Invalid parameters give ErrBadParams. The file is
// opened read-only and never modified.
func ReadScaling(path string, capacity uint64, errorRate float64) (*ScalingFile, error) {
	if err := checkParams(capacity, errorRate); err != nil {
		return nil, err
	}
	var layouts []FilterLayout
	data, err := readFile(path, func(size uint64) error {
		var sizes []uint64
		end := uint64(ScalingHeaderSize)
		for i := 0; end < size || i == 0; i++ {
			l, err := scalingFilter(capacity, errorRate, i, end)
			if err != nil {
				if i == 0 {
					return err
				}
				break // the original could not have made more filters
			}
			layouts = append(layouts, l)
			end += l.Bytes
			sizes = append(sizes, end)
		}
		if end != size {
			return fmt.Errorf("%w: file is %d bytes; capacity %d at error %g implies sizes %s: not a dablooms 0.9.1 file with these parameters",
				ErrSizeMismatch, size, capacity, errorRate, listSizes(sizes))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s := &ScalingFile{
		Capacity:   capacity,
		ErrorRate:  errorRate,
		MaxID:      binary.LittleEndian.Uint64(data),
		MemSeqnum:  binary.LittleEndian.Uint64(data[8:]),
		DiskSeqnum: binary.LittleEndian.Uint64(data[16:]),
		Filters:    make([]Filter, len(layouts)),
	}
	for i, l := range layouts {
		s.Filters[i] = newFilter(l, data[l.Offset:l.Offset+l.Bytes])
	}
	return s, nil
}

// Contains reports whether the file holds key, as the original's scaling_bloom_check did: some
// filter, checked newest to oldest, holds it.
func (s *ScalingFile) Contains(key []byte) bool {
	h := Hash(key)
	for i := len(s.Filters) - 1; i >= 0; i-- {
		if s.Filters[i].ContainsHash(h) {
			return true
		}
	}
	return false
}

// listSizes formats file sizes for an error message, eliding the middle of a long list; the
// list always ends in "..." since the original could have added more filters.
func listSizes(sizes []uint64) string {
	var b strings.Builder
	for i, s := range sizes {
		if len(sizes) > 8 && i >= 3 && i < len(sizes)-2 {
			if i == 3 {
				b.WriteString("..., ")
			}
			continue
		}
		fmt.Fprintf(&b, "%d, ", s)
	}
	b.WriteString("...")
	return b.String()
}
