package header

import "hash/crc32"

// Page checksums (version 1.4, designed; docs/FORMAT.md, "Page checksums
// (version 1.4, designed)"). This library does not write them yet: a file
// with FlagPageSums is refused (it is not in KnownFlags), as a library that
// did not keep the checksums up to date would make every later Verify
// report damage.

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
