// Floor 3 (the file's coordination) of package scaling: the late-add index:
// keys added below a sealed filter's range.

package scaling

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/mmapfile"
)

// lateIndex is a filter's late-add index (header/index.go): the Adds whose
// id lies in an older filter's range but that had to go to this filter,
// as fingerprints of (key hash, id) in an open-addressing table of 32-bit
// entries. Entries never go back to empty (I9, docs/PROTOCOLS.md).
type lateIndex struct {
	e     []uint32  // nil for a filter without an index
	off   int64     // file offset of the table
	ps    *pageSums // the filter's check pages: an entry changed marks its page
	page0 uint64    // the table's first page among the filter's covered pages
	// repeatsSeal: the negative control testknobs.Knobs.LateRepeatsSeal
	// (see saturated).
	repeatsSeal bool
}

// entriesPerPage is the index entries in a page (1024: a shift of 10).
const entriesPerPage = header.PageSize / header.IndexEntrySize

// mark marks the page of entry s changed, after the entry's change.
func (x *lateIndex) mark(s uint64) {
	if x.ps != nil {
		x.ps.mark(x.page0 + s/entriesPerPage)
	}
}

// mapIndex maps filter i's index. Its blocks may be a hole in the file:
// nothing touches e before the line's Index word reads IndexAllocated.
func (f *Filter) mapIndex(i int, d *header.FilterDesc) (lateIndex, error) {
	w, err := f.r.Words(d.IndexOffset(), d.IndexBytes()/8)
	if err != nil {
		return lateIndex{}, fmt.Errorf("filter %d's late-add index: %w", i, err)
	}
	return lateIndex{
		e:           unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(w))), 2*len(w)),
		off:         d.IndexOffset(),
		repeatsSeal: knob(f.tk).LateRepeatsSeal,
	}, nil
}

// indexAllocated reports whether m's index may hold entries.
func (m *member) indexAllocated() bool {
	return m.ix.e != nil && atomic.LoadUint64(&m.line.Index) == header.IndexAllocated
}

// allocIndex makes sure filter m's index has its blocks, allocating them
// under the growth lock the first time (I9; a full disk is an error here,
// not a SIGBUS at the first store).
func (f *Filter) allocIndex(m *member) error {
	if m.indexAllocated() {
		return nil
	}
	unlock, err := f.lockGrowth()
	if err != nil {
		return err
	}
	defer unlock()
	if m.indexAllocated() {
		return nil
	}
	if m.gone() {
		// Retired while this Add waited: its line and blocks may already
		// be another filter's. (Under the growth lock nothing is retired.)
		return errRetired
	}
	if sp, ok := f.r.(mmapfile.Sparse); ok {
		if err := sp.Allocate(m.ix.off, int64(len(m.ix.e))*header.IndexEntrySize); err != nil {
			return fmt.Errorf("allocating filter %d's late-add index: %w", m.idx, err)
		}
	}
	atomic.StoreUint64(&m.line.Index, header.IndexAllocated)
	// Durable before the first entry: after an OS crash, Rebuild trusts a
	// word that reads IndexNone to mean no late Add (recover/lateindex.go).
	return f.sync(header.FilterLineOffset(m.idx), header.LineSize)
}

// insert stores fingerprint fp of (h, id) in the first free entry of its
// probe window, naming the entry in the record before each try (Repair
// clears it if the Add is undone). It returns false if the index is full.
func (x *lateIndex) insert(h, id uint64, r *record) bool {
	fp, s := header.IndexProbe(h, id, uint64(len(x.e)))
	atomic.StoreUint64(&r.rec.IndexFP, uint64(fp))
	for {
		w := header.ScanIndex(x.e, fp, s)
		if !w.HasFree {
			atomic.StoreUint64(&r.rec.IndexSlot, 0)
			return false
		}
		atomic.StoreUint64(&r.rec.IndexSlot, w.Free+1)
		if atomic.CompareAndSwapUint32(&x.e[w.Free], w.FreeV, fp) {
			x.mark(w.Free)
			atomic.StoreUint64(&r.rec.IndexSlot, (w.Free+1)|header.IndexDone)
			return true
		}
		// Taken since the load: look again.
	}
}

// lateEntry is an index entry and the fingerprint it holds, and how many
// entries held the pair's fingerprint when it was found.
type lateEntry struct {
	slot   uint64
	fp     uint32
	copies int
}

// find returns an entry holding the fingerprint of (h, id).
func (x *lateIndex) find(h, id uint64) (lateEntry, bool) {
	fp, s := header.IndexProbe(h, id, uint64(len(x.e)))
	w := header.ScanIndex(x.e, fp, s)
	return lateEntry{w.First, fp, w.Copies}, w.Copies > 0
}

// saturated reports whether a late Add or Remove of a pair whose entry e
// the index holds, of key hash kh, would change nothing: its copies fill
// header.IndexSaturated entries and its counters are all saturated. Such an
// Add inserts no entry and such a Remove claims none (header/index.go).
// With the negative control testknobs.Knobs.LateRepeatsSeal (x.repeatsSeal)
// nothing is saturated: every copy takes an entry, as before.
func (x *lateIndex) saturated(e lateEntry, cf *counting4.Filter, kh uint64) bool {
	return !x.repeatsSeal && e.copies >= header.IndexSaturated && cf.Saturated(kh)
}

// claim claims a late Add of (h, id) for a Remove: it clears entry e if it
// still holds its fingerprint, or else another entry of (h, id) (a
// concurrent Remove of the same pair claimed e first), and returns the
// entry it cleared. It returns false if no entry of (h, id) is left. The
// record names each entry before the compare-and-swap, and carries
// IndexDone from just after it (I6, I10): Repair puts back the entry of a
// Remove it undoes (recover/lateindex.go). I10 names the one window, a
// kill between the compare-and-swap and that store.
func (x *lateIndex) claim(h, id uint64, e lateEntry, r *record) (uint64, bool) {
	for {
		atomic.StoreUint64(&r.rec.IndexFP, uint64(e.fp))
		atomic.StoreUint64(&r.rec.IndexSlot, e.slot+1)
		if atomic.CompareAndSwapUint32(&x.e[e.slot], e.fp, header.IndexCleared) {
			x.mark(e.slot)
			atomic.StoreUint64(&r.rec.IndexSlot, (e.slot+1)|header.IndexDone)
			return e.slot, true
		}
		atomic.StoreUint64(&r.rec.IndexSlot, 0) // the record names no entry
		var ok bool
		if e, ok = x.find(h, id); !ok {
			return 0, false
		}
	}
}

// restore puts back fingerprint fp of (h, id), cleared from entry slot by
// a Remove that then found the key's counters not holding it: in its entry
// if that is still free, else in the first free entry of its probe window
// (entries never go back to empty, so a lookup still finds it).
func (x *lateIndex) restore(h, id, slot uint64, fp uint32) {
	if atomic.CompareAndSwapUint32(&x.e[slot], header.IndexCleared, fp) {
		x.mark(slot)
		return
	}
	_, s := header.IndexProbe(h, id, uint64(len(x.e)))
	for {
		w := header.ScanIndex(x.e, fp, s)
		if !w.HasFree {
			return
		}
		if atomic.CompareAndSwapUint32(&x.e[w.Free], w.FreeV, fp) {
			x.mark(w.Free)
			return
		}
	}
}
