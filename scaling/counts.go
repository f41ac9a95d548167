// Floor 2 (a filter's parts) of package scaling: a filter's item counts, one
// per writer slot.

package scaling

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
)

// Per-writer item counts (header/counts.go): a filter's item count is its
// line's items word plus the counts of the writer slots named in its
// writers word. A writer changes only its own count, on a line of its own,
// so writers in different processes share no word per Add or Remove but
// the counters; reading the count costs a load per writer that has
// counted on the filter.

const countStride = header.CountSize / 8 // words per writer's count

// mapCounts maps m's counts page and picks this handle's count.
func (f *Filter) mapCounts(m *member) error {
	w, err := f.r.Words(m.desc.CountsOffset(), header.CountsBytes/8)
	if err != nil {
		return fmt.Errorf("filter %d's item counts: %w", m.idx, err)
	}
	m.counts = w
	if f.slot >= 0 {
		m.own, m.ownSlot = &w[f.slot*countStride], f.slot
	}
	return nil
}

// itemCount returns the filter's live item count.
func (m *member) itemCount() uint64 {
	n := int64(atomic.LoadUint64(&m.line.Items))
	if m.counts != nil {
		words := 1
		if m.recWords {
			words = header.CountWords
		}
		for w := atomic.LoadUint64(&m.line.Writers); w != 0; w &= w - 1 {
			l := m.counts[bits.TrailingZeros64(w)*countStride:][:words]
			for i := range l {
				n += int64(atomic.LoadUint64(&l[i]))
			}
		}
	}
	return uint64(max(n, 0))
}

// lineItemCount is the item count of the filter in directory entry i: as
// the current chain counts it, or its line's items word alone if the chain
// does not hold it.
func (f *Filter) lineItemCount(i int) uint64 {
	if c := f.chain.Load(); c != nil {
		for _, m := range c.f {
			if m.idx == i {
				return m.itemCount()
			}
		}
	}
	return atomic.LoadUint64(&header.LineAt(f.hot, i).Items)
}

// count adds d to this handle's count on m (or to the line's items word for
// a filter without counts), for the operation that holds record r. The
// handle's bit in the writers word is set before its count first changes,
// so every reader sums the count.
//
// With header.FlagRecordCounts the count goes to r's word of the handle's
// line (header.CountWord): a word of r's alone takes a plain
// read-modify-write, as the exclusive writer's count does, since only the
// goroutine that holds r changes it (the slot is this handle's, the
// record this goroutine's until it frees it), and a lookup or another
// process reads it whole; the word records 7 … 14 share takes an atomic
// add. The locked add this saves was, on the 1M comparison run, the
// costliest instruction of a shared Add and Remove after the counters'
// compare-and-swaps (docs/PERFORMANCE.md, What each lever gained).
//
// The plain store still needs a store-load barrier before the page mark
// reads the changed map (r.fence): x86 lets that load pass the store, and
// a Flush's take that swaps the map between them reads the old count while
// the mark, read still set, is not set again, leaving the counts page
// unmarked under a stale checksum (the page-sums protocol,
// docs/FORMAT.md; TestCountStoreBeforeMarkLoad). A take can come between
// them only for a writer that began inside the Flush and marked the file
// dirty again, as a writer of this path may have; the straight Remove,
// which falls back if its dirty check fails, needs none (sharedFastRemove).
// The atomic add was its own barrier; the exclusive writer needs none, as
// its Flush holds its mutex. The barrier is a locked add on the record's
// busy word, a line of process memory: a third of the locked add on the
// count word it replaces (the knock-out builds of docs/PERFORMANCE.md).
// The straight Add uses its admission's release for it.
func (sharedWriter) count(m *member, r *record, d int64) {
	if m.own == nil {
		atomic.AddUint64(&m.line.Items, uint64(d))
		return
	}
	if !m.ownMarked.Load() {
		atomic.OrUint64(&m.line.Writers, 1<<m.ownSlot)
		m.ownMarked.Store(true)
	}
	switch p := m.recWord(r); {
	case !m.recWords:
		atomic.AddUint64(m.own, uint64(d))
	case r.cwOwn:
		counting4.StoreOrdered(p, atomic.LoadUint64(p)+uint64(d))
		r.fence()
	default:
		atomic.AddUint64(p, uint64(d))
	}
	m.ps.mark(m.countsPage)
}

// recCount is record r's own word of this handle's count line on m, where
// count stores into it plainly (the file has header.FlagRecordCounts, the
// word is r's alone, and the handle's bit is in the writers word
// already), or nil: the fast paths' common case of count, inlined
// (calling count cost the shared Add and Remove 30 instructions,
// bench/instructions.sh).
func (m *member) recCount(r *record) *uint64 {
	if m.own == nil || !m.recWords || !r.cwOwn || !m.ownMarked.Load() {
		return nil
	}
	return m.recWord(r)
}

// recWord is record r's word of this handle's count line on m
// (header.CountWord; r.cw < header.CountWords, so within the line m.own
// starts), for a handle that counts on m (m.own not nil).
func (m *member) recWord(r *record) *uint64 {
	return (*uint64)(unsafe.Add(unsafe.Pointer(m.own), int(r.cw)*8))
}

// uncount takes one from the filter's item count after a Remove, but never
// below zero (see decrementItems): a Remove of a saturated key beyond its
// Adds changes nothing. A Remove that changed a counter (changed) took away
// a count some Add put there, so it needs no check, and reads no other
// writer's count.
func (w sharedWriter) uncount(m *member, r *record, changed bool) {
	if m.own == nil {
		decrementItems(&m.line.Items)
		return
	}
	if !changed && m.itemCount() == 0 {
		return
	}
	w.count(m, r, -1)
}

// decrementItems takes one from an item count, but never below zero. A
// count of zero with the key's counters all non-zero means saturated
// counters (15 is never decremented, so a key added more than 15 times
// stays present after its Adds are all removed): that Remove succeeds and
// changes nothing, where a negative count would make a file that Open and
// Verify refuse.
func decrementItems(items *uint64) {
	for {
		v := atomic.LoadUint64(items)
		if int64(v) <= 0 || atomic.CompareAndSwapUint64(items, v, v-1) {
			return
		}
	}
}
