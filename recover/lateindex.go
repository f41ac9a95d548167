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
// its resolution decided: an Add that is undone loses the entry it may
// have inserted, a Remove that counts as completed clears the entry it may
// not have cleared yet. Either clears the entry only if it still holds the
// operation's fingerprint.
func (p *patch) endLate(a *analysis, img image, i int, ri *recInfo, completed bool) error {
	if ri.ixSlot == 0 {
		return nil
	}
	op := header.OpWord(ri.op).Op()
	if !(op == header.OpAdd && !completed) && !(op == header.OpRemove && completed) {
		return nil
	}
	d := &a.filters[i].desc
	off := d.IndexOffset() + int64(ri.ixSlot-1)*header.IndexEntrySize
	w := off &^ 7
	if w+8 > img.Size() {
		return nil // a truncated file: the filter is rebuilt
	}
	v, ok := p.words[w]
	if !ok {
		var b [8]byte
		if err := readFull(img, b[:], w); err != nil {
			return err
		}
		v = le.Uint64(b[:])
	}
	shift := uint(off-w) * 8
	if uint64(uint32(v>>shift)) != ri.ixFP {
		return nil
	}
	p.words[w] = v&^(uint64(0xffffffff)<<shift) | uint64(header.IndexCleared)<<shift
	what := "an Add it undid"
	if op == header.OpRemove {
		what = "a Remove it completed"
	}
	p.act("filter %d: cleared late-add index entry %d of %s", i, ri.ixSlot-1, what)
	return nil
}

// lateCopy is a private copy of a filter's late-add index that Rebuild
// consumes: an entry a key has matched is cleared in the copy, so two Adds
// of the same pair match two entries.
type lateCopy struct {
	filter int
	salt   uint64
	e      []uint32
	cf     *counting4.Filter // the filter's counters, nil if they are being rebuilt
}

// loadLate copies filter j's index (nil if it has none allocated) and, if
// withCounters and its counters are sound, its counters.
func loadLate(a *analysis, img image, j int, withCounters bool) (*lateCopy, error) {
	fi := &a.filters[j]
	d := &fi.desc
	// A garbage line's state word says nothing: read the index anyway (a
	// hole reads as zeros, an empty index).
	maybe := fi.ixState == header.IndexAllocated || !fi.lineOK
	if d.IndexBytes() == 0 || !maybe || d.Offset+d.Length > img.Size() {
		return nil, nil
	}
	b := make([]byte, d.IndexBytes())
	if err := readFull(img, b, d.IndexOffset()); err != nil {
		return nil, err
	}
	lc := &lateCopy{filter: j, salt: counting4.Salt(j), e: make([]uint32, d.IndexBytes()/header.IndexEntrySize)}
	for k := range lc.e {
		lc.e[k] = le.Uint32(b[k*header.IndexEntrySize:])
	}
	if withCounters && !a.needRebuild[j] {
		cb := make([]byte, d.CounterBytes())
		if err := readFull(img, cb, d.Offset); err != nil {
			return nil, err
		}
		w := make([]uint64, len(cb)/8)
		for k := range w {
			w[k] = le.Uint64(cb[k*8:])
		}
		cf, err := counting4.New(w, counting4.Layout(d.LayoutID), d.Counters, d.K)
		if err != nil {
			return nil, fmt.Errorf("filter %d: %w", j, err)
		}
		lc.cf = cf
	}
	return lc, nil
}

// take consumes an entry holding the fingerprint of (key hash h, id) and
// reports whether there was one. With the filter's counters at hand, it
// also needs them to hold the key (a fingerprint alone may be another
// pair's).
func (lc *lateCopy) take(h, id uint64) bool {
	kh := h + lc.salt
	if lc.cf != nil && !lc.cf.Contains(kh) {
		return false
	}
	n := uint64(len(lc.e))
	fp, s := header.IndexProbe(kh, id, n)
	for range n {
		switch lc.e[s] {
		case fp:
			lc.e[s] = header.IndexCleared
			return true
		case header.IndexEmpty:
			return false
		}
		if s++; s == n {
			s = 0
		}
	}
	return false
}

// frontier returns the largest id of the ranges of the filters before i
// (as Rebuild asks the source for them), and false if none has a range.
func (a *analysis) frontier(i int) (uint64, bool) {
	var hi uint64
	ok := false
	for j := range i {
		if _, h, ask := a.rangeFor(j); ask {
			hi, ok = max(hi, h), true
		}
	}
	return hi, ok
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
		sum := int64(fi.lineItems)
		for s := range header.NumSlots {
			c := int64(le.Uint64(b[s*header.CountSize:]))
			fi.counts[s] = c
			switch {
			case !fi.lineOK:
				// The writers word is garbage: Rebuild recounts.
			case fi.writers&(1<<s) != 0:
				sum += c
			case c != 0 && !fi.dirty:
				// (In a dirty filter after an OS crash the count's page may
				// have reached the disk without the line's: the filter is
				// rebuilt.)
				fi.strayCounts = true
				a.note(Damaged, i, s, header.CountOffset(d, s), "item counts", header.ErrCorrupt, "writer slot %d's item count %d is not named in the filter's writers word; Repair zeroes it", s, c)
			}
		}
		if fi.lineOK {
			fi.items = uint64(max(sum, 0))
			fi.itemsOK = fi.items <= itemLimit(d.Capacity)
		}
	}
	return nil
}

// zeroStrayCounts zeroes the counts of filter i that its writers word
// does not name.
func (p *patch) zeroStrayCounts(a *analysis, i int) {
	fi := &a.filters[i]
	for s := range header.NumSlots {
		if fi.writers&(1<<s) == 0 && fi.counts[s] != 0 {
			p.words[header.CountOffset(&fi.desc, s)] = 0
			p.changed = true
		}
	}
	p.act("filter %d: zeroed the item counts of writers its line does not name", i)
}

// foldCounts makes filter i's item count v the line's alone: the writers'
// counts are zeroed and the writers word cleared.
func (p *patch) foldCounts(a *analysis, i int, v uint64) {
	fi := &a.filters[i]
	line := header.FilterLineOffset(i)
	p.put(line+header.FilterItemsOffset, v)
	p.put(line+header.FilterWritersOffset, 0)
	if !fi.desc.HasCounts() {
		return
	}
	for s := range header.NumSlots {
		if fi.counts[s] != 0 {
			p.words[header.CountOffset(&fi.desc, s)] = 0
			p.changed = true
		}
	}
}
