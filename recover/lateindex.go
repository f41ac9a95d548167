package recover

import (
	"fmt"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
)

// The late-add index of a filter (header/index.go, docs/FORMAT.md): the
// Adds whose id lies in an older filter's range that had to go to this
// filter, as fingerprints of (key hash, id).

// validIndexState reports whether a filter line's index state word can be
// right for the filter d.
func validIndexState(d *header.FilterDesc, v uint64) bool {
	return v == header.IndexNone || (v == header.IndexAllocated && d.IndexBytes() > 0)
}

// indexStateFor is the state Repair gives a line whose state word is
// garbage: allocated for a filter with an index (entries that are there
// are then seen; the blocks of a hole read as zeros), none otherwise.
func indexStateFor(d *header.FilterDesc) uint64 {
	if d.IndexBytes() > 0 {
		return header.IndexAllocated
	}
	return header.IndexNone
}

// endLate ends the index half of an operation cut short on filter i, as
// its resolution decided. The record says how far the operation got with
// its entry: its slot word carries IndexDone once the operation's
// compare-and-swap on the entry happened.
//   - An Add that is undone loses the entry it inserted (done); without
//     IndexDone the entry is left alone (it may be another writer's, of
//     the same key and id; at worst an entry with no Add stays).
//   - A Remove claims its entry (clears it) before it changes the counters
//     (scaling's removeLate): one that is undone gets its entry back
//     (done). One that counts as completed without IndexDone was written
//     by a library that cleared the entry after the counters: its entry is
//     cleared.
//
// An entry is cleared only if it holds the record's fingerprint, and put
// back only where an entry is free.
func (p *patch) endLate(a *analysis, img image, i int, ri *recInfo, completed bool) error {
	if ri.IndexSlot == 0 {
		return nil
	}
	done := ri.IndexSlot&header.IndexDone != 0
	op := header.OpWord(ri.Op).Op()
	slot := ri.IndexSlot &^ header.IndexDone
	switch {
	case op == header.OpAdd && !completed && done:
		return p.setEntry(a, img, i, slot-1, ri.IndexFP, header.IndexCleared, "cleared late-add index entry %d of an Add it undid")
	case op == header.OpRemove && completed && !done:
		return p.setEntry(a, img, i, slot-1, ri.IndexFP, header.IndexCleared, "cleared late-add index entry %d of a Remove it completed")
	case op == header.OpRemove && !completed && done:
		// Put back where it was, or in the next free entry: a lookup of the
		// pair walks on past entries in use (at worst the entry stays
		// lost: the key stays present, never the other way round).
		n := uint64(a.filters[i].desc.IndexBytes() / header.IndexEntrySize)
		for k := range min(n, header.IndexMaxProbe) {
			s := (slot - 1 + k) % n
			v, err := p.entry(a, img, i, s)
			if err != nil || v > header.IndexCleared {
				if err != nil {
					return err
				}
				continue
			}
			return p.setEntry(a, img, i, s, uint64(v), uint32(ri.IndexFP), "put back late-add index entry %d of a Remove it undid")
		}
	}
	return nil
}

// entry reads entry s of filter i's late-add index as the patch leaves it
// (IndexEmpty past the end of a truncated file).
func (p *patch) entry(a *analysis, img image, i int, s uint64) (uint32, error) {
	off := a.filters[i].desc.IndexOffset() + int64(s)*header.IndexEntrySize
	w := off &^ 7
	if w+8 > img.Size() {
		return header.IndexEmpty, nil
	}
	v, ok := p.words[w]
	if !ok {
		var b [8]byte
		if err := readFull(img, b[:], w); err != nil {
			return 0, err
		}
		v = le.Uint64(b[:])
	}
	return uint32(v >> (uint(off-w) * 8)), nil
}

// setEntry stores to entry s of filter i's late-add index if it holds
// from, saying what it did (what names the entry with %d).
func (p *patch) setEntry(a *analysis, img image, i int, s, from uint64, to uint32, what string) error {
	off := a.filters[i].desc.IndexOffset() + int64(s)*header.IndexEntrySize
	w := off &^ 7
	if w+8 > img.Size() {
		return nil // a truncated file: the filter is rebuilt
	}
	v, err := p.entry(a, img, i, s)
	if err != nil || uint64(v) != from {
		return err
	}
	cur, ok := p.words[w]
	if !ok {
		var b [8]byte
		if err := readFull(img, b[:], w); err != nil {
			return err
		}
		cur = le.Uint64(b[:])
	}
	shift := uint(off-w) * 8
	p.words[w] = cur&^(uint64(0xffffffff)<<shift) | uint64(to)<<shift
	p.act("filter %d: "+what, a.entry(i), s)
	return nil
}

// patchView is an image as a patch leaves it: Repair's resolutions, the
// index entries it cleared and the filters rebuilt so far read as written.
// Reads are of whole words, pages or filters, so a patched word never
// straddles a read's edge.
type patchView struct {
	img image
	p   *patch
}

func (v *patchView) Size() int64 { return v.img.Size() }

func (v *patchView) ReadAt(b []byte, off int64) (int, error) {
	n, err := v.img.ReadAt(b, off)
	end := off + int64(len(b))
	for w, x := range v.p.words {
		if w >= off && w+8 <= end {
			le.PutUint64(b[w-off:], x)
		}
	}
	for fo, fb := range v.p.filters {
		if lo, hi := max(fo, off), min(fo+int64(len(fb)), end); lo < hi {
			copy(b[lo-off:hi-off], fb[lo-fo:hi-fo])
		}
	}
	return n, err
}

// lateCopy is a private copy of a filter's late-add index. Its entries are
// read whatever the line's state word says (an OS crash may have kept the
// index page and lost the line's): a hole reads as an empty index.
type lateCopy struct {
	salt uint64
	e    []uint32
	cf   *counting4.Filter // the filter's counters, nil if they are being rebuilt
}

// loadLate copies filter j's index (nil if it has none) and, if
// withCounters and its counters are sound, its counters.
func loadLate(a *analysis, img image, j int, withCounters bool) (*lateCopy, error) {
	d := &a.filters[j].desc
	if d.IndexBytes() == 0 || d.Offset+d.Length > img.Size() {
		return nil, nil
	}
	b := make([]byte, d.IndexBytes())
	if err := readFull(img, b, d.IndexOffset()); err != nil {
		return nil, err
	}
	lc := &lateCopy{salt: counting4.Salt(d.Slot), e: make([]uint32, d.IndexBytes()/header.IndexEntrySize)}
	for k := range lc.e {
		lc.e[k] = le.Uint32(b[k*header.IndexEntrySize:])
	}
	if withCounters && !a.needRebuild[j] {
		cf, err := loadCounters(img, d)
		if err != nil {
			return nil, fmt.Errorf("filter %d: %w", a.entry(j), err)
		}
		lc.cf = cf
	}
	return lc, nil
}

// loadCounters reads the counters of filter d.
func loadCounters(img image, d *header.FilterDesc) (*counting4.Filter, error) {
	cb := make([]byte, d.CounterBytes())
	if err := readFull(img, cb, d.Offset); err != nil {
		return nil, err
	}
	w := make([]uint64, len(cb)/8)
	for k := range w {
		w[k] = le.Uint64(cb[k*8:])
	}
	return counting4.New(w, counting4.Layout(d.LayoutID), d.Counters, d.K)
}

// slot returns the entry holding the fingerprint of (native hash h, id),
// or -1.
func (lc *lateCopy) slot(h, id uint64) int {
	fp, s := header.IndexProbe(h+lc.salt, id, uint64(len(lc.e)))
	if w := header.ScanIndex(lc.e, fp, s); w.Copies > 0 {
		return int(w.First)
	}
	return -1
}

// take consumes an entry holding the fingerprint of (native hash h, id)
// and reports whether there was one. With the filter's counters at hand,
// it also needs them to hold the key (a fingerprint alone may be another
// pair's).
//
// A pair whose copies saturate (header.IndexSaturated entries, and its
// counters there all saturated, or being rebuilt: they will be) is the
// newer filter's however often the source lists it, and its entries stay:
// the library takes no entry and no count for its copies past the bound.
func (lc *lateCopy) take(h, id uint64) bool {
	kh := h + lc.salt
	if lc.cf != nil && !lc.cf.Contains(kh) {
		return false
	}
	fp, s := header.IndexProbe(kh, id, uint64(len(lc.e)))
	w := header.ScanIndex(lc.e, fp, s)
	switch {
	case w.Copies == 0:
		return false
	case w.Copies >= header.IndexSaturated && (lc.cf == nil || lc.cf.Saturated(kh)):
		return true
	}
	lc.e[w.First] = header.IndexCleared
	return true
}

// lateKeys decides, for the Rebuild of filter i, which of the source's keys
// are late Adds: of a newer filter (left out of i), or of i (re-added to i,
// with a fresh entry in the index Rebuild writes for it).
type lateKeys struct {
	a     *analysis
	img   image
	i     int
	seed  uint64
	later []*lateCopy // the newer filters' indexes, consumed as keys match
	index *lateCopy   // i's index as the file holds it; nil if i has none
	fresh []uint32    // i's index as Rebuild writes it
	// lost: i's index may have lost entries (an OS crash): a key below
	// i's range that no other filter holds is taken to be one of i's late
	// Adds. others holds the other filters' counters for that test.
	lost   bool
	others map[int]*counting4.Filter
}

func newLateKeys(a *analysis, img image, i int) (*lateKeys, error) {
	lk := &lateKeys{a: a, img: img, i: i, seed: a.meta.Params.Seed, others: map[int]*counting4.Filter{}}
	for j := i + 1; j < len(a.filters); j++ {
		lc, err := loadLate(a, img, j, true)
		if err != nil {
			return nil, err
		}
		if lc != nil {
			lk.later = append(lk.later, lc)
		}
	}
	// The index state word is made durable before the first entry is
	// stored (scaling's allocIndex), so a sound line whose word reads
	// IndexNone says i took no late Add. A line whose range reaches at or
	// below the frontier is not sound in that (belowFrontier): the keys
	// it claims there come back as late Adds.
	fi := &a.filters[i]
	known := a.hotOK && fi.lineOK && !a.belowFrontier(i)
	if known && fi.line.Index != header.IndexAllocated {
		return lk, nil
	}
	own, err := loadLate(a, img, i, false)
	if err != nil || own == nil {
		return lk, err
	}
	lk.index, lk.fresh = own, make([]uint32, len(own.e))
	lk.lost = !known || (fi.dirty && !a.trustedPhase())
	return lk, nil
}

// lateElsewhere reports whether (key, id), in i's range, is a late Add of
// a newer filter.
func (lk *lateKeys) lateElsewhere(key []byte, id uint64) bool {
	h := header.HashKey(lk.seed, key)
	for _, lc := range lk.later {
		if lc.take(h, id) {
			return true
		}
	}
	return false
}

// own reports whether (key, id), below i's range, is one of i's late Adds
// to re-add, and if so records it in the fresh index (kh: the key's hash
// for i).
func (lk *lateKeys) own(key []byte, kh, id uint64) bool {
	if lk.index.slot(kh-lk.index.salt, id) < 0 && (!lk.lost || lk.heldElsewhere(key, id)) {
		return false
	}
	// A pair the source lists more often than its copies saturate gets
	// header.IndexSaturated entries and as many Adds (they saturate its
	// counters), as the library leaves it: the copies past the bound would
	// fill its probe window, leaving the pairs that share it without their
	// entries, and count items the library does not.
	fp, s := header.IndexProbe(kh, id, uint64(len(lk.fresh)))
	w := header.ScanIndex(lk.fresh, fp, s)
	if w.Copies >= header.IndexSaturated {
		return false
	}
	if w.HasFree {
		lk.fresh[w.Free] = fp
	}
	return true
}

// heldElsewhere reports whether another filter holds (key, id): one that
// is rebuilt too and whose range holds id (it re-adds the key), or one
// whose counters hold the key.
func (lk *lateKeys) heldElsewhere(key []byte, id uint64) bool {
	for j := range lk.a.filters {
		if j == lk.i {
			continue
		}
		d := &lk.a.filters[j].desc
		if lk.a.needRebuild[j] {
			if lo, hi, ask := lk.a.rangeFor(j); ask && lo <= id && id <= hi {
				return true
			}
			continue
		}
		cf, ok := lk.others[j]
		if !ok {
			if d.Offset+d.Length <= lk.img.Size() {
				cf, _ = loadCounters(lk.img, d) // unreadable: nil, holds nothing
			}
			lk.others[j] = cf
		}
		if cf == nil {
			continue
		}
		var h uint64
		if d.HashID == header.HashMurmur3Orig {
			h = header.HashKeyOriginal(key)
		} else {
			h = header.HashKey(lk.seed, key) + counting4.Salt(d.Slot)
		}
		if cf.Contains(h) {
			return true
		}
	}
	return false
}

// indexBytes is the fresh index as file bytes.
func (lk *lateKeys) indexBytes() []byte {
	b := make([]byte, len(lk.fresh)*header.IndexEntrySize)
	for k, e := range lk.fresh {
		le.PutUint32(b[k*header.IndexEntrySize:], e)
	}
	return b
}

// readCounts adds the writers' item counts (header/counts.go) of every
// filter with a sound line to its item count. A count of a slot the
// writers word does not name is not part of the count (a writer sets its
// bit first); one that is not zero is noted, and Repair zeroes it.
func (a *analysis) readCounts(img image) error {
	for i := range a.filters {
		fi := &a.filters[i]
		d := &fi.desc
		if !d.HasCounts() || d.CountsOffset()+header.CountsBytes > a.size {
			continue // a truncated file: the filter is rebuilt, its counts zeroed
		}
		b := make([]byte, header.CountsBytes)
		if err := readFull(img, b, d.CountsOffset()); err != nil {
			return err
		}
		if fi.lineOK {
			// A live writer may have set its bit, then counted, since the
			// head was read: the bit precedes the count, so the word read
			// after the counts names every count they hold.
			var l header.Line
			if err := header.ReadLineWords(full{img}, fi.desc.Slot, &l, &l.Writers); err != nil {
				return err
			}
			fi.line.Writers |= l.Writers
		}
		sum := int64(fi.line.Items)
		words := 1 // (without FlagRecordCounts only the first word counts)
		if a.meta.Flags&header.FlagRecordCounts != 0 {
			words = header.CountWords
		}
		for s := range header.NumSlots {
			var c int64
			fi.countWords[s] = 0
			for w := range header.CountWords {
				v := le.Uint64(b[s*header.CountSize+8*w:])
				if v != 0 {
					fi.countWords[s] |= 1 << w
				}
				if w < words {
					c += int64(v)
				}
			}
			fi.counts[s] = c
			switch {
			case !fi.lineOK:
				// The writers word is garbage: Rebuild recounts.
			case fi.line.Writers&(1<<s) != 0:
				sum += c
			case fi.countWords[s]&(1<<words-1) != 0:
				fi.strayCounts = true
				// (In a dirty filter after an OS crash the count's page may
				// have reached the disk without the line's: the filter is
				// rebuilt, and Repair zeroes the count then too.)
				if !fi.dirty {
					a.note(Damaged, a.entry(i), s, header.CountOffset(d, s), "item counts", header.ErrCorrupt, "writer slot %d's item count %d is not named in the filter's writers word; Repair zeroes it", s, c)
				}
			}
		}
		if fi.lineOK {
			// A negative sum: Removes of keys never added (or beyond their
			// Adds) took from the writers' counts; the count is recounted.
			fi.items = uint64(max(sum, 0))
			fi.itemsOK = sum >= 0 && fi.items <= itemLimit(d.Capacity)
		}
	}
	return nil
}

// zeroStrayCounts zeroes the counts of filter i that its writers word
// does not name.
func (p *patch) zeroStrayCounts(a *analysis, i int) {
	fi := &a.filters[i]
	for s := range header.NumSlots {
		if fi.line.Writers&(1<<s) == 0 {
			p.zeroCountLine(fi, s)
		}
	}
	p.act("filter %d: zeroed the item counts of writers its line does not name", a.entry(i))
}

// zeroCountLine zeroes the words of slot s's count line on filter fi that
// are not zero (all of them: with FlagRecordCounts each holds part of the
// count, and without it the others are zeroed before an upgrade sets it).
func (p *patch) zeroCountLine(fi *filterInfo, s int) {
	for w := range header.CountWords {
		if fi.countWords[s]&(1<<w) != 0 {
			p.words[header.CountOffset(&fi.desc, s)+int64(8*w)] = 0
			p.changed = true
		}
	}
}

// foldCounts makes filter i's item count v the line's alone: the writers'
// counts are zeroed and the writers word cleared.
func (p *patch) foldCounts(a *analysis, i int, v uint64) {
	fi := &a.filters[i]
	p.editLine(fi.desc.Slot, func(l *header.Line) { l.Items, l.Writers = v, 0 })
	if !fi.desc.HasCounts() {
		return
	}
	for s := range header.NumSlots {
		p.zeroCountLine(fi, s)
	}
}
