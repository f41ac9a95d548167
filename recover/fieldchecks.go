package recover

import (
	"fmt"
	"math"

	"github.com/dablooms/dablooms/header"
)

// The checks of this file are the cross-checks of docs/FORMAT.md's table
// "How damage to each field is seen" that analysis.go does not make: each
// holds only because the writers guarantee it (docs/PROTOCOLS.md).

// retiredAheadWhenClean notes a hot retired word r ahead of the
// directory's count in a file marked clean. A retirement raises the word
// only after it marked the file dirty, and a flush finishes a retirement
// cut short before it marks the file clean (scaling's settleCutShort),
// so no writer leaves it: it is damage, which readers would follow by
// skipping every key of the filters it names. Repair sets it to the
// directory's count (retiredBad): the filters stay, no key is lost.
func (a *analysis) retiredAheadWhenClean(r uint64) {
	a.retiredBad = true
	a.note(Damaged, -1, -1, header.RetiredOffset, "retired", header.ErrCorrupt,
		"the file is marked clean, but the hot retired word %d is ahead of the directory's %d retired filters (a flush finishes a retirement cut short before it marks the file clean, so no writer leaves this): readers would skip the keys of the filters in entries %v; Open refuses the file; Repair sets the word to %d and keeps them",
		r, a.meta.Retired, a.entriesBelow(r), a.meta.Retired)
}

// entriesBelow lists the directory entries of the chain's filters that a
// retired word r would skip (never the newest).
func (a *analysis) entriesBelow(r uint64) []int {
	var out []int
	for j, d := range a.meta.Filters {
		if a.meta.Retired+uint64(j) >= r || j == len(a.meta.Filters)-1 {
			break
		}
		out = append(out, d.Slot)
	}
	return out
}

// checkFields makes the cross-checks of single fields that no other
// check covers (docs/FORMAT.md, "How damage to each field is seen"). Each
// one's fix is in fixFields, or, for the check pages, fixPageSums.
func (a *analysis) checkFields(img image) error {
	if !a.hotOK {
		return nil // the hot page, lines and slots are started afresh
	}
	a.checkFlushCount()
	a.checkUnpublished()
	a.checkSealedRanges()
	a.checkSlotHeaders()
	if err := a.checkIndexState(img); err != nil {
		return err
	}
	return a.checkCheckPages(img)
}

// checkIndexState: a filter line's index state reads IndexNone only while
// its late-add index holds no entry (scaling's allocIndex makes the state
// IndexAllocated durable before the first entry is stored; a filter placed
// over retired space gets its index blocks punched). Rebuild trusts a
// sound line's IndexNone to mean the filter took no late Add and would
// leave its late keys out, so one over entries is damage: the analysis
// then takes the state as IndexAllocated, as Repair writes it. Lookups do
// not read the state. It reads the index pages of the filters whose state
// is IndexNone (mostly holes), which verify --quick skips.
func (a *analysis) checkIndexState(img image) error {
	if a.quick {
		return nil
	}
	r := &chunkReader{img: img}
	for i := range a.filters {
		fi := &a.filters[i]
		d := &fi.desc
		if !fi.lineOK || fi.cut || fi.line.Index != header.IndexNone || d.IndexBytes() == 0 {
			continue
		}
		fi.indexScan = indexEmpty // (unless an entry turns up)
		err := r.each(d.IndexOffset(), d.IndexBytes(), func(pos int64, chunk []byte) bool {
			off := firstNonZeroWord(chunk)
			if off < 0 {
				return true
			}
			at := d.IndexOffset() + pos + int64(off)
			a.note(Damaged, a.entry(i), -1, a.lineWord(i, &fi.line.Index), "late-add index", header.ErrCorrupt,
				"the late-add index state is %d (none), but entry %d holds %#x, and the state is made allocated before an entry is stored: the state word is damaged (a Rebuild would trust it and leave the filter's late Adds out); Repair sets it to %d",
				header.IndexNone, (at-d.IndexOffset())/header.IndexEntrySize, le.Uint32(chunk[off:]), header.IndexAllocated)
			fi.line.Index = header.IndexAllocated // as Repair writes it
			fi.indexScan = noneOverEntries
			return false
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// firstNonZeroWord returns the offset of the first non-zero byte of b
// (whose length is a multiple of 8), rounded down to a 4-byte entry, or -1.
func firstNonZeroWord(b []byte) int {
	for j := 0; j+8 <= len(b); j += 8 {
		if le.Uint64(b[j:]) != 0 {
			if le.Uint32(b[j:]) != 0 {
				return j
			}
			return j + 4
		}
	}
	return -1
}

// checkFlushCount: a flush that marks the file clean moves the epoch up
// by one before it counts itself, Repair counts the clean mark it writes
// with the epoch it moves to, and a hot page Repair starts afresh holds
// epoch 1 and count 1: the count never passes the epoch. (Skipped while a
// writer is alive: a snapshot may read the count after a flush that moved
// the epoch it read.)
func (a *analysis) checkFlushCount() {
	if n := header.ReadHot(a.head).FlushCount; n > a.epoch && !a.anyLive {
		a.note(Damaged, -1, -1, header.FlushCountOffset, "flush count", header.ErrCorrupt,
			"the flush count %d exceeds the epoch %d, which every flush that counts itself raises first: the word is damaged (nothing but reports reads it); Repair sets it to %d", n, a.epoch, a.epoch-1)
	}
}

// checkUnpublished: a filter the directory lists past the published count
// belongs to a growth that was cut short before its publication, and
// nothing routes an Add to a filter before it is published: it is empty.
// One that holds keys is hidden from every handle (Open reads only the
// published filters) by a published count that is damaged. Repair sets
// the count to the directory's (resetHot).
func (a *analysis) checkUnpublished() {
	base, n := a.meta.Retired, uint64(len(a.meta.Filters))
	if a.published == 0 {
		// (Past retired filters the published count is checked in readHot.)
		a.note(Damaged, -1, -1, header.PublishedOffset, "published", header.ErrCorrupt,
			"the published filter count is 0, which hides every filter from Open, and Create publishes its first filter before anything else: the count is damaged; Repair sets it to %d", base+n)
		return
	}
	if a.published <= base || a.published >= base+n {
		return
	}
	for i := int(a.published - base); i < len(a.filters); i++ {
		if fi := &a.filters[i]; fi.items != 0 || fi.minID != math.MaxUint64 || fi.maxID != 0 || fi.sum != 0 {
			a.note(Damaged, -1, -1, header.PublishedOffset, "published", header.ErrCorrupt,
				"the published filter count %d hides filter %d, which holds keys (items %d, counter sum %d), and no growth writes a filter before it publishes it: the count is damaged; Repair sets it to %d", a.published, a.entry(i), int64(fi.items), fi.sum, base+n)
			return
		}
	}
}

// sealedFloor is the least max id the sealed filter i of the chain can
// have: the growth that appended filter i+1 gave it the first id filter
// i's max id had then, plus one, and a max id only widens (Repair and
// Rebuild keep it at least that; an import sets it from the next
// filter's start). 0 when nothing bounds it: the newest filter, an empty
// range (a first widening cut short leaves the max id alone), or a first
// id of 0 or 1 (an empty range then, or a directory Create or Compact
// wrote whole).
func (a *analysis) sealedFloor(i int) uint64 {
	if i+1 >= len(a.filters) || !a.filters[i].lineOK || a.filters[i].minID == math.MaxUint64 {
		return 0
	}
	next := a.filters[i+1].desc.FirstID
	if next < 2 || next > header.MaxID {
		return 0
	}
	return next - 1
}

// checkSealedRanges: the max id of a filter that has a newer one is at
// least the newer one's first id minus one. Lookups ask every filter
// whatever its range, but RetireBefore trusts the max id alone: one
// lowered by damage would let a retirement forget keys above the cut.
func (a *analysis) checkSealedRanges() {
	for i := range a.filters {
		fi := &a.filters[i]
		if floor := a.sealedFloor(i); fi.maxID < floor {
			a.note(Damaged, a.entry(i), -1, a.lineWord(i, &fi.line.MaxID), "id range", header.ErrCorrupt,
				"the last id %d of the range is below %d, the last id it had when the next filter (entry %d) was appended, and a range only widens: the word is damaged (a retirement would trust it and could forget keys above its cut); Repair sets it to %d",
				fi.maxID, floor, a.entry(i+1), floor)
		}
	}
}

// checkSlotHeaders: no library writes a slot header's reserved word or the
// rest of its line (the owner, pid and opened words are informational:
// a slot's lock says whether it is live).
func (a *analysis) checkSlotHeaders() {
	for s := range header.NumSlots {
		sl := header.ReadSlot(a.head, s)
		if sl.Reserved != 0 || sl.Unused != [4]uint64{} {
			a.note(Damaged, -1, s, header.SlotOffset(s)+header.SlotReservedOffset, "slot header", header.ErrCorrupt,
				"the reserved words of the slot's header line are not zero (no library writes them): the line is damaged; Repair zeroes them")
		}
	}
}

// checkCheckPages: a filter's changed map holds only PageSumValid and
// PageChanged (a writer ORs in PageChanged, a flush stores 0), and the
// bytes past the covered pages' map bytes and checksums are zero (every
// writer of the check pages writes them whole). A byte outside that is
// damage the checksums cannot see; it cannot hide a key (Verify only
// checks less, or reports a page it should not), and Repair writes the
// check pages afresh.
func (a *analysis) checkCheckPages(img image) error {
	if a.meta.Flags&header.FlagPageSums == 0 {
		return nil
	}
	for i := range a.filters {
		fi := &a.filters[i]
		l, ok := fi.desc.SumLayout()
		if !ok || fi.cut {
			continue
		}
		check := make([]byte, l.End-l.MapOffset)
		if err := readFull(img, check, l.MapOffset); err != nil {
			return err
		}
		bad, why := int64(-1), ""
		for p, b := range check[:l.Covered] {
			if b > header.PageChanged {
				bad, why = l.MapOffset+int64(p), fmt.Sprintf("changed-map byte %#x of page %d is neither %d nor %d", b, p, header.PageSumValid, header.PageChanged)
				break
			}
		}
		if bad < 0 {
			if off := firstNonZero(check[l.Covered : l.SumsOffset-l.MapOffset]); off >= 0 {
				bad, why = l.MapOffset+l.Covered+int64(off), "a byte of the changed map past the covered pages is not zero"
			} else if off := firstNonZero(check[l.SumsOffset-l.MapOffset+l.Covered*header.PageSumSize:]); off >= 0 {
				bad, why = l.SumsOffset+l.Covered*header.PageSumSize+int64(off), "a byte of the checksum pages past the covered pages' checksums is not zero"
			}
		}
		if bad >= 0 {
			a.note(Damaged, a.entry(i), -1, bad, "check pages", header.ErrCorrupt,
				"%s (no library writes one): the filter's check pages are damaged; Repair writes them afresh", why)
		}
	}
	return nil
}

// fixFields is Repair's part of the checks above (checkFields), planned
// after the filters are rebuilt and before the state is marked.
func (p *patch) fixFields(a *analysis) {
	if !a.hotOK {
		return
	}
	if n := header.ReadHot(p.head).FlushCount; n > a.epoch {
		p.editHot(func(h *header.Hot) { h.FlushCount = a.epoch - 1 }) // (epoch ≥ 1: hotOK)
		p.act("set the flush count %d to %d, below the epoch", n, a.epoch-1)
	}
	for i := range a.filters {
		fi := &a.filters[i]
		if floor := a.sealedFloor(i); fi.maxID < floor {
			// (After a Rebuild of the filter, which may have widened it.)
			p.editLine(a.entry(i), func(l *header.Line) { l.MaxID = max(l.MaxID&header.MaxID, floor) | l.MaxID&header.Sealed })
			p.act("raised the last id of filter %d's range from %d to %d", a.entry(i), fi.maxID, floor)
		}
	}
	for i := range a.filters {
		fi := &a.filters[i]
		if fi.indexScan == noneOverEntries && header.ReadLine(p.head, fi.desc.Slot).Index == header.IndexNone {
			// (Unless a Rebuild of the filter set it already. Only the
			// flag says the state was read as none: an allocated state on
			// a filter with no index is fixLines' to lower, not to keep.)
			p.editLine(fi.desc.Slot, func(l *header.Line) { l.Index = header.IndexAllocated })
			p.act("set the late-add index state of filter %d to allocated: its index holds entries", fi.desc.Slot)
		}
	}
	for s := range header.NumSlots {
		if sl := header.ReadSlot(p.head, s); sl.Reserved != 0 || sl.Unused != [4]uint64{} {
			p.editSlot(s, func(sl *header.Slot) { sl.Reserved, sl.Unused = 0, [4]uint64{} })
			p.act("zeroed the reserved words of slot %d's header", s)
		}
	}
}
