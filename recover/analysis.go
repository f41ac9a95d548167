package recover

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
	"github.com/dablooms/dablooms/seqnum"
)

var le = binary.LittleEndian

// itemLimit is the largest item count Verify accepts for a filter of the
// given capacity: header.ItemLimit, which the library never exceeds, plus
// one per in-flight record of every slot, which files written before Adds
// were admitted (docs/FORMAT.md) could reach when writers raced for the
// last places.
func itemLimit(capacity uint64) uint64 {
	return header.ItemLimit(capacity) + header.NumSlots*header.RecordsPerSlot
}

// analysis is everything Verify learns about a file; Repair and Rebuild plan
// from it.
type analysis struct {
	size  int64
	head  []byte // the first DataOffset bytes, zero-padded if the file is shorter
	boot  bootID // this machine's
	quick bool   // skip the page checksums (verify --quick)

	dirState // the metadata copies and the directory in use
	hotState // the hot page's words
	filters  []filterInfo
	recState // the writer slots and their records
	verdict  // what the analysis found
}

// dirState is what the analysis reads of the metadata copies and of the
// directory in use.
type dirState struct {
	metas    [2]*header.Meta
	metaErrs [2]error
	meta     *header.Meta        // the copy in use; nil if neither is valid
	which    int                 // 0 = copy A, 1 = copy B
	restore  int                 // copy that Repair rewrites from the other, -1 if none
	dropped  []header.FilterDesc // filters a retirement cut short retired
	// ring: the file has retired filters (FlagRing, or a retirement cut
	// short): lines of unused entries and the space between and after the
	// filters may hold what retired filters left, which is not damage.
	ring bool
	// bySlot is the index in filters of the filter in each directory
	// entry, -1 for an entry the chain does not use.
	bySlot [header.MaxFilters]int
}

// hotState is what the analysis reads of the hot page.
type hotState struct {
	hotOK     bool // the state word and the published count are plausible
	state     uint64
	epoch     uint64
	phase     seqnum.Phase
	disk      uint64
	published uint64
	// hotRetired is the hot retired word. When it is ahead of the
	// directory's count (a retirement cut short, docs/FORMAT.md), meta is
	// the directory without the filters it retired (dropped), as readers
	// already use it, and Repair writes that directory to both copies.
	hotRetired  uint64
	retiredBad  bool     // the hot retired word cannot be right; Repair sets it to meta.Retired
	replacedBad bool     // the hot replaced word cannot be right; Repair clears it
	undo        *undoFix // an armed undo block of a dead writer (undo.go)
	stored      bootID   // boot identity recorded with the dirty mark
	bootMatch   bool
	trusted     bool // clean, or dirty on this boot: counters of dirty filters hold every change
	hotUnused   bool // unused bytes of the hot page are not zero
	linesDirty  bool // unused filter lines are not zero
}

// recState is what the analysis reads of the writer slots.
type recState struct {
	slots       [header.NumSlots]slotInfo
	anyLive     bool
	mem         uint64 // sum of completed counts over every record
	anyInFlight bool
}

// verdict is what the analysis found: its findings, and the filters that
// need Rebuild.
type verdict struct {
	needRebuild []bool
	findings    []Finding
}

type filterInfo struct {
	desc        header.FilterDesc
	lineRead         // its line and counts
	counterRead      // its counters
	dirty       bool // marked changed since the last flush
	cutOps           // the operations dead writers cut short on it
}

// lineRead is a filter's line as read (its writers word with the bits
// read again after the counts: readCounts); items, minID and maxID are
// what it says: the item count with the writers' counts, the id range
// without the Sealed bit.
type lineRead struct {
	line                header.Line
	items, minID, maxID uint64
	sealed              bool                   // the Sealed bit of the max id word
	counts              [header.NumSlots]int64 // the writers' item counts (the sum of each line's words with FlagRecordCounts)
	countWords          [header.NumSlots]uint8 // bit w: word w of the slot's count line is not zero (read or not)
	strayCounts         bool                   // counts of slots the writers word does not name are not zero
	lineOK              bool                   // mark, id range and the reserved word are plausible
	itemsOK             bool                   // 0 ≤ items ≤ capacity + slack
	indexScan           indexScan              // what checkIndexState read in the index region
}

// indexScan is what checkIndexState found in a filter's late-add index
// region, which it reads where the state says none.
type indexScan uint8

const (
	indexUnread     indexScan = iota // not read (another state, no index, a cut filter, or --quick)
	indexEmpty                       // read: every byte zero
	noneOverEntries                  // read: entries under a state of none (damage)
)

// counterRead is what reading a filter's counters found.
type counterRead struct {
	sum, sat uint64
	tailOff  int64   // first non-zero byte after the last counter, -1 if none
	cut      bool    // the file ends before the filter does (truncated): its counters were not read
	satScan  satScan // runs of saturated counters (saturation.go)
}

// cutOps are the in-flight records of dead slots that target a filter,
// and how Repair resolves them.
type cutOps struct {
	recs    []recRef
	res     *resolution
	recount bool // Repair sets items = sum/k
}

// tornWiden reports an id range whose min word still says "empty" (2^64−1)
// while its max word is not 0. scaling's widen writes the max word before
// the min word, and every widening that completes leaves the min word
// below 2^64−1 before its Add changes a counter; so this is a first
// widening of an empty range whose writer died between the two words. The
// range holds no id, like the empty range [2^64−1, 0].
func (fi *filterInfo) tornWiden() bool {
	return fi.minID == math.MaxUint64 && fi.maxID != 0
}

type slotInfo struct {
	owner, pid uint64
	live       bool
	recs       [header.RecordsPerSlot]recInfo
	completed  uint64
	inFlight   int
	garbage    bool // a record's fields cannot be right
}

type recInfo struct {
	header.Record      // as read
	valid         bool // an in-flight record whose fields make sense
	outside       bool // an in-flight record naming a directory entry the chain does not use (its filter was retired)
	bad           bool // fields that cannot be right (idle or in flight)
}

type recRef struct{ slot, rec int }

// offset is the record's offset in the file, where findings place it.
func (rr recRef) offset() int64 { return header.RecordOffset(rr.slot, rr.rec) }

func (r *recInfo) inFlight() bool { return header.OpWord(r.Op).InFlight() }
func (r *recInfo) count() uint64  { return header.OpWord(r.Op).Completed() }
func (r *recInfo) filter() int    { return header.OpWord(r.Op).Filter() }
func (r *recInfo) dir() int64 {
	if header.OpWord(r.Op).Op() == header.OpRemove {
		return -1
	}
	return 1
}

// entry is the directory entry of filter i of the chain: it names the
// filter's line, its salt and the filter in in-flight records, and
// findings and reports name filters by it.
func (a *analysis) entry(i int) int { return a.filters[i].desc.Slot }

// line is the offset of the hot line of filter i of the chain.
func (a *analysis) line(i int) int64 { return header.FilterLineOffset(a.filters[i].desc.Slot) }

// lineWord is the offset in the file of word w of filter i's line (w is
// &a.filters[i].line.Field), where findings about it place them.
func (a *analysis) lineWord(i int, w *uint64) int64 {
	return a.line(i) + header.FieldOffset(&a.filters[i].line, w)
}

// chainIndex is the index in filters of the filter in directory entry e,
// or -1 if the chain does not use it.
func (a *analysis) chainIndex(e int) int {
	if e < 0 || e >= header.MaxFilters {
		return -1
	}
	return a.bySlot[e]
}

// entries turns indexes in filters into directory entries.
func (a *analysis) entries(list []int) []int {
	out := make([]int, len(list))
	for j, i := range list {
		out[j] = a.entry(i)
	}
	return out
}

func (a *analysis) note(s State, filter, slot int, off int64, field string, sentinel error, format string, args ...any) {
	a.findings = append(a.findings, Finding{State: s, Filter: filter, Slot: slot, Offset: off, Field: field, Message: fmt.Sprintf(format, args...), Err: sentinel})
}

// analyze reads and checks everything. live reports whether another process
// holds the lock byte at off (nil: no process does). It returns an error only
// when the image cannot be read.
func analyze(img image, boot bootID, live func(off int64) bool) (*analysis, error) {
	return analyzeWith(img, boot, live, false)
}

// analyzeWith is analyze, without reading the page checksums if quick.
func analyzeWith(img image, boot bootID, live func(off int64) bool, quick bool) (*analysis, error) {
	a := &analysis{size: img.Size(), boot: boot, quick: quick, dirState: dirState{restore: -1}}
	if b, ok := img.(bytesImage); ok && len(b) >= header.DataOffset {
		a.head = b[:header.DataOffset:header.DataOffset] // only read
	} else {
		a.head = make([]byte, header.DataOffset)
		if n := min(a.size, header.DataOffset); n > 0 {
			if err := readFull(img, a.head[:n], 0); err != nil {
				return nil, err
			}
		}
	}
	if !a.decodeMeta() {
		return a, nil
	}
	a.readHot()
	a.checkSize()
	a.readLines()
	a.checkOverlaps()
	a.readUndo(live)
	img = a.withUndo(img)
	if err := a.readCounts(img); err != nil {
		return nil, err
	}
	if err := a.readCounters(img); err != nil {
		return nil, err
	}
	a.readSlots(live)
	if err := a.checkFields(img); err != nil { // fieldchecks.go
		return nil, err
	}
	if err := a.classify(img); err != nil {
		return nil, err
	}
	return a, nil
}

// findingOf turns a decoding error into a finding.
func findingOf(s State, err error, prefix string) Finding {
	f := Finding{State: s, Filter: -1, Slot: -1, Offset: -1, Message: prefix + err.Error(), Err: header.ErrCorrupt}
	var ce *header.CorruptionError
	if errors.As(err, &ce) {
		f.Offset, f.Filter, f.Field, f.Message, f.Err = ce.Offset, ce.Filter, ce.Field, prefix+ce.Reason, ce.Err
	}
	return f
}

var copyName = [2]string{"A", "B"}

func (a *analysis) decodeMeta() bool {
	if a.size < header.DataOffset {
		n := min(a.size, 2*header.MetaSize)
		_, err := header.Pick(a.head[:n], a.size)
		if err == nil {
			err = &header.CorruptionError{Offset: 0, Filter: -1, Field: "size", Reason: fmt.Sprintf("file has %d bytes", a.size), Err: header.ErrNotDablooms}
		}
		a.findings = append(a.findings, findingOf(Corrupt, err, ""))
		return false
	}
	for c := range 2 {
		base := int64(c) * header.MetaSize
		b := a.head[base : base+header.MetaSize]
		a.metas[c], a.metaErrs[c] = header.Decode(b, base, a.size)
		if a.metaErrs[c] == nil {
			continue
		}
		// A copy that is whole on its own but whose directory runs past the
		// end of the file: the file was truncated (a growth extends the
		// file before it writes a copy). The filters cut short need
		// Rebuild. Only up to half the file may be missing, so that Rebuild
		// never allocates for more than twice the bytes there are.
		if m, err := header.Decode(b, base, -1); err == nil && m.End()-a.size <= a.size {
			a.metas[c], a.metaErrs[c] = m, nil
		}
	}
	switch {
	case a.metaErrs[0] == nil && a.metaErrs[1] == nil:
		a.which = 0
		if a.metas[1].Generation > a.metas[0].Generation {
			a.which = 1
		}
		other := 1 - a.which
		if !a.metas[0].SameDirectory(a.metas[1]) {
			a.restore = other
			a.note(Damaged, -1, -1, int64(other)*header.MetaSize, "metadata", header.ErrCorrupt,
				"metadata copy %s (generation %d, %d filters) is older than copy %s (generation %d, %d filters): a metadata write was cut short; Repair rewrites copy %s (so do a read-write Open and a Flush)",
				copyName[other], a.metas[other].Generation, len(a.metas[other].Filters),
				copyName[a.which], a.metas[a.which].Generation, len(a.metas[a.which].Filters), copyName[other])
		}
	case a.metaErrs[0] == nil || a.metaErrs[1] == nil:
		good := 0
		if a.metaErrs[0] != nil {
			good = 1
		}
		a.which, a.restore = good, 1-good
		f := findingOf(Damaged, a.metaErrs[1-good],
			fmt.Sprintf("metadata copy %s is bad (the file opens from copy %s; Repair, a read-write Open or a Flush restores it): ", copyName[1-good], copyName[good]))
		if errors.Is(f.Err, header.ErrNotDablooms) || errors.Is(f.Err, header.ErrVersion) {
			// The other copy says what the file is: one bad copy is
			// damage, not a foreign file or an unknown version.
			f.Err = header.ErrCorrupt
		}
		a.findings = append(a.findings, f)
	default:
		for c := range 2 {
			a.findings = append(a.findings, findingOf(Corrupt, a.metaErrs[c], fmt.Sprintf("metadata copy %s: ", copyName[c])))
		}
		return false
	}
	a.meta = a.metas[a.which]
	return true
}

// checkSize compares the file's size with the end of the chain's last filter.
func (a *analysis) checkSize() {
	switch end := a.meta.End(); {
	case a.size > end && a.ring:
		a.note(Clean, -1, -1, end, "size", nil, "%d bytes after the last filter of the chain (space retired filters left, a growth cut short, or the file was extended); Repair drops them when it rewrites the file", a.size-end)
	case a.size > end:
		a.note(Clean, -1, -1, end, "size", nil, "%d bytes after the last filter (a growth was cut short, or the file was extended); Repair drops them", a.size-end)
	case a.size < end:
		var cut []int
		for _, d := range a.meta.Filters {
			if d.Offset+d.Length > a.size {
				cut = append(cut, d.Slot)
			}
		}
		a.note(Corrupt, -1, -1, a.size, "size", header.ErrCorrupt,
			"the file has %d bytes, but metadata copy %s lists filters up to byte %d: it was truncated; filters %v are cut short and need Rebuild", a.size, copyName[a.which], end, cut)
	}
}

func (a *analysis) readHot() {
	h := header.ReadHot(a.head)
	a.state = h.State
	a.epoch, a.phase = seqnum.Unpack(a.state)
	a.disk = h.DiskSeq
	a.published = h.Published
	a.stored = header.BootIDFromWords(h.BootID)
	a.bootMatch = a.stored == a.boot
	a.hotOK = true
	base, n := a.meta.Retired, uint64(len(a.meta.Filters))
	if !seqnum.ValidEpoch(a.epoch) {
		a.hotOK = false
		a.note(Corrupt, -1, -1, header.StateOffset, "state", header.ErrCorrupt,
			"state word %#x has epoch %d, which no file ever has: the hot page cannot be trusted; Rebuild re-adds every filter", a.state, a.epoch)
	}
	// published counts the filters ever appended: the directory lists
	// those from base (meta.Retired) on.
	switch {
	case a.published > base+header.MaxFilters:
		a.hotOK = false
		a.note(Corrupt, -1, -1, header.PublishedOffset, "published", header.ErrCorrupt,
			"published filter count %d exceeds the %d retired plus %d: the hot page cannot be trusted; Rebuild re-adds every filter", a.published, base, header.MaxFilters)
	case a.published > base+n:
		a.note(Damaged, -1, -1, header.PublishedOffset, "published", header.ErrCorrupt,
			"published filter count %d exceeds the directory's %d after %d retired; Repair sets it to %d", a.published, n, base, base+n)
	case a.published <= base && base > 0:
		a.note(Damaged, -1, -1, header.PublishedOffset, "published", header.ErrCorrupt,
			"published filter count %d is not past the %d filters retired: it cannot be right; Repair sets it to %d", a.published, base, base+n)
	case a.published < base+n:
		a.note(Clean, -1, -1, header.PublishedOffset, "published", nil,
			"published filter count %d is behind the directory's %d (a growth was cut before its publication); Open and Repair set it", a.published, base+n)
	}
	a.readRetired()
	a.readReplaced()
	reserved := [][2]int64{{header.HotReservedOffset, header.BootIDOffset}, {header.HotTailOffset, header.HotOffset + header.PageSize}}
	if a.meta.Flags&header.FlagUndoBlock != 0 {
		reserved = [][2]int64{reserved[0], {header.HotTailOffset, header.UndoOffset}, {header.UndoEnd, header.HotOffset + header.PageSize}}
	}
	for _, r := range reserved {
		if off := firstNonZero(a.head[r[0]:r[1]]); off >= 0 {
			a.hotUnused = true
			a.note(Damaged, -1, -1, r[0]+int64(off), "hot page", header.ErrCorrupt, "reserved bytes of the hot page are not zero; Repair zeroes them")
			break
		}
	}
}

// readReplaced checks the hot replaced word (docs/FORMAT.md, "Replacing a
// live file"). ReplaceFreezing is a rewrite or an exclusive writer holding
// the file, or one that died: no damage. (A Repair in place of a live file
// reads the word as it was before its own freeze: rewriteHold.image.)
func (a *analysis) readReplaced() {
	w := header.ReadHot(a.head).Replaced
	live := a.meta.Flags&header.FlagLiveReplace != 0
	switch {
	case !a.hotOK || w == header.ReplaceNone:
	case w == header.ReplaceFreezing && live:
		a.note(Clean, -1, -1, header.ReplacedOffset, "replaced", nil,
			"a whole-file rewrite or an exclusive writer holds the file (or died holding it): other writers wait until it ends, or, after a death, until the next of them clears the word; Repair clears it")
	default:
		a.replacedBad = true
		a.note(Damaged, -1, -1, header.ReplacedOffset, "replaced", header.ErrCorrupt,
			"the replaced word is %d (with FlagLiveReplace: %v), which no rewrite leaves on the file at its path; Open refuses it; Repair clears it", w, live)
	}
}

// readRetired checks the hot retired word against the directory and, for
// a retirement cut short, takes the chain readers use: the directory
// without the filters the word passed (never the newest).
func (a *analysis) readRetired() {
	a.ring = a.meta.Flags&header.FlagRing != 0
	a.hotRetired = header.ReadHot(a.head).Retired
	base, n := a.meta.Retired, uint64(len(a.meta.Filters))
	pubOK := a.published > base && a.published <= base+n
	switch r := a.hotRetired; {
	case !a.hotOK:
		// An untrusted hot page is started afresh (resetHot): the
		// directory's count stands, and every filter is kept.
	case r == base:
	case r < base:
		a.retiredBad = true
		a.note(Damaged, -1, -1, header.RetiredOffset, "retired", header.ErrCorrupt,
			"the hot retired word %d is behind the directory's %d retired filters (the word is raised first): it cannot be right; Repair sets it to %d", r, base, base)
	case r > base+n-1 || (pubOK && r >= a.published):
		a.retiredBad = true
		a.note(Damaged, -1, -1, header.RetiredOffset, "retired", header.ErrCorrupt,
			"the hot retired word %d would retire the newest filter (%d retired, %d listed, %d published): it cannot be right; Repair sets it to %d and retires nothing", r, base, n, a.published, base)
	case a.phase == seqnum.Clean:
		a.retiredAheadWhenClean(r) // fieldchecks.go
	default:
		drop := int(r - base)
		a.dropped = slices.Clone(a.meta.Filters[:drop])
		m := *a.meta
		m.Filters = slices.Clone(a.meta.Filters[drop:])
		m.Retired = r
		m.Flags |= header.FlagRing
		for c := range 2 {
			if a.metas[c] != nil {
				m.Generation = max(m.Generation, a.metas[c].Generation+1)
			}
		}
		var gone []int
		for _, d := range a.dropped {
			gone = append(gone, d.Slot)
		}
		a.note(Clean, -1, -1, header.RetiredOffset, "retired", nil,
			"the hot retired word %d is ahead of the directory's %d: a retirement of the filters in entries %v was cut short (its process died before it rewrote the directory); readers already skip them, and the next read-write Open, RetireBefore or Repair finishes the retirement", r, base, gone)
		a.meta, a.ring = &m, true
	}
	for e := range a.bySlot {
		a.bySlot[e] = -1
	}
	for i, d := range a.meta.Filters {
		a.bySlot[d.Slot] = i
	}
}

func firstNonZero(b []byte) int {
	for i, c := range b {
		if c != 0 {
			return i
		}
	}
	return -1
}

func (a *analysis) readLines() {
	n := len(a.meta.Filters)
	a.filters = make([]filterInfo, n)
	a.needRebuild = make([]bool, n)
	for e := range header.MaxFilters {
		// In a ring file the line of an entry the chain does not use may
		// hold what its retired filter left: Repair zeroes it.
		if a.bySlot[e] < 0 && !a.ring && !unusedLine(header.ReadLine(a.head, e)) {
			a.linesDirty = true
			a.note(Damaged, e, -1, header.FilterLineOffset(e), "filter line", header.ErrCorrupt, "line of unused directory entry %d is not empty; Repair zeroes it", e)
		}
	}
	for i := range a.filters {
		fi := &a.filters[i]
		fi.desc = a.meta.Filters[i]
		fi.line = header.ReadLine(a.head, fi.desc.Slot)
		l := &fi.line
		fi.items = l.Items
		fi.minID = l.MinID
		fi.maxID, fi.sealed = l.MaxID&header.MaxID, l.MaxID&header.Sealed != 0
		fi.tailOff = -1
		fi.itemsOK = int64(fi.items) >= 0 && fi.items <= itemLimit(fi.desc.Capacity)
		fi.lineOK = true
		switch {
		case l.Reserved != 0:
			fi.lineOK = false
			a.note(Corrupt, a.entry(i), -1, a.lineWord(i, &l.Reserved), "filter line", header.ErrCorrupt, "reserved words of the filter's line are not zero: the line (items, dirty mark, id range) is garbage; the filter needs Rebuild")
		case a.hotOK && l.Mark&^seqnum.Pending > a.epoch:
			fi.lineOK = false
			a.note(Corrupt, a.entry(i), -1, a.lineWord(i, &l.Mark), "mark", header.ErrCorrupt, "dirty mark %#x is from an epoch after the current %d: the line is garbage; the filter needs Rebuild", l.Mark, a.epoch)
		case fi.minID > fi.maxID && fi.minID != math.MaxUint64:
			fi.lineOK = false
			a.note(Corrupt, a.entry(i), -1, a.lineWord(i, &l.MinID), "id range", header.ErrCorrupt, "id range [%d, %d] is inverted: the line is garbage; the filter needs Rebuild", fi.minID, fi.maxID)
		case !validIndexState(&fi.desc, l.Index):
			a.note(Damaged, a.entry(i), -1, a.lineWord(i, &l.Index), "late-add index", header.ErrCorrupt, "the late-add index state %d is not one of 0 (none) and 1 (allocated)%s; Repair sets it to %d", l.Index, map[bool]string{true: "", false: ", or the filter has no index"}[fi.desc.IndexBytes() > 0], indexStateFor(&fi.desc))
		case i == n-1 && fi.sealed:
			a.note(Damaged, a.entry(i), -1, a.lineWord(i, &l.MaxID), "id range", header.ErrCorrupt, "the newest filter's id range is sealed, so no Add could widen it; Repair unseals it")
		case i < n-1 && !fi.sealed:
			a.note(Clean, a.entry(i), -1, a.lineWord(i, &l.MaxID), "id range", nil, "the id range of a filter that has a newer one is not sealed (a growth was cut short, or an older library wrote the file); Repair seals it")
		}
		if fi.lineOK && fi.tornWiden() {
			a.note(Clean, a.entry(i), -1, a.lineWord(i, &l.MaxID), "id range", nil, "the id range holds no id but its last id is %d: a writer died between the two words of the range's first widening, before it changed a counter; Repair empties it", fi.maxID)
		}
		if !fi.lineOK {
			a.needRebuild[i] = true
		}
		fi.dirty = a.hotOK && a.phase != seqnum.Clean && l.Mark&^seqnum.Pending == a.epoch
	}
}

// checkOverlaps reports filters whose id ranges overlap (docs/FORMAT.md,
// scaling's route). A filter with a late-add index never widens its range
// over an id at or below the frontier, the largest id of the older filters'
// ranges: an id there goes into its index instead. So its range overlapping
// an older filter's breaks what the file's routing promises, and Removes of
// ids in the overlap can be refused with scaling.ErrAmbiguous, which Repair
// cannot undo (it would have to know which filter each key went to), but
// Compact can. It is reported as a located note, not as damage: an Add by
// a library before the fix of issue 27 item 2 made such overlaps, and so
// did a Rebuild by a library before 2026-11-27 (it asked for a newest
// filter's keys from a first id, or a damaged line's, inside an older
// range; rangeFor now starts above the frontier); files they wrote keep
// them. A filter without an index (the first of a chain, one a
// 1.0 library appended, an imported one) widens its range as version 1.0
// did, over older ones: for it an overlap is a note.
func (a *analysis) checkOverlaps() {
	for j := range a.filters {
		fj := &a.filters[j]
		if !fj.lineOK || fj.minID == math.MaxUint64 {
			continue
		}
		for i := range j {
			fi := &a.filters[i]
			if !fi.lineOK || fi.minID == math.MaxUint64 {
				continue
			}
			lo, hi := max(fi.minID, fj.minID), min(fi.maxID, fj.maxID)
			if lo > hi {
				continue
			}
			off := a.lineWord(j, &fj.line.MinID)
			if fj.desc.IndexBytes() > 0 {
				// A note, not damage: older libraries' Adds and Rebuilds
				// made such overlaps (see above).
				a.note(Clean, a.entry(j), -1, off, "id range", nil,
					"id range [%d, %d] overlaps [%d, %d] of the older filter %d in ids [%d, %d], which this filter's routing never does (it has a late-add index: ids at or below the older filters' ranges go there; an Add by a library before the fix of issue 27 item 2, or a Rebuild by one before 2026-11-27, widened it): a Remove of an id in the overlap whose key looks present in both filters is refused with ErrAmbiguous; lookups are not affected. Repair cannot undo it; Compact rewrites the chain as one filter",
					fj.minID, fj.maxID, fi.minID, fi.maxID, a.entry(i), lo, hi)
			} else {
				a.note(Clean, a.entry(j), -1, off, "id range", nil,
					"id range [%d, %d] overlaps [%d, %d] of the older filter %d in ids [%d, %d] (a filter without a late-add index widens its range as version 1.0 did): a Remove of an id in the overlap whose key looks present in both filters is refused with ErrAmbiguous; Compact rewrites the chain as one filter",
					fj.minID, fj.maxID, fi.minID, fi.maxID, a.entry(i), lo, hi)
			}
		}
	}
}

// unusedLine reports whether the line of an unused directory entry is zero,
// or initialised by a growth whose directory write did not complete.
func unusedLine(l header.Line) bool {
	return l == header.Line{} || l == header.Line{MinID: math.MaxUint64}
}

const chunkSize = 1 << 20

// chunkReader reads ranges of an image chunkSize bytes at a time: a
// bytesImage's bytes in place, another image's into one buffer it
// reuses (chunk is only valid until the next call).
type chunkReader struct {
	img image
	buf []byte
}

// each calls fn with every chunk of the n bytes at off and the chunk's
// position in them, until fn returns false.
func (r *chunkReader) each(off, n int64, fn func(pos int64, chunk []byte) bool) error {
	for pos := int64(0); pos < n; pos += chunkSize {
		c := min(chunkSize, n-pos)
		var chunk []byte
		if b, ok := r.img.(bytesImage); ok {
			chunk = b[off+pos : off+pos+c] // (bounds checked by Decode)
		} else {
			if int64(len(r.buf)) < c {
				r.buf = make([]byte, c)
			}
			chunk = r.buf[:c]
			if err := readFull(r.img, chunk, off+pos); err != nil {
				return err
			}
		}
		if !fn(pos, chunk) {
			return nil
		}
	}
	return nil
}

func (a *analysis) readCounters(img image) error {
	r := &chunkReader{img: img}
	for i := range a.filters {
		fi := &a.filters[i]
		d := fi.desc
		if d.Offset+d.Length > a.size {
			fi.cut = true // noted by decodeMeta
			a.needRebuild[i] = true
			continue
		}
		words := int64((d.Counters + 15) / 16)
		fi.satScan.start(d.Counters)
		var lastMask uint64 = math.MaxUint64 // valid nibbles of the last counter word
		if r := d.Counters % 16; r != 0 {
			lastMask = 1<<(4*r) - 1
		}
		err := r.each(d.Offset, d.CounterBytes(), func(pos int64, chunk []byte) bool {
			fi.satScan.chunk(chunk, pos/8, d.Offset+pos)
			for j := int64(0); j < int64(len(chunk)); j += 8 {
				w := le.Uint64(chunk[j:])
				wi := (pos + j) / 8
				switch {
				case wi < words-1:
					fi.sum += nibbleSum(w)
					fi.sat += uint64(saturated(w))
				case wi == words-1:
					fi.sum += nibbleSum(w & lastMask)
					fi.sat += uint64(saturated(w & lastMask))
					if w&^lastMask != 0 && fi.tailOff < 0 {
						fi.tailOff = d.Offset + pos + j
					}
				default:
					if w != 0 && fi.tailOff < 0 {
						fi.tailOff = d.Offset + pos + j
					}
				}
			}
			return true
		})
		if err != nil {
			return err
		}
		fi.satScan.finish()
		if fi.tailOff >= 0 {
			a.note(Damaged, a.entry(i), -1, fi.tailOff, "counters", header.ErrCorrupt, "bytes after the filter's last counter are not zero; Repair zeroes them")
		}
	}
	return nil
}

// nibbleSum is the sum of the 16 4-bit counters of w.
func nibbleSum(w uint64) uint64 {
	x := w&0x0f0f0f0f0f0f0f0f + w>>4&0x0f0f0f0f0f0f0f0f
	return x * 0x0101010101010101 >> 56
}

// saturated is the number of 4-bit counters of w that are 15.
func saturated(w uint64) int {
	return bits.OnesCount64(w & (w >> 1) & (w >> 2) & (w >> 3) & 0x1111111111111111)
}

func (a *analysis) readSlots(live func(int64) bool) {
	for s := range header.NumSlots {
		si := &a.slots[s]
		sl := header.ReadSlot(a.head, s)
		si.owner, si.pid = sl.Owner, sl.PID
		base := header.SlotOffset(s) // its lock byte
		if live != nil && live(base) {
			si.live = true
			a.anyLive = true
		}
		for r := range header.RecordsPerSlot {
			a.readRecord(s, r, a.undoRecord(s, r, sl.Records[r]))
		}
		a.mem += si.completed
		if !si.live && si.owner != 0 && si.inFlight == 0 {
			a.note(Clean, -1, s, base+header.FieldOffset(&sl, &sl.Owner), "owner", nil,
				"slot of a writer (pid %d) that ended without closing, between operations; Repair frees it", si.pid)
		}
	}
}

// readRecord takes rec, record r of slot s, and checks it: an idle record
// for stray bits, one in flight for fields that cannot be right. A valid
// record of a dead slot is listed with the filter it targets.
func (a *analysis) readRecord(s, r int, rec header.Record) {
	si := &a.slots[s]
	ri := &si.recs[r]
	off := recRef{s, r}.offset()
	ri.Record = rec
	si.completed += ri.count()
	if !ri.inFlight() {
		a.checkIdle(s, r, ri, off)
		return
	}
	si.inFlight++
	a.anyInFlight = true
	if a.ring && ri.filter() < header.MaxFilters && a.chainIndex(ri.filter()) < 0 && header.OpWord(ri.Op).Op() != header.OpInvalid && header.OpWord(ri.Op).Reserved() == 0 {
		// Its filter was retired (docs/FORMAT.md, Retired filters): a
		// live writer backs out by itself; a dead one's record is cleared.
		ri.outside = true
		if !si.live {
			a.note(Interrupted, ri.filter(), s, off, "record", scaling.ErrUnclean,
				"a dead writer's %s on directory entry %d, whose filter was retired, was cut short; Repair clears the record (the filter is gone)", opName(ri.Op), ri.filter())
		}
		return
	}
	if why := a.recordFault(ri); why != "" {
		ri.bad = true
		si.garbage = true
		st := Damaged
		if !si.live && a.hotOK && a.trustedPhase() {
			st = Corrupt // cannot be rolled back: see classifyThisBoot
		}
		a.note(st, -1, s, off, "record", header.ErrCorrupt, "in-flight record %d cannot be right (%s)", r, why)
		return
	}
	ri.valid = true
	if !si.live {
		f := a.chainIndex(ri.filter())
		a.filters[f].recs = append(a.filters[f].recs, recRef{s, r})
	}
}

// checkIdle notes an idle record (r of slot s, at off) that holds stray
// bits or the masks of a completed operation.
func (a *analysis) checkIdle(s, r int, ri *recInfo, off int64) {
	stray := header.OpWord(ri.Op) != header.OpWord(ri.Op).Idle()
	masks := ri.Changed != 0 || ri.Doubt != 0 || ri.Word != 0 || ri.New != 0 || ri.IndexSlot != 0 || ri.IndexFP != 0
	ri.bad = stray || masks
	switch {
	case stray:
		a.note(Damaged, -1, s, off, "record", header.ErrCorrupt,
			"idle record %d has stray bits (op %#x, changed %#x, doubt %#x); Repair clears them", r, ri.Op, ri.Changed, ri.Doubt)
	case masks:
		// A writer that stopped between making the op word idle and
		// clearing the masks (docs/FORMAT.md, In-flight record) leaves
		// them: they mean nothing.
		a.note(Clean, -1, s, off, "record", nil,
			"idle record %d still holds the masks of a completed operation (changed %#x, doubt %#x, evidence word %d new %#x); Repair clears them", r, ri.Changed, ri.Doubt, ri.Word, ri.New)
	}
}

// recordFault says why the fields of an in-flight record cannot be right,
// or "" if they can.
func (a *analysis) recordFault(ri *recInfo) string {
	n := len(a.filters)
	e := ri.filter()
	f := a.chainIndex(e)
	switch {
	case header.OpWord(ri.Op).Op() == header.OpInvalid:
		return "operation type 3"
	case header.OpWord(ri.Op).Reserved() != 0:
		return "reserved bits of the op word are set"
	case f < 0:
		return fmt.Sprintf("filter %d is not in the %d-filter directory", e, n)
	}
	if ri.IndexSlot != 0 || ri.IndexFP != 0 {
		d := &a.filters[f].desc
		switch {
		case d.IndexBytes() == 0:
			return fmt.Sprintf("it names late-add index entry %d of filter %d, which has no index", ri.IndexSlot, e)
		case ri.IndexSlot&^header.IndexDone > uint64(d.IndexBytes()/header.IndexEntrySize) || ri.IndexSlot == header.IndexDone:
			return fmt.Sprintf("late-add index entry %d is beyond filter %d's %d entries", ri.IndexSlot&^header.IndexDone, e, d.IndexBytes()/header.IndexEntrySize)
		case ri.IndexFP <= header.IndexCleared || ri.IndexFP > math.MaxUint32:
			return fmt.Sprintf("late-add index fingerprint %#x cannot be one", ri.IndexFP)
		}
	}
	k := a.filters[f].desc.K
	kmask := uint64(math.MaxUint64)
	if k < 64 {
		kmask = 1<<k - 1
	}
	switch {
	case ri.Changed&^kmask != 0 || ri.Doubt&^kmask != 0:
		return fmt.Sprintf("changed %#x or doubt %#x names positions beyond k = %d", ri.Changed, ri.Doubt, k)
	case ri.Doubt&ri.Changed != 0 && ri.Doubt&ri.Changed != ri.Doubt:
		return fmt.Sprintf("doubt %#x is neither inside nor outside changed %#x", ri.Doubt, ri.Changed)
	}
	return ""
}

// trustedPhase reports whether the counters of the dirty filters hold every
// change (the phase is not clean and the recorded boot is this one).
func (a *analysis) trustedPhase() bool {
	return a.phase != seqnum.Clean && a.bootMatch && a.stored != rebuildBoot
}

func hexBoot(b bootID) string {
	if b == rebuildBoot {
		return "repair:rebuild"
	}
	return fmt.Sprintf("%x", b[:])
}

// classify says what state the file is in, from its phase and boot
// identity, and decides how Repair ends the operations dead writers cut
// short.
func (a *analysis) classify(img image) error {
	if !a.hotOK {
		for i := range a.needRebuild {
			a.needRebuild[i] = true
		}
		return nil
	}
	clean := a.phase == seqnum.Clean
	a.trusted = clean || a.trustedPhase()
	a.noteLiveOrPending()
	var dirtyList []int
	for i := range a.filters {
		if a.filters[i].dirty {
			dirtyList = append(dirtyList, i)
		}
	}
	switch {
	case clean:
		a.classifyClean()
	case !a.trusted:
		a.classifyUntrusted(dirtyList)
	default:
		if err := a.classifyThisBoot(img, dirtyList); err != nil {
			return err
		}
	}
	a.checkSums()
	return a.checkPageSums(img) // (after: the sums' findings stay as they were)
}

// noteLiveOrPending notes the writers alive, whose counts may be in motion;
// or, with none alive, the pending-adds hints killed writers left.
func (a *analysis) noteLiveOrPending() {
	if a.anyLive {
		live := 0
		for s := range a.slots {
			if a.slots[s].live {
				live++
			}
		}
		a.note(Clean, -1, -1, -1, "slots", nil, "%d writer slot(s) are held by live processes: the counts may be in motion, so counter sums are not checked", live)
		return
	}
	for i := range a.filters {
		if fi := &a.filters[i]; fi.lineOK && fi.line.Pending != 0 {
			a.note(Clean, a.entry(i), -1, a.lineWord(i, &fi.line.Pending), "pending", nil,
				"pending-adds hint %d with no writer alive (a writer was killed in the middle of an Add): it only makes the filter look fuller; Repair zeroes it", fi.line.Pending)
		}
	}
}

// classifyClean checks a file marked clean: disk_seqnum against the slots'
// counts, and that no dead writer's record claims a change.
func (a *analysis) classifyClean() {
	if !a.anyLive && a.disk != a.mem && !a.anyInFlight {
		a.note(Damaged, -1, -1, header.DiskSeqOffset, "disk_seqnum", header.ErrCorrupt,
			"the file is marked clean with disk_seqnum %d, but its slots count %d completed operations; Repair sets disk_seqnum", a.disk, a.mem)
	}
	for s := range a.slots {
		si := &a.slots[s]
		if si.live {
			continue
		}
		for r := range si.recs {
			ri := &si.recs[r]
			if !ri.valid {
				continue
			}
			if ri.Changed == 0 && ri.Doubt == 0 {
				a.note(Interrupted, ri.filter(), s, recRef{s, r}.offset(), "record", scaling.ErrUnclean,
					"a dead writer's %s was cut short before it changed anything; Repair frees the slot", opName(ri.Op))
			} else {
				a.note(Damaged, ri.filter(), s, recRef{s, r}.offset(), "record", header.ErrCorrupt,
					"a dead writer's record claims changes although the file is marked clean, which cannot happen; Repair clears it")
			}
		}
	}
}

// classifyUntrusted handles a dirty file whose counters may have lost
// changes (the machine restarted, or no boot identity can vouch for them):
// the filters marked dirty need Rebuild.
func (a *analysis) classifyUntrusted(dirtyList []int) {
	var why string
	switch a.stored {
	case rebuildBoot:
		why = "Repair could not make these filters exact"
	case bootID{}:
		why = "no boot identity was recorded (an imported or hand-made file)"
	default:
		why = fmt.Sprintf("changed since the last flush, and the machine has restarted since (boot %s recorded with the dirty mark, now %s): an OS crash may have lost pages", hexBoot(a.stored), hexBoot(a.boot))
	}
	a.note(Dirty, -1, -1, header.BootIDOffset, "state", scaling.ErrUnclean, "%s; the filters marked dirty %v need Rebuild", why, a.entries(dirtyList))
	for _, i := range dirtyList {
		a.needRebuild[i] = true
	}
	a.changesToUnmarked()
}

// classifyThisBoot handles a file dirty on this boot, whose counters hold
// every change: it resolves the operations dead writers cut short.
func (a *analysis) classifyThisBoot(img image, dirtyList []int) error {
	deadInFlight, garbageDead := 0, false
	for s := range a.slots {
		if si := &a.slots[s]; !si.live {
			deadInFlight += si.inFlight
			if si.garbage {
				garbageDead = true
			}
		}
	}
	if deadInFlight == 0 {
		why := "changed since the last flush on this boot"
		if a.phase == seqnum.Flushing {
			why = "a flush is running, or was killed, on this boot (the machine did not restart; the next flush finishes it)"
		}
		a.note(Unflushed, -1, -1, header.StateOffset, "state", nil,
			"%s: the page cache held every change; filters %v are marked dirty", why, a.entries(dirtyList))
	}
	a.changesToUnmarked()
	if garbageDead {
		// A record we cannot read may have changed any dirty filter.
		for _, i := range dirtyList {
			a.needRebuild[i] = true
		}
	}
	for i := range a.filters {
		fi := &a.filters[i]
		if len(fi.recs) == 0 {
			continue
		}
		if !fi.dirty {
			continue // changesToUnmarked
		}
		if !fi.lineOK || fi.cut {
			continue
		}
		if err := a.resolveCutShort(img, i); err != nil {
			return err
		}
	}
	return nil
}

// resolveCutShort resolves the cut-short operations on filter i and notes
// them, and whether Repair can end them exactly.
func (a *analysis) resolveCutShort(img image, i int) error {
	fi := &a.filters[i]
	res, err := a.resolve(img, i)
	if err != nil {
		return err
	}
	fi.res = res
	for _, rr := range fi.recs {
		ri := &a.slots[rr.slot].recs[rr.rec]
		a.note(Interrupted, a.entry(i), rr.slot, rr.offset(), "record", scaling.ErrUnclean,
			"a dead writer's %s (hash %#x, changed %#x, doubt %#x) was cut short", opName(ri.Op), ri.Hash, ri.Changed, ri.Doubt)
	}
	switch {
	case a.anyLive:
		// The resolution weighs the counter sum against the item count,
		// which live writers are changing (an Add of theirs raises the
		// counters before the count): read now, neither is the settled
		// value Repair weighs once it holds the writers. Unsure, not a
		// Rebuild.
		how := "it looks exact"
		if !res.exact {
			how = "it does not look exact (" + res.why + ")"
		}
		a.note(Interrupted, a.entry(i), -1, a.line(i), "filter", scaling.ErrUnclean,
			"live writers are changing the counts the resolution of these operations relies on, so Verify cannot tell whether Repair ends them exactly (read now, %s): run Repair, which holds the writers while it decides, and lists the filter for Rebuild only if it cannot", how)
	case res.exact:
		a.note(Interrupted, a.entry(i), -1, a.line(i), "filter", scaling.ErrUnclean, "Repair %s", res.summary())
	case res.bounded:
		a.note(Interrupted, a.entry(i), -1, a.line(i), "filter", scaling.ErrUnclean, "Repair %s", res.boundedSummary())
	default:
		a.needRebuild[i] = true
		a.note(Dirty, a.entry(i), -1, a.line(i), "filter", scaling.ErrUnclean,
			"Repair cannot resolve the cut-short operations exactly (%s): it will leave the counters high (no false negatives) and the filter needs Rebuild", res.why)
	}
	return nil
}

// changesToUnmarked flags the filters that a dead writer's record claims to
// have changed although they are not marked dirty: dirty-first (I1,
// docs/PROTOCOLS.md) makes that impossible, so the record or the mark is
// damaged, and the counters cannot be trusted.
func (a *analysis) changesToUnmarked() {
	for i := range a.filters {
		fi := &a.filters[i]
		if fi.dirty {
			continue
		}
		for _, rr := range fi.recs {
			ri := &a.slots[rr.slot].recs[rr.rec]
			if ri.Changed != 0 || ri.Doubt != 0 {
				a.needRebuild[i] = true
				a.note(Corrupt, a.entry(i), rr.slot, rr.offset(), "record", header.ErrCorrupt,
					"a dead writer's record claims changes to a filter that is not marked dirty, which cannot happen: the filter needs Rebuild")
			}
		}
	}
}

// checkSums checks each filter's counter sum against its item count: without
// saturated counters, the sum is exactly k × items. Saturated counters are
// checked by checkSaturation first.
func (a *analysis) checkSums() {
	a.checkSaturation()
	for i := range a.filters {
		fi := &a.filters[i]
		if a.needRebuild[i] || fi.res != nil || !fi.lineOK || a.anyLive {
			continue
		}
		if !a.trusted && fi.dirty {
			continue // expected to be off: Rebuild redoes it
		}

		k := uint64(fi.desc.K)
		off := a.lineWord(i, &fi.line.Items)
		recountable := fi.sat == 0 && fi.sum%k == 0 && fi.sum/k <= itemLimit(fi.desc.Capacity)
		switch {
		case fi.sat == 0 && fi.itemsOK && fi.sum == k*fi.items:
		case recountable:
			fi.recount = true
			a.note(Damaged, a.entry(i), -1, off, "items", header.ErrCorrupt,
				"item count %d, but the counters sum to %d = %d × %d with none saturated; Repair sets the item count to %d", int64(fi.items), fi.sum, k, fi.sum/k, fi.sum/k)
		case !fi.itemsOK:
			a.needRebuild[i] = true
			a.note(Corrupt, a.entry(i), -1, off, "items", header.ErrCorrupt,
				"item count %d is impossible (capacity %d) and cannot be recounted (%d saturated counters, sum %d); the filter needs Rebuild", int64(fi.items), fi.desc.Capacity, fi.sat, fi.sum)
		case fi.sat == 0:
			a.needRebuild[i] = true
			a.note(Corrupt, a.entry(i), -1, fi.desc.Offset, "counters", header.ErrCorrupt,
				"the counters sum to %d, which is not k × items = %d × %d, and none is saturated: the counters are damaged; the filter needs Rebuild", fi.sum, k, fi.items)
		}
	}
}

func opName(op uint64) string { return header.OpWord(op).OpName() }

// report builds the public report.
func (a *analysis) report(path string) *Report {
	r := &Report{Path: path, FileSize: a.size, Findings: a.findings}
	for _, f := range a.findings {
		r.State = max(r.State, f.State)
	}
	if a.meta == nil {
		r.State = Corrupt
		return r
	}
	r.Params = a.meta.Params
	if a.hotOK {
		r.Phase, r.Epoch = a.phase.String(), a.epoch
		if a.phase == seqnum.Clean {
			r.DiskSeqnum = a.disk
		}
	} else {
		r.Phase = "unknown"
	}
	r.BootMatches = a.bootMatch
	if !a.anyInFlight {
		r.MemSeqnum = a.mem
	}
	for i := range a.filters {
		fi := &a.filters[i]
		r.Filters = append(r.Filters, FilterReport{
			Index: fi.desc.Slot, FirstID: fi.minID, LastID: fi.maxID, Sealed: fi.sealed, Capacity: fi.desc.Capacity, Items: fi.items,
			K: fi.desc.K, Counters: fi.desc.Counters, CounterSum: fi.sum, Saturated: fi.sat, Dirty: fi.dirty,
			Offset: fi.desc.Offset, Length: fi.desc.Length,
		})
		if a.needRebuild[i] {
			r.NeedsRebuild = append(r.NeedsRebuild, a.entry(i))
		}
	}
	for s := range a.slots {
		si := &a.slots[s]
		if !si.live && si.owner == 0 && si.inFlight == 0 && si.completed == 0 {
			continue
		}
		sr := SlotReport{Slot: s, Live: si.live, PID: si.pid, Completed: si.completed}
		for rr := range si.recs {
			ri := &si.recs[rr]
			if !ri.inFlight() {
				continue
			}
			sr.InFlight = append(sr.InFlight, OpRecord{Slot: s, Record: rr, Op: opName(ri.Op), Filter: ri.filter(), Hash: ri.Hash, Changed: ri.Changed, Doubt: ri.Doubt})
		}
		r.Slots = append(r.Slots, sr)
	}
	return r
}
