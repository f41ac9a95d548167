package legacy

import "encoding/binary"

// Filter is one counting filter read from a file.
type Filter struct {
	FilterLayout
	StartID uint64 // first id the filter covers (header field id)
	Count   uint32 // header field count: adds minus removes the original did on this filter

	counters []byte // packed: two 4-bit counters per byte, even index in the high nibble
}

// newFilter decodes a filter from b, which holds exactly l.Bytes bytes.
func newFilter(l FilterLayout, b []byte) Filter {
	return Filter{
		FilterLayout: l,
		StartID:      binary.LittleEndian.Uint64(b),
		Count:        binary.LittleEndian.Uint32(b[8:]),
		counters:     b[FilterHeaderSize:],
	}
}

// Counter returns counter i (0 <= i < Counters), a value in 0..15. It panics if i is out of
// range.
func (f *Filter) Counter(i uint64) uint8 {
	if i >= f.Counters {
		panic("legacy: counter index out of range")
	}
	b := f.counters[i/2]
	if i%2 == 0 {
		return b >> 4
	}
	return b & 0x0f
}

// CounterValues returns a new slice holding every counter, one value in 0..15 per counter.
func (f *Filter) CounterValues() []uint8 {
	c := make([]uint8, f.Counters)
	for i := range c {
		c[i] = f.Counter(uint64(i))
	}
	return c
}

// Contains reports whether the filter holds key, as the original's counting_bloom_check did.
func (f *Filter) Contains(key []byte) bool { return f.ContainsHash(Hash(key)) }

// ContainsHash is Contains for a key whose Hash is h: all K counters at the key's indices are
// non-zero.
func (f *Filter) ContainsHash(h uint64) bool {
	for j := 0; j < f.K; j++ {
		if f.Counter(uint64(Index(h, j, f.CountsPerFunc))) == 0 {
			return false
		}
	}
	return true
}
