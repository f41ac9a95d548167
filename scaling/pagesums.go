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

// take takes the marks of the filter's changed pages and stores their
// checksums: for each map word, the swap that clears its marks comes
// before the reads of its pages, so a change the reads miss is followed
// by its writer's mark, which finds the byte 0 and sets it again.
// readFirst (testknobs.Knobs.PageSumsReadFirst, a negative control)
// reverses that order: it reads the marked pages of a word before the
// swap, and leaves a change made in between unmarked under an old
// checksum.
func (s *pageSums) take(buf *[pageWords]uint64, readFirst bool) (pages int) {
	for w := range s.pages {
		var early [4]uint32
		var read uint32 // marks of the pages read into early
		if readFirst {
			read = atomic.LoadUint32(&s.pages[w])
			for b := range uint64(4) {
				if p, ok := s.marked(w, read, b); ok {
					early[b] = s.sum(p, buf)
				}
			}
		}
		marks := s.pages.Take(w)
		if marks == 0 {
			continue
		}
		for b := range uint64(4) {
			p, ok := s.marked(w, marks, b)
			if !ok {
				continue
			}
			v := early[b]
			if read>>(b*8)&0xff == 0 {
				v = s.sum(p, buf)
			}
			s.sums.Set(p, v)
			pages++
		}
	}
	return pages
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

// takeSums stores the checksums of every changed page of the published
// chain's filters (Flush, under mu, before it syncs).
func (f *Filter) takeSums() error {
	c := f.chain.Load()
	if c == nil {
		return ErrClosed
	}
	if f.chainStale(c) {
		m, _, err := f.readPublished()
		if err != nil {
			return err
		}
		if err := f.loadChain(m); err != nil {
			return err
		}
		c = f.chain.Load()
	}
	if f.sumBuf == nil {
		f.sumBuf = new([pageWords]uint64)
	}
	readFirst := knob(f.tk).PageSumsReadFirst
	for _, m := range c.f {
		if !m.gone() {
			// (A retired filter's blocks are being released: a store
			// into them would allocate them again.)
			m.ps.take(f.sumBuf, readFirst)
		}
	}
	return nil
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
