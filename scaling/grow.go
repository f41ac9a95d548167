// Floor 3 (the file's coordination) of package scaling: loading the chain,
// and growing it by a filter.

package scaling

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/mmapfile"
)

func (f *Filter) loadChain(m *header.Meta) error {
	old := f.chain.Load()
	c := &chain{base: m.Retired, retired: atomic.LoadUint64(f.retired), dirRetired: m.Retired, legacy: knob(f.tk).LegacyRouting}
	if old != nil {
		c.keep = old.keep
	} else {
		c.keep = &mapKeep{r: f.r}
	}
	dir := m.Filters
	if c.retired >= c.base+uint64(len(dir)) {
		// It would retire the newest filter, which no retirement does:
		// the hot page is damaged (checked at Open too, see validateHot).
		return &header.CorruptionError{Offset: header.RetiredOffset, Filter: -1, Field: "retired",
			Reason: fmt.Sprintf("%d filters retired, the chain ends at %d", c.retired, c.base+uint64(len(dir))), Err: header.ErrCorrupt}
	}
	if c.retired > c.base {
		// A retirement stored in the hot word and not yet in the directory
		// (in progress, or its process died): lookups stop asking its
		// filters at once. The newest filter is never retired.
		drop := min(c.retired-c.base, uint64(len(dir)-1))
		dir, c.base = dir[drop:], c.base+drop
	}
	for j, d := range dir {
		seq := c.base + uint64(j)
		if old != nil && seq >= old.base && seq < old.end && old.f[seq-old.base].idx == d.Slot {
			c.f = append(c.f, old.f[seq-old.base])
			continue
		}
		mb, err := f.newMember(seq, d, m.Flags&header.FlagRecordCounts != 0)
		if err != nil {
			return err
		}
		c.f = append(c.f, mb)
	}
	c.end = c.base + uint64(len(c.f))
	c.disjoint = true
	c.lines = make([]*header.Line, len(c.f))
	for j, mb := range c.f {
		c.lines[j] = mb.line
		c.hasMurmur = c.hasMurmur || mb.desc.HashID == header.HashMurmur3Orig
		c.disjoint = c.disjoint && (j == 0 || mb.ix.e != nil)
		if j < len(c.f)-1 {
			// Sealed before the chain that follows it was published: its
			// max id is final (a swap of a sealed max id fails), and so is
			// its range, but for a min id an Add that raced the seal still
			// lowers, to above the frontier that Add read and at most the
			// max id. So a range read empty counts its max id in the
			// frontier too: the newest's range never widens over ids an
			// older filter may yet hold (I8; TestRemoveRoute).
			lo, hi := atomic.LoadUint64(&mb.line.MinID), atomic.LoadUint64(&mb.line.MaxID)&header.MaxID
			if lo <= hi {
				c.disjoint = c.disjoint && (j == 0 || lo > c.frontier)
			}
			c.frontier = max(c.frontier, hi)
		}
	}
	if old != nil && old.end < c.end && old.end > c.base {
		// The old newest filter is sealed: give back this handle's room
		// reserved on it (see quota.go).
		old.f[len(old.f)-1].releaseQuota()
	}
	f.chain.Store(c)
	return nil
}

// newMember maps the filter d, number seq of the chain, with its
// checksum pages, late-add index and counts page, and readies it for the
// handle's writer; recWords: the file has header.FlagRecordCounts.
func (f *Filter) newMember(seq uint64, d header.FilterDesc, recWords bool) (*member, error) {
	i := d.Slot
	w, err := f.r.Words(d.Offset, d.CounterBytes()/8)
	if err != nil {
		return nil, fmt.Errorf("filter %d: %w", i, err)
	}
	cf, err := counting4.New(w, counting4.Layout(d.LayoutID), d.Counters, d.K)
	if err != nil {
		return nil, &header.CorruptionError{Offset: d.Offset, Filter: i, Field: "filter", Reason: err.Error(), Err: header.ErrCorrupt}
	}
	mb := &member{
		desc: d, cf: cf, idx: i, seq: seq, retired: f.retired, replaced: f.replaced, tk: f.tk,
		line: header.LineAt(f.hot, i), blocked: cf.Layout().BlockWords() != 0,
	}
	if d.HashID == header.HashXXH64Seeded {
		mb.salt = counting4.Salt(i)
	}
	if mb.ps, err = f.mapSums(&d); err != nil {
		return nil, err
	}
	cf.SetPageMap(mb.ps.pages)
	f.w.adopt(f, mb)
	if d.IndexBytes() > 0 {
		if mb.ix, err = f.mapIndex(i, &d); err != nil {
			return nil, err
		}
		mb.ix.ps = &mb.ps
		mb.ix.page0 = uint64(d.IndexOffset()-d.Offset) / header.PageSize
	}
	mb.countsPage = uint64(d.CountsOffset()-d.Offset) / header.PageSize
	if d.HasCounts() {
		mb.recWords = recWords
		if err := f.mapCounts(mb); err != nil {
			return nil, err
		}
	}
	return mb, nil
}

// growWhy says why grow is called.
type growWhy int

const (
	growFinish    growWhy = iota // only finish a growth already in the directory (see publish)
	growFull                     // the newest filter looked full: append one if it still is
	growIndexFull                // a late Add found its probe window in the newest filter's index full
)

// grow appends a filter after the newest one, which the caller saw as full
// (or whose late-add index could not take a late Add) in a chain ending at
// seenEnd (chain.end). Exactly one handle (across processes) appends: the
// others find the new filter already there when they get the lock. With
// growFinish, grow only finishes a growth that is already in the directory
// (see publish).
//
// growIndexFull appends whatever the newest filter's item count: a late
// Add found the header.IndexMaxProbe entries of its probe window taken
// (other pairs' entries: a pair's own copies stop at
// header.IndexSaturated, but for Adds racing each other), and it goes to
// the next filter's index (I9; never a widened range, I8).
func (f *Filter) grow(seenEnd uint64, why growWhy) error {
	unlock, err := f.lockGrowth()
	if err != nil {
		return err
	}
	defer unlock()
	// Under the growth lock nobody else writes the directory.
	m, err := f.readMeta()
	if err != nil {
		return err
	}
	n := len(m.Filters)
	if m.Retired+uint64(n) > seenEnd || why == growFinish {
		// Someone else grew the chain first (or died growing it, maybe
		// between the two metadata copies).
		if err := f.publish(m); err != nil {
			return err
		}
		if err := f.finishMetaWrite(m); err != nil {
			return err
		}
		return f.loadChain(m)
	}
	last := m.Filters[n-1].Slot
	lastLine := header.LineAt(f.hot, last)
	f.reclaimNewest(last)
	if why == growFull && atomic.LoadUint64(&lastLine.MaxID)&header.Sealed == 0 &&
		f.lineItemCount(last)+atomic.LoadUint64(&lastLine.Pending) < m.Filters[n-1].Capacity {
		// Not full after all: the caller's check counted Adds that were
		// turned away, or Removes made room. It routes again.
		return nil
	}
	d, err := f.nextFilter(m, atomic.LoadUint64(&lastLine.MaxID)&header.MaxID+1)
	if err != nil {
		return err
	}
	// The seal that follows (publish) changes the newest filter's line,
	// and the growth writes the directory, a filter line and new blocks:
	// dirty first (I1). (No flush runs meanwhile: one holds the growth
	// lock shared from before it freezes the writers until its checksums
	// are taken, and a growth after that fails its claim of clean.)
	if err := f.ensureDirty(&lastLine.Mark); err != nil {
		return err
	}
	return f.appendFilter(m, &d)
}

// reclaimNewest gives back this handle's reservations on the newest
// filter (directory entry last), which count in its pending word, before
// grow decides it is full: another goroutine of this handle may have
// finished an Add between the caller's reclaim and now, leaving it
// counted in items and in pending at once. (GrowSkipsReclaim keeps them:
// the negative control of TestGrowGivesBackOwnReservations.)
func (f *Filter) reclaimNewest(last int) {
	if c := f.chain.Load(); c != nil && !knob(f.tk).GrowSkipsReclaim {
		if nm := c.f[len(c.f)-1]; nm.idx == last {
			nm.reclaim()
		}
	}
}

// nextFilter describes the filter grow appends to m's chain, its ids
// starting at firstID. In a file with retired filters (FlagRing) it takes
// the lowest free directory entry, which is also its place in the sizing
// schedule, and the first gap large enough.
func (f *Filter) nextFilter(m *header.Meta, firstID uint64) (header.FilterDesc, error) {
	n := len(m.Filters)
	i, ring := n, m.Flags&header.FlagRing != 0
	if ring {
		var err error
		if i, err = f.freeSlot(m); err != nil {
			return header.FilterDesc{}, err
		}
	}
	d, err := describe(&m.Params, i, m.End(), firstID, true, m.Flags&header.FlagPageSums != 0)
	if err != nil {
		if !errors.Is(err, ErrFull) {
			why := err.Error()
			if oe, ok := err.(*OptionError); ok {
				why = oe.Reason
			}
			err = fmt.Errorf("%w: the chain ends at %d filters and the next one cannot be built (%s): "+
				"retire old filters (RetireBefore), compact the file (recover.Compact), or create it with a larger capacity",
				ErrFull, n, why)
		}
		return header.FilterDesc{}, err
	}
	if ring {
		d.Offset = m.Place(d.Length)
	}
	d.Slot = i
	return d, nil
}

// appendFilter appends filter d to m's chain, under the growth lock, the
// file marked dirty: its blocks, the checksums of its zero pages and its
// line, then the directory that names it, then the chain's end.
func (f *Filter) appendFilter(m *header.Meta, d *header.FilterDesc) error {
	i := d.Slot
	// Reserve the blocks first: a full disk fails here, not with a SIGBUS
	// later. The late-add index gets its blocks when it is first used
	// (allocIndex).
	if err := placeFilter(f.r, d); err != nil {
		return fmt.Errorf("growing the file for filter %d: %w", i, err)
	}
	if d.Sums > 0 {
		// The checksums of its zero pages, durable before the directory
		// names the filter: Verify trusts the pages of a filter not
		// marked dirty.
		if err := writeAllSums(f.r, d, true); err != nil {
			return fmt.Errorf("growing the file for filter %d: %w", i, err)
		}
		if err := f.sync(d.Offset+d.CoveredBytes(), d.Sums); err != nil {
			return err
		}
	}
	if d.HasCounts() {
		m.Flags |= header.FlagExtras
	}
	f.initFilterLine(i)
	if err := f.sync(header.FilterLineOffset(i), header.LineSize); err != nil {
		return err
	}
	m.Filters = append(m.Filters, *d)
	if err := f.writeMeta(m); err != nil {
		return err
	}
	if err := f.publish(m); err != nil {
		return err
	}
	return f.loadChain(m)
}

// freeSlot picks the directory entry of a new filter in a file with
// retired filters: the lowest one the chain does not use, once no live
// operation begun on a filter that was retired from it is still in flight,
// and that no dead writer's record names (Repair would apply that record
// to the new filter).
func (f *Filter) freeSlot(m *header.Meta) (int, error) {
	dead, err := f.waitRecords(^m.Slots())
	if err != nil {
		return -1, err
	}
	if s := m.FreeSlot(dead); s >= 0 {
		return s, nil
	}
	return -1, fmt.Errorf("%w: the chain ends at %d filters: every directory entry is in use or named by an interrupted operation", ErrFull, len(m.Filters))
}

// publish makes every filter of the directory m published, called with the
// growth lock held: each filter that has a successor is sealed first (I8),
// and only then is the count stored (I11, docs/PROTOCOLS.md). An Add still
// holding the old chain can then no longer widen its id range and is moved
// to the new filter. A growth whose process died after writing the
// directory is finished here by the next grower or read-write Open.
func (f *Filter) publish(m *header.Meta) error {
	n := len(m.Filters)
	pub := int(min(max(int64(atomic.LoadUint64(f.published))-int64(m.Retired), 0), int64(n)))
	for j := max(pub, 1) - 1; j < n-1; j++ {
		i := m.Filters[j].Slot
		l := header.LineAt(f.hot, i)
		if atomic.LoadUint64(&l.MaxID)&header.Sealed != 0 {
			continue
		}
		// The seal changes the filter's line: dirty first (I1).
		if err := f.ensureDirty(&l.Mark); err != nil {
			return err
		}
		seal(&l.MaxID)
	}
	if pub < n {
		atomic.StoreUint64(f.published, m.Retired+uint64(n))
	}
	return nil
}

// placeFilter makes the blocks of a new filter d ready: zero, and allocated
// but for its late-add index. Where d reuses space a retired filter left,
// that space is discarded first (the old counters must not show through);
// the region grows for the rest.
func placeFilter(r mmapfile.Region, d *header.FilterDesc) error {
	if h, ok := r.(*mmapfile.Heap); ok {
		if d.Offset < h.Size() {
			return h.Replace(d.Offset, d.Length)
		}
		return h.Grow(d.Offset + d.Length)
	}
	size := r.Size()
	if d.Offset < size {
		n := min(d.Offset+d.Length, size) - d.Offset
		if err := mmapfile.Zero(r, d.Offset, n); err != nil {
			return err
		}
		alloc := d.Offset + d.Length
		if d.IndexBytes() > 0 {
			alloc = d.IndexOffset()
		}
		if sp, ok := r.(mmapfile.Sparse); ok {
			if a := min(alloc, size) - d.Offset; a > 0 {
				if err := sp.Allocate(d.Offset, a); err != nil {
					return err
				}
			}
		}
	}
	return growFilter(r, d)
}

// growFilter grows r to the end of filter d, leaving d's late-add index
// unallocated where r can.
func growFilter(r mmapfile.Region, d *header.FilterDesc) error {
	if sp, ok := r.(mmapfile.Sparse); ok && d.IndexBytes() > 0 {
		if err := sp.GrowSparse(d.Offset+d.Length, d.IndexOffset()); err != nil {
			return err
		}
		if d.Sums > 0 {
			// The check pages follow the index and are written at once.
			return sp.Allocate(d.Offset+d.CoveredBytes(), d.Sums)
		}
		return nil
	}
	return r.Grow(d.Offset + d.Length)
}

func seal(maxID *uint64) {
	for {
		v := atomic.LoadUint64(maxID)
		if v&header.Sealed != 0 || atomic.CompareAndSwapUint64(maxID, v, v|header.Sealed) {
			return
		}
	}
}
