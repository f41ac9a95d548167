package header

import (
	"encoding/binary"
	"hash/crc32"
	"sync/atomic"
	"unsafe"
)

// Page checksums (version 1.4; docs/FORMAT.md, "Page checksums (version
// 1.4)"). A filter of a file with FlagPageSums ends with check pages: a
// changed map of one byte per covered page, then a CRC-32C per covered
// page. A modification marks its page changed after the change; Flush
// takes the checksums of the pages marked changed.

// FlagPageSums is the feature flag of a file whose filters end with check
// pages: a changed map and a CRC-32C of every page of their counters,
// per-writer counts and late-add index (version 1.4).
const FlagPageSums uint64 = 8

// PageSumSize is the size of one page checksum (a CRC-32C, little-endian).
const PageSumSize = 4

// Values of a changed-map byte.
const (
	// PageSumValid: the page's checksum was taken after its last change.
	PageSumValid = 0
	// PageChanged: the page may have changed since its checksum was taken.
	PageChanged = 1
)

// SumPages returns the check pages a filter of dataPages covered pages
// ends with: its changed map (one byte per covered page), then its
// checksums (PageSumSize bytes per covered page), each rounded up to whole
// pages.
func SumPages(dataPages int64) int64 {
	return (dataPages+PageSize-1)/PageSize + (dataPages*PageSumSize+PageSize-1)/PageSize
}

// CoveredPages returns the covered pages of a filter of totalPages pages
// (its length / PageSize) in a file with FlagPageSums: the one d with
// d + SumPages(d) = totalPages, and false when there is none (the length
// cannot be right).
func CoveredPages(totalPages int64) (int64, bool) {
	if totalPages < 3 {
		return 0, false // at least a page of counters, a map page and a sums page
	}
	// d + SumPages(d) grows by 1 or more with d; start from below.
	d := totalPages * PageSize / (PageSize + 1 + PageSumSize)
	for ; d > 0 && d+SumPages(d) > totalPages; d-- {
	}
	for ; d+SumPages(d) < totalPages; d++ {
	}
	return d, d > 0 && d+SumPages(d) == totalPages
}

// SumLayout is where a filter's check pages lie, as offsets in the file.
type SumLayout struct {
	Covered    int64 // pages covered, from the filter's offset
	MapOffset  int64 // changed map: byte p is page p's state (PageSumValid, PageChanged)
	SumsOffset int64 // checksums: PageSumSize bytes per covered page
	End        int64 // end of the check pages: the filter's end
}

// SumLayoutOf returns the check pages of a filter at offset of length
// bytes in a file with FlagPageSums, and false if no layout fits.
func SumLayoutOf(offset, length int64) (SumLayout, bool) {
	if length%PageSize != 0 {
		return SumLayout{}, false
	}
	d, ok := CoveredPages(length / PageSize)
	if !ok {
		return SumLayout{}, false
	}
	m := offset + d*PageSize
	s := m + (d+PageSize-1)/PageSize*PageSize
	return SumLayout{Covered: d, MapOffset: m, SumsOffset: s, End: offset + length}, true
}

// PageSum returns the checksum of one page: CRC-32C (Castagnoli) of its
// bytes.
func PageSum(page []byte) uint32 { return crc32.Checksum(page, castagnoli) }

// SumLayout returns where the filter's check pages lie, and false if it
// has none (a file without FlagPageSums).
func (f *FilterDesc) SumLayout() (SumLayout, bool) {
	if f.Sums == 0 {
		return SumLayout{}, false
	}
	return SumLayoutOf(f.Offset, f.Length)
}

// CoveredBytes returns the bytes of the filter its checksums cover: all
// of it but the check pages.
func (f *FilterDesc) CoveredBytes() int64 { return f.Length - f.Sums }

// AddSums gives a filter described without check pages its check pages
// (for a file with FlagPageSums): its length, extra pages and Sums grow by
// SumPages of its pages.
func AddSums(f *FilterDesc) {
	if f.Sums != 0 {
		return
	}
	f.Sums = SumPages(f.Length/PageSize) * PageSize
	f.Length += f.Sums
	f.Extra += f.Sums
}

// PageMap is a filter's changed map laid over the mapped file, for atomic
// access: byte p is covered page p's state. Go has no 8-bit atomic
// operations, so the map is read and written as aligned 32-bit words of
// four pages' bytes (the map starts on a page): a writer marks page p by
// loading word p/4 and, if byte p%4 of it (little-endian) is 0, or-ing 1
// into it; Flush takes a word's marks by swapping it with 0. The format
// stays one byte per page, and the same on every machine: the library runs
// on little-endian machines only (as the hot words' views do).
type PageMap []uint32

// PageMapOf lays a PageMap over the map's bytes (a multiple of 4 bytes,
// 4-byte aligned: mapped pages).
func PageMapOf(b []byte) PageMap {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

// Mark marks covered page p changed: a load, and a store only if the page
// is not marked yet.
func (m PageMap) Mark(p uint64) {
	w, bit := &m[p>>2], uint32(PageChanged)<<(p&3*8)
	if atomic.LoadUint32(w)&(0xff<<(p&3*8)) == 0 {
		atomic.OrUint32(w, bit)
	}
}

// Take returns word w of the map (pages 4w to 4w+3, a byte each) and
// leaves it 0, in one atomic swap: every page whose byte was not 0 must
// have its checksum taken after this.
func (m PageMap) Take(w int) uint32 {
	if atomic.LoadUint32(&m[w]) == 0 {
		return 0
	}
	return atomic.SwapUint32(&m[w], 0)
}

// Changed reports whether covered page p is marked changed (any byte but
// PageSumValid).
func (m PageMap) Changed(p uint64) bool {
	return atomic.LoadUint32(&m[p>>2])>>(p&3*8)&0xff != PageSumValid
}

// PageSums is a filter's checksums laid over the mapped file: entry p is
// covered page p's CRC-32C (little-endian in the file).
type PageSums []uint32

// PageSumsOf lays a PageSums over the checksums' bytes.
func PageSumsOf(b []byte) PageSums {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

// Get returns page p's checksum.
func (s PageSums) Get(p uint64) uint32 { return atomic.LoadUint32(&s[p]) }

// Set stores page p's checksum.
func (s PageSums) Set(p uint64, v uint32) { atomic.StoreUint32(&s[p], v) }

// ChangedIn reports whether covered page p is marked changed in the bytes
// of a filter's check pages read from a file image: check holds the bytes
// from the layout's MapOffset on.
func ChangedIn(check []byte, p int64) bool { return check[p] != PageSumValid }

// SumIn returns covered page p's checksum from the bytes of a filter's
// check pages read from a file image (check from the layout's MapOffset).
func (l SumLayout) SumIn(check []byte, p int64) uint32 {
	return binary.LittleEndian.Uint32(check[l.SumsOffset-l.MapOffset+p*PageSumSize:])
}

// PutSumIn stores covered page p's checksum in the bytes of a filter's
// check pages of a file image (check from the layout's MapOffset).
func (l SumLayout) PutSumIn(check []byte, p int64, v uint32) {
	binary.LittleEndian.PutUint32(check[l.SumsOffset-l.MapOffset+p*PageSumSize:], v)
}

// ZeroPageSum is the checksum of a page of zeros: a new filter's.
var ZeroPageSum = PageSum(make([]byte, PageSize))
