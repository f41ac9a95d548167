package header

// Per-writer item counts (version 1.1). A filter's item count is the
// filter line's items word plus, for every writer slot s whose bit is set
// in the line's writers word (FilterWritersOffset), the signed 64-bit count
// at CountsOffset + CountSize·s: a writer adds to and takes from its own
// count, on a line no other process writes, so writers share no word per
// operation but the counters themselves. A writer sets its bit before its
// first change to its count. A count may be negative (a writer removed
// keys another added). The sum goes negative only when Removes take more
// than the Adds put in (keys never added, or removed more often than added
// with saturated counters); readers read it as zero, and Repair recounts
// it. Repair folds the counts into the items word and clears the writers
// word.
const (
	// CountSize is the space of one writer's count: a cache line.
	CountSize = LineSize
	// CountsBytes is the size of a filter's counts page.
	CountsBytes = PageSize
	// CountWords is the number of words of a writer's count line that
	// hold its count with FlagRecordCounts (all of them).
	CountWords = CountSize / 8
)

// FlagRecordCounts is set in a file whose writers count items in every
// word of their count lines (version 1.6), one word per record. A library
// that reads only the first word would miss the others' counts and admit
// Adds past a filter's capacity, so it must refuse the file.
const FlagRecordCounts uint64 = 32

// CountWord returns the word of a writer's count line that record r of
// its slot counts in, in a file with FlagRecordCounts, and whether that
// word is the record's alone (the last word is shared).
func CountWord(r int) (w int, own bool) {
	if r < CountWords-1 {
		return r, true
	}
	return CountWords - 1, false
}

// CountOffset returns the offset of writer slot s's item count on filter d.
func CountOffset(d *FilterDesc, s int) int64 { return d.CountsOffset() + int64(s)*CountSize }
