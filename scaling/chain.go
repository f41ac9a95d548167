package scaling

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/mmapfile"
)

// chain is an immutable snapshot of the filters; a growth publishes a new one.
type chain struct {
	f         []*member
	hasMurmur bool     // some filter uses the original's hash
	frontier  uint64   // the largest id of the sealed filters' ranges (see route)
	anySealed bool     // some sealed filter has a non-empty range
	keep      *mapKeep // keeps the mapping while the chain is in use
}

type member struct {
	desc  header.FilterDesc
	cf    *counting4.Filter
	idx   int
	salt  uint64 // added to the native hash (0 for the original's hash)
	items *uint64
	pend  *uint64 // Adds admitted and not yet counted in items (see admit)
	mark  *uint64
	minID *uint64
	maxID *uint64
	ix    lateIndex // empty for a filter without one
	quota [quotaShards]quotaShard

	// Per-writer item counts (header/counts.go); counts is nil for a filter
	// without them, which counts in items alone.
	counts    []uint64 // the counts page: slot s's count is counts[s*countStride]
	own       *uint64  // this handle's count (nil: read-only)
	ownSlot   int
	writers   *uint64 // the line's writers word
	ownMarked atomic.Bool
}

func (f *Filter) loadChain(m *header.Meta) error {
	old := f.chain.Load()
	c := &chain{}
	if old != nil {
		c.keep = old.keep
	} else {
		c.keep = &mapKeep{r: f.r}
	}
	for i, d := range m.Filters {
		if old != nil && i < len(old.f) {
			c.f = append(c.f, old.f[i])
			continue
		}
		w, err := f.r.Words(d.Offset, d.CounterBytes()/8)
		if err != nil {
			return fmt.Errorf("filter %d: %w", i, err)
		}
		cf, err := counting4.New(w, counting4.Layout(d.LayoutID), d.Counters, d.K)
		if err != nil {
			return &header.CorruptionError{Offset: d.Offset, Filter: i, Field: "filter", Reason: err.Error(), Err: header.ErrCorrupt}
		}
		mb := &member{
			desc: d, cf: cf, idx: i,
			items: f.filterWord(i, header.FilterItemsOffset), pend: f.filterWord(i, header.FilterPendingOffset),
			mark:  f.filterWord(i, header.FilterMarkOffset),
			minID: f.filterWord(i, header.FilterMinIDOffset), maxID: f.filterWord(i, header.FilterMaxIDOffset),
		}
		if d.HashID == header.HashXXH64Seeded {
			mb.salt = counting4.Salt(i)
		}
		if d.IndexBytes() > 0 {
			if mb.ix, err = f.mapIndex(i, &d); err != nil {
				return err
			}
		}
		if d.HasCounts() {
			if err := f.mapCounts(mb); err != nil {
				return err
			}
		}
		c.f = append(c.f, mb)
	}
	for j, mb := range c.f {
		c.hasMurmur = c.hasMurmur || mb.desc.HashID == header.HashMurmur3Orig
		if j < len(c.f)-1 {
			// Sealed before the chain that follows it was published: the
			// range no longer changes.
			lo, hi := atomic.LoadUint64(mb.minID), atomic.LoadUint64(mb.maxID)&header.MaxID
			if lo <= hi {
				c.frontier = max(c.frontier, hi)
				c.anySealed = true
			}
		}
	}
	if old != nil && len(old.f) < len(c.f) {
		// The old newest filter is sealed: give back this handle's room
		// reserved on it (see quota.go).
		old.f[len(old.f)-1].releaseQuota()
	}
	f.chain.Store(c)
	return nil
}

// current returns the chain, first picking up filters another handle or
// process has published since.
func (f *Filter) current() (*chain, error) {
	c := f.chain.Load()
	if c == nil {
		return nil, ErrClosed
	}
	if atomic.LoadUint64(f.published) > uint64(len(c.f)) {
		if err := f.refresh(); err != nil {
			return nil, err
		}
		c = f.chain.Load()
	}
	return c, nil
}

func (f *Filter) refresh() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.chain.Load()
	if c == nil {
		return ErrClosed
	}
	if atomic.LoadUint64(f.published) <= uint64(len(c.f)) {
		return nil
	}
	m, _, err := f.readPublished()
	if err != nil {
		return err
	}
	if len(m.Filters) <= len(c.f) {
		return nil
	}
	return f.loadChain(m)
}

// grow appends a filter after the newest one, which the caller saw as full
// in a chain of seen filters. Exactly one handle (across processes) appends:
// the others find the new filter already there when they get the lock. With
// append false, grow only finishes a growth that is already in the
// directory (see publish).
func (f *Filter) grow(seen int, appendOne bool) error {
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
	if len(m.Filters) > seen || !appendOne {
		// Someone else grew the chain first (or died growing it).
		if err := f.publish(m); err != nil {
			return err
		}
		return f.loadChain(m)
	}
	i := len(m.Filters)
	newest := f.filterWord(i-1, header.FilterMaxIDOffset)
	if atomic.LoadUint64(newest)&header.Sealed == 0 &&
		f.itemCount(i-1)+atomic.LoadUint64(f.filterWord(i-1, header.FilterPendingOffset)) < m.Filters[i-1].Capacity {
		// Not full after all: the caller's check counted Adds that were
		// turned away, or Removes made room. It routes again.
		return nil
	}
	d, err := describe(&m.Params, i, m.End(), atomic.LoadUint64(newest)&header.MaxID+1)
	if err != nil {
		if !errors.Is(err, ErrFull) {
			err = fmt.Errorf("%w: the chain ends at %d filters: %v", ErrFull, i, err)
		}
		return err
	}
	// The seal below changes the newest filter's line, and the growth
	// writes the directory, a filter line and new blocks: mark the file
	// dirty first, so a file that reads clean was not grown since its flush
	// (but see docs/FORMAT.md: a flush may still land during the growth).
	if err := f.ensureDirty(f.filterWord(i-1, header.FilterMarkOffset)); err != nil {
		return err
	}
	// Reserve the blocks first: a full disk fails here, not with a SIGBUS
	// later. The late-add index gets its blocks when it is first used
	// (allocIndex).
	if err := growFilter(f.r, &d); err != nil {
		return fmt.Errorf("growing the file for filter %d: %w", i, err)
	}
	if d.Extra > 0 {
		m.Flags |= header.FlagExtras
	}
	f.initFilterLine(i)
	if err := f.sync(header.FilterLineOffset(i), header.LineSize); err != nil {
		return err
	}
	m.Filters = append(m.Filters, d)
	if err := f.writeMeta(m); err != nil {
		return err
	}
	if err := f.publish(m); err != nil {
		return err
	}
	return f.loadChain(m)
}

// publish makes every filter of the directory m published, called with the
// growth lock held. Each filter that has a successor is sealed first: an
// Add still holding the old chain can no longer widen its id range and is
// moved to the new filter, so a new filter's ids lie above every id already
// routed to an older one. Only then is the count stored, so no handle
// routes an Add to a filter before the one it follows is sealed. A growth
// whose process died after writing the directory is finished here by the
// next grower or read-write Open.
func (f *Filter) publish(m *header.Meta) error {
	n := len(m.Filters)
	pub := int(min(atomic.LoadUint64(f.published), uint64(n)))
	for i := max(pub, 1) - 1; i < n-1; i++ {
		maxID := f.filterWord(i, header.FilterMaxIDOffset)
		if atomic.LoadUint64(maxID)&header.Sealed != 0 {
			continue
		}
		// The seal changes the filter's line: mark it dirty first, so a
		// clean claim never covers it.
		if err := f.ensureDirty(f.filterWord(i, header.FilterMarkOffset)); err != nil {
			return err
		}
		seal(maxID)
	}
	if pub < n {
		atomic.StoreUint64(f.published, uint64(n))
	}
	return nil
}

// lockGrowth takes the handle's mutex and the file's growth lock (held by
// whoever changes the directory or a filter's allocation), and returns the
// function that releases both.
func (f *Filter) lockGrowth() (unlock func(), err error) {
	f.mu.Lock()
	if f.file != nil {
		if err := f.file.Lock(header.GrowthLockOffset, true, f.timeout); err != nil {
			f.mu.Unlock()
			return nil, fmt.Errorf("growth lock: %w", err)
		}
	}
	return func() {
		if f.file != nil {
			f.file.Unlock(header.GrowthLockOffset)
		}
		f.mu.Unlock()
	}, nil
}

// growFilter grows r to the end of filter d, leaving d's late-add index
// unallocated where r can.
func growFilter(r mmapfile.Region, d *header.FilterDesc) error {
	if sp, ok := r.(mmapfile.Sparse); ok && d.IndexBytes() > 0 {
		return sp.GrowSparse(d.Offset+d.Length, d.IndexOffset())
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
