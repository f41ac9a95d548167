package scaling

import (
	"fmt"
	"sync/atomic"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
)

// chain is an immutable snapshot of the filters; a growth publishes a new one.
type chain struct {
	f         []*member
	hasMurmur bool     // some filter uses the original's hash
	keep      *mapKeep // keeps the mapping while the chain is in use
}

type member struct {
	desc  header.FilterDesc
	cf    *counting4.Filter
	idx   int
	salt  uint64 // added to the native hash (0 for the original's hash)
	items *uint64
	mark  *uint64
	minID *uint64
	maxID *uint64
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
		w, err := f.r.Words(d.Offset, d.Length/8)
		if err != nil {
			return fmt.Errorf("filter %d: %w", i, err)
		}
		cf, err := counting4.New(w, counting4.Layout(d.LayoutID), d.Counters, d.K)
		if err != nil {
			return &header.CorruptionError{Offset: d.Offset, Filter: i, Field: "filter", Reason: err.Error(), Err: header.ErrCorrupt}
		}
		mb := &member{
			desc: d, cf: cf, idx: i,
			items: f.filterWord(i, header.FilterItemsOff), mark: f.filterWord(i, header.FilterMarkOff),
			minID: f.filterWord(i, header.FilterMinIDOff), maxID: f.filterWord(i, header.FilterMaxIDOff),
		}
		if d.HashID == header.HashXXH64Seeded {
			mb.salt = counting4.Salt(i)
		}
		c.f = append(c.f, mb)
	}
	for _, mb := range c.f {
		c.hasMurmur = c.hasMurmur || mb.desc.HashID == header.HashMurmur3Orig
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
	m, err := f.readMeta()
	if err != nil {
		return err
	}
	return f.loadChain(m)
}

// grow appends a filter after the newest one, which the caller saw as full.
// Exactly one handle (across processes) appends: the others find the new
// filter already there when they get the lock.
func (f *Filter) grow(seen int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.file != nil {
		if err := f.file.Lock(header.MetaAOffset, true, f.timeout); err != nil {
			return fmt.Errorf("growth lock: %w", err)
		}
		defer f.file.Unlock(header.MetaAOffset)
	}
	m, err := f.readMeta()
	if err != nil {
		return err
	}
	if len(m.Filters) > seen {
		// Someone else grew the chain first.
		atomic.StoreUint64(f.published, uint64(len(m.Filters)))
		return f.loadChain(m)
	}
	last := m.Filters[len(m.Filters)-1]
	d, err := describe(&m.Params, len(m.Filters), last.Offset+last.Length, atomic.LoadUint64(f.filterWord(len(m.Filters)-1, header.FilterMaxIDOff))&header.MaxID+1)
	if err != nil {
		return err
	}
	// Reserve the blocks first: a full disk fails here, not with a SIGBUS later.
	if err := f.r.Grow(d.Offset + d.Length); err != nil {
		return fmt.Errorf("growing the file for filter %d: %w", len(m.Filters), err)
	}
	i := len(m.Filters)
	f.initFilterLine(i)
	if err := f.sync(header.FilterLineOffset(i), header.LineSize); err != nil {
		return err
	}
	m.Filters = append(m.Filters, d)
	if err := f.writeMeta(m); err != nil {
		return err
	}
	// Seal the previous newest filter's id range: an Add still holding the
	// old chain can no longer widen it and is moved to the new filter, so a
	// new filter's ids lie above every id already routed to the older one.
	// The seal changes the previous filter's line: mark it dirty first, so a
	// clean claim never covers it.
	if prev := f.chain.Load(); i-1 < len(prev.f) {
		if err := f.ensureDirty(prev.f[i-1]); err != nil {
			return err
		}
	}
	seal(f.filterWord(i-1, header.FilterMaxIDOff))
	atomic.StoreUint64(f.published, uint64(len(m.Filters)))
	return f.loadChain(m)
}

func seal(maxID *uint64) {
	for {
		v := atomic.LoadUint64(maxID)
		if v&header.Sealed != 0 || atomic.CompareAndSwapUint64(maxID, v, v|header.Sealed) {
			return
		}
	}
}
