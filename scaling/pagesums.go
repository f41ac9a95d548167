// Floor 2 (a filter's parts) of package scaling: a filter's page checksums:
// the changed map and taking its marks.

package scaling

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/mmapfile"
)

// Page checksums (version 1.4, header.FlagPageSums; docs/FORMAT.md, "Page
// checksums"). Every change to a covered page (a counter word, a late-add
// index entry, a writer's item count) marks the page in its filter's
// changed map after the change (counting4.Filter.SetPageMap, markIndex,
// markCounts); Flush takes the marks and stores the checksums of the
// pages it took (takeSums) before it syncs. A change that lands after its
// page's checksum was taken leaves the page marked (the ordering argument
// of docs/FORMAT.md).

const pageWords = header.PageSize / 8

// pageSums is a member's check pages, mapped (empty without them).
type pageSums struct {
	pages   header.PageMap
	sums    header.PageSums
	covered []uint64 // the covered pages' words
	n       uint64   // covered pages
}

// mapSums maps the check pages of filter d.
func (f *Filter) mapSums(d *header.FilterDesc) (pageSums, error) {
	l, ok := d.SumLayout()
	if !ok {
		return pageSums{}, nil
	}
	mb, err := f.r.Bytes(l.MapOffset, l.SumsOffset-l.MapOffset)
	if err != nil {
		return pageSums{}, fmt.Errorf("filter %d's changed map: %w", d.Slot, err)
	}
	sb, err := f.r.Bytes(l.SumsOffset, l.Covered*header.PageSumSize)
	if err != nil {
		return pageSums{}, fmt.Errorf("filter %d's page checksums: %w", d.Slot, err)
	}
	w, err := f.r.Words(d.Offset, d.CoveredBytes()/8)
	if err != nil {
		return pageSums{}, fmt.Errorf("filter %d: %w", d.Slot, err)
	}
	return pageSums{pages: header.PageMapOf(mb), sums: header.PageSumsOf(sb), covered: w, n: uint64(l.Covered)}, nil
}

// mark marks covered page p changed (nothing without check pages).
func (s *pageSums) mark(p uint64) {
	if s.pages != nil {
		s.pages.Mark(p)
	}
}

// mapPageWords is the number of words in a page of a changed map: a map
// page covers 4·mapPageWords pages, the unit the hot taking word names.
const mapPageWords = header.PageSize / 4

// taker is what one Flush's take of the marks uses.
type taker struct {
	buf       *[pageWords]uint64
	readFirst bool         // testknobs.Knobs.PageSumsReadFirst
	taking    *uint64      // the hot taking word (nil: Knobs.FlushTakeUnrecorded)
	step      func(string) // testknobs.Knobs.FlushStep (nil: none)
}

// take takes the marks of the filter's changed pages and stores their
// checksums: for each map word, the swap that clears its marks comes
// before the reads of its pages, so a change the reads miss is followed
// by its writer's mark, which finds the byte 0 and sets it again.
// Before the swap of the first marked word of each map page, the hot
// taking word names that map page (entry is the filter's directory
// entry): a flush killed between a swap and the checksum stores that
// swap calls for leaves its pages unmarked under old checksums, and the
// next flush marks them again (remark) before it takes the marks (I3).
// readFirst (testknobs.Knobs.PageSumsReadFirst, a negative control)
// reverses that order: it reads the marked pages of a word before the
// swap, and leaves a change made in between unmarked under an old
// checksum.
func (s *pageSums) take(t *taker, entry int) (pages int) {
	recorded := -1
	for w := range s.pages {
		var early [4]uint32
		var read uint32 // marks of the pages read into early
		if t.readFirst {
			read = atomic.LoadUint32(&s.pages[w])
			for b := range uint64(4) {
				if p, ok := s.marked(w, read, b); ok {
					early[b] = s.sum(p, t.buf)
				}
			}
		}
		if atomic.LoadUint32(&s.pages[w]) == 0 {
			continue
		}
		if mp := w / mapPageWords; mp != recorded && t.taking != nil {
			atomic.StoreUint64(t.taking, takingWord(entry, mp))
			recorded = mp
			t.at("recorded")
		}
		marks := s.pages.Take(w)
		if marks == 0 {
			continue
		}
		t.at("swapped")
		for b := range uint64(4) {
			p, ok := s.marked(w, marks, b)
			if !ok {
				continue
			}
			v := early[b]
			if read>>(b*8)&0xff == 0 {
				v = s.sum(p, t.buf)
			}
			s.sums.Set(p, v)
			pages++
			t.at("stored")
		}
	}
	return pages
}

// at runs the FlushStep knob, if any, at step name of a Flush.
func (t *taker) at(name string) {
	if t.step != nil {
		t.step(name)
	}
}

// takingWord is the hot taking word naming map page mp of the filter in
// directory entry entry (docs/FORMAT.md, "Global hot page").
func takingWord(entry, mp int) uint64 {
	return uint64(entry+1)<<header.TakingEntryShift | uint64(mp)
}

// remark marks changed every covered page of the map page the taking word
// t names, in the member of c it names (none if it names no member of c,
// or one being retired): a flush killed inside its take may have left
// them unmarked under old checksums.
func (c *chain) remark(t uint64) {
	entry, mp := int(t>>header.TakingEntryShift)-1, t&(1<<header.TakingEntryShift-1)
	for _, m := range c.f {
		if m.idx != entry || m.gone() || m.ps.pages == nil {
			continue
		}
		per := uint64(4 * mapPageWords)
		if mp >= (m.ps.n+per-1)/per {
			return // no such map page
		}
		for p := mp * per; p < min((mp+1)*per, m.ps.n); p++ {
			m.ps.mark(p)
		}
	}
}

// marked returns page p = 4w+b and whether marks, map word w's marks,
// has it marked and the filter covers it.
func (s *pageSums) marked(w int, marks uint32, b uint64) (p uint64, ok bool) {
	p = uint64(w)*4 + b
	return p, marks>>(b*8)&0xff != 0 && p < s.n
}

// sum returns the checksum of covered page p.
func (s *pageSums) sum(p uint64, buf *[pageWords]uint64) uint32 {
	return pageSum(s.covered[p*pageWords:(p+1)*pageWords], buf)
}

// pageSum returns the checksum of one page of mapped words, read with
// atomic loads into buf (writers change the words meanwhile).
func pageSum(words []uint64, buf *[pageWords]uint64) uint32 {
	for i := range buf {
		buf[i] = atomic.LoadUint64(&words[i])
	}
	return header.PageSum(unsafe.Slice((*byte)(unsafe.Pointer(buf)), header.PageSize))
}

// writeAllSums stores the checksum of every covered page of filter d, and
// clears its changed map: the checksum of a zero page if zero (a new
// filter, whose pages are zero), else of its bytes. Nothing else may
// write the filter meanwhile.
func writeAllSums(r mmapfile.Region, d *header.FilterDesc, zero bool) error {
	l, ok := d.SumLayout()
	if !ok {
		return nil
	}
	mb, err := r.Bytes(l.MapOffset, l.SumsOffset-l.MapOffset)
	if err != nil {
		return err
	}
	sb, err := r.Bytes(l.SumsOffset, l.Covered*header.PageSumSize)
	if err != nil {
		return err
	}
	pm, sums := header.PageMapOf(mb), header.PageSumsOf(sb)
	for w := range pm {
		pm.Take(w)
	}
	var words []uint64
	if !zero {
		if words, err = r.Words(d.Offset, d.CoveredBytes()/8); err != nil {
			return err
		}
	}
	var buf [pageWords]uint64
	for p := range uint64(l.Covered) {
		v := header.ZeroPageSum
		if !zero {
			v = pageSum(words[p*pageWords:(p+1)*pageWords], &buf)
		}
		sums.Set(p, v)
	}
	return nil
}
