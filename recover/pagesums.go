package recover

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/seqnum"
)

// Page checksums (version 1.4, header.FlagPageSums; docs/FORMAT.md, "Page
// checksums"). Verify checks every page whose checksum it can trust: in a
// clean file, every covered page of every filter; otherwise every page not
// marked changed of the filters not marked dirty (a filter is marked dirty
// before any of its pages changes, and a flush or a writer killed between
// a change and its checksum leaves its filter marked dirty). Repair,
// Rebuild and the copy Backup marks clean write every filter's checksums
// afresh (fixPageSums).

// maxPageFindings bounds the findings of mismatched pages listed per
// filter; the rest are counted in one more.
const maxPageFindings = 8

// checkPageSums compares the trusted pages of every filter with their
// checksums. A mismatch is damage: the filter needs Rebuild. If the state
// word or a checked filter's dirty mark changed while the pages were read
// (a writer began changing the file), nothing is reported but a note.
func (a *analysis) checkPageSums(img image) error {
	if a.quick || a.meta == nil || !a.hotOK || a.meta.Flags&header.FlagPageSums == 0 {
		return nil
	}
	misses, checked, err := a.pageSumMisses(img)
	if err != nil || len(misses) == 0 {
		return err
	}
	moved, err := a.trustMoved(img, checked)
	if err != nil {
		return err
	}
	if moved {
		a.note(Clean, -1, -1, header.StateOffset, "page checksums", nil,
			"a writer changed the file while its pages were read: %d page checksum(s) that did not match were not believed; verify again", len(misses))
		return nil
	}
	a.notePageMisses(misses)
	return nil
}

// pageMiss is a page of filter i whose checksum does not match: page p,
// at offset off.
type pageMiss struct {
	i              int
	p, off         int64
	stored, actual uint32
}

// pageSumMisses checks the pages of every filter whose checksums are to
// be trusted (all in a clean file; in another, those of filters not
// marked dirty, less the pages changed since their checksum was taken),
// and returns the pages that do not match and the filters checked.
func (a *analysis) pageSumMisses(img image) (misses []pageMiss, checked []int, err error) {
	clean := a.phase == seqnum.Clean
	r := &chunkReader{img: img}
	for i := range a.filters {
		fi := &a.filters[i]
		d := &fi.desc
		l, ok := d.SumLayout()
		if !ok || fi.cut || !fi.lineOK || (!clean && fi.dirty) {
			continue
		}
		checked = append(checked, i)
		check := make([]byte, l.End-l.MapOffset)
		if err := readFull(img, check, l.MapOffset); err != nil {
			return nil, nil, err
		}
		err := r.each(d.Offset, l.Covered*header.PageSize, func(pos int64, chunk []byte) bool {
			for j := int64(0); j < int64(len(chunk)); j += header.PageSize {
				p := (pos + j) / header.PageSize
				if !clean && header.ChangedIn(check, p) {
					continue // changed since its checksum was taken
				}
				if s, got := l.SumIn(check, p), header.PageSum(chunk[j:j+header.PageSize]); s != got {
					misses = append(misses, pageMiss{i, p, d.Offset + pos + j, s, got})
				}
			}
			return true
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return misses, checked, nil
}

// trustMoved reads again what says which pages are trusted, the state word
// and the checked filters' marks: a writer that began while the pages were
// read marked the file or the filter dirty before its change.
func (a *analysis) trustMoved(img image, checked []int) (bool, error) {
	var h header.Hot
	if err := header.ReadHotWords(full{img}, &h, &h.State); err != nil {
		return false, err
	}
	moved := h.State != a.state
	for _, i := range checked {
		var l header.Line
		if err := header.ReadLineWords(full{img}, a.entry(i), &l, &l.Mark); err != nil {
			return false, err
		}
		moved = moved || l.Mark != a.filters[i].line.Mark
	}
	return moved, nil
}

// notePageMisses reports the pages that do not match, at most
// maxPageFindings a filter, and marks their filters for Rebuild.
func (a *analysis) notePageMisses(misses []pageMiss) {
	per := map[int]int{}
	for _, m := range misses {
		a.needRebuild[m.i] = true
		if per[m.i]++; per[m.i] > maxPageFindings {
			continue
		}
		a.note(Damaged, a.entry(m.i), -1, m.off, "page checksum", header.ErrCorrupt,
			"page %d of the filter (%s) does not match the checksum the last flush took (stored %08x, the page's %08x): its bytes were changed outside the library (a stray write, a bad sector); the filter needs Rebuild from the application's source (repair --rebuild-from)",
			m.p, pageRegion(&a.filters[m.i].desc, m.p), m.stored, m.actual)
	}
	for i, n := range per {
		if n > maxPageFindings {
			a.note(Damaged, a.entry(i), -1, a.filters[i].desc.Offset, "page checksum", header.ErrCorrupt,
				"%d more pages of the filter do not match their checksums", n-maxPageFindings)
		}
	}
}

// pageRegion names what covered page p of filter d holds.
func pageRegion(d *header.FilterDesc, p int64) string {
	switch off := d.Offset + p*header.PageSize; {
	case off < d.Offset+d.CounterBytes():
		return "counters"
	case d.HasCounts() && off == d.CountsOffset():
		return "writers' item counts"
	default:
		return "late-add index"
	}
}

// fixPageSums makes the check pages of every filter of the patched file
// right: the checksum of each covered page as the patch leaves it, and
// the changed map zero. The file the patch writes then verifies as a
// flushed one.
func (p *patch) fixPageSums(a *analysis, img image) error {
	if a.meta.Flags&header.FlagPageSums == 0 {
		return nil
	}
	offs := make([]int64, 0, len(p.words))
	for off := range p.words {
		offs = append(offs, off)
	}
	slices.Sort(offs)
	page := make([]byte, header.PageSize)
	for _, d := range a.meta.Filters {
		l, ok := d.SumLayout()
		if !ok {
			continue
		}
		old := make([]byte, l.End-l.MapOffset)
		if err := readZeroPadded(img, old, l.MapOffset); err != nil {
			return err
		}
		want := make([]byte, len(old))
		changed := 0
		for pg := range l.Covered {
			off := d.Offset + pg*header.PageSize
			if err := readZeroPadded(img, page, off); err != nil {
				return err
			}
			p.overlay(page, off, offs)
			s := header.PageSum(page)
			l.PutSumIn(want, pg, s)
			if header.ChangedIn(old, pg) || l.SumIn(old, pg) != s {
				changed++
			}
		}
		if !bytes.Equal(old, want) {
			if p.sums == nil {
				p.sums = map[int64][]byte{}
			}
			p.sums[l.MapOffset] = want
			p.act("took the page checksums of filter %d (%d of %d pages changed since they were last taken)", d.Slot, changed, l.Covered)
		}
	}
	return nil
}

// overlay writes over page (the bytes at file offset off) what the patch
// changes in them: counter words (offs: p.words' offsets, sorted) and
// rebuilt filters' bytes.
func (p *patch) overlay(page []byte, off int64, offs []int64) {
	end := off + int64(len(page))
	lo, _ := slices.BinarySearch(offs, off)
	for _, o := range offs[lo:] {
		if o >= end {
			break
		}
		le.PutUint64(page[o-off:], p.words[o])
	}
	for fo, fb := range p.filters {
		if fe := fo + int64(len(fb)); fo < end && fe > off {
			from, to := max(fo, off), min(fe, end)
			copy(page[from-off:to-off], fb[from-fo:to-fo])
		}
	}
}

// readZeroPadded reads len(b) bytes at off, zeros past the image's end.
func readZeroPadded(img image, b []byte, off int64) error {
	clear(b)
	n := min(int64(len(b)), img.Size()-off)
	if n <= 0 {
		return nil
	}
	if err := readFull(img, b[:n], off); err != nil {
		return fmt.Errorf("reading the page checksums: %w", err)
	}
	return nil
}
