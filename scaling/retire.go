// Floor 5 (maintenance) of package scaling: RetireBefore: dropping the
// oldest filters.

package scaling

import (
	"fmt"
	"sync/atomic"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/mmapfile"
	"github.com/dablooms/dablooms/seqnum"
)

// RetireBefore retires, oldest first, every filter whose whole id range
// lies below id, but never the newest filter: lookups stop asking them at
// once, in every process, their disk blocks go back to the file system,
// and their directory entries and space are reused by the filters
// appended next. It returns how many filters it retired (0: none
// qualified).
//
// Keys added with ids inside a retired filter's range are forgotten (that
// is the point: a time window). A key added late (an id below a newer
// filter's range, see Add) lives in that newer filter and is forgotten
// with it. An empty filter counts as lying below any id but 0. A filter
// holding only late Adds reads as empty; its keys' ids lie at or below the
// ranges of the filters before it, so they are below id by the time it is
// reached.
//
// A file with retired filters has version 1.2 (the FlagRing feature
// flag); a library that does not know it refuses the file.
//
// RetireBefore is crash-safe like a growth: it stores the new count of
// retired filters in the hot page before it rewrites the directory, and
// a read-write Open, Repair or the next RetireBefore finishes a
// retirement cut short.
func (f *Filter) RetireBefore(id uint64) (int, error) {
	for {
		f = f.settled()
		n, err := f.retireBefore(id)
		if !f.again(err) {
			return n, err
		}
	}
}

func (f *Filter) retireBefore(id uint64) (int, error) {
	if _, err := f.writableChain(); err != nil {
		return 0, err
	}
	// On an exclusive handle, the hold (I18): no record is in flight under
	// wmu, as the handshake of I2 needs (see exclWriter.claimRecord).
	defer f.w.holdOps(f)()
	g, err := f.enter(0)
	if err != nil {
		return 0, err
	}
	defer g.n.Add(-1)
	if c, err := f.current(); err == nil && !retirable(c, id) && atomic.LoadUint64(f.retired) <= c.dirRetired {
		// Nothing to retire and no retirement to finish: no need for the
		// growth lock, which a window retiring every hour from several
		// processes would otherwise take turns on.
		return 0, nil
	}
	unlock, err := f.lockGrowth()
	if err != nil {
		return 0, err
	}
	defer unlock()
	m, err := f.readMeta()
	if err != nil {
		return 0, err
	}
	// A growth cut short is published first: its filter is the newest.
	if err := f.publish(m); err != nil {
		return 0, err
	}
	n := cutShort(atomic.LoadUint64(f.retired), m)
	for n < len(m.Filters)-1 {
		// The max id alone decides (I13): it is the word the seal guards,
		// widened first. An empty filter's max id is 0.
		hi := atomic.LoadUint64(&header.LineAt(f.hot, m.Filters[n].Slot).MaxID) & header.MaxID
		if hi >= id {
			break
		}
		n++
	}
	if n == 0 {
		return 0, nil
	}
	if err := f.retireFront(m, n); err != nil {
		return 0, err
	}
	return n, nil
}

// cutShort is how many filters of m the hot retired word r retires that
// the directory still lists: a retirement stored in the hot word but not
// in the directory (never the newest filter).
func cutShort(r uint64, m *header.Meta) int {
	if r <= m.Retired {
		return 0
	}
	return int(min(r-m.Retired, uint64(len(m.Filters)-1)))
}

// retirable reports whether the oldest filter of c (not the newest) lies
// wholly below id, as RetireBefore decides under the lock.
func retirable(c *chain, id uint64) bool {
	if len(c.f) < 2 {
		return false
	}
	return atomic.LoadUint64(&c.f[0].line.MaxID)&header.MaxID < id
}

// retireFront retires the first n filters of m, called with the growth
// lock held (I13, docs/PROTOCOLS.md): the hot retired word first (an
// operation on a retired filter then backs out at its gate, I2), then the
// directory, then, once waitRecords finds no live operation in them, the
// blocks.
func (f *Filter) retireFront(m *header.Meta, n int) error {
	newest := m.Filters[len(m.Filters)-1].Slot
	// The hot word and the directory change: dirty first (I1).
	if err := f.ensureDirty(&header.LineAt(f.hot, newest).Mark); err != nil {
		return err
	}
	r := m.Retired + uint64(n)
	for {
		v := atomic.LoadUint64(f.retired)
		if v >= r || atomic.CompareAndSwapUint64(f.retired, v, r) {
			break
		}
	}
	if err := f.sync(header.HotOffset, header.PageSize); err != nil {
		return err
	}
	gone, all := m.Filters[:n:n], m.Slots()
	m.Filters = m.Filters[n:]
	slots := all &^ m.Slots() // the retired filters' entries
	m.Retired = r
	m.Flags |= header.FlagRing
	if err := f.writeMeta(m); err != nil {
		return err
	}
	if err := f.loadChain(m); err != nil {
		return err
	}
	// The blocks go only once no live operation is inside them: a store
	// into a hole would allocate it again (or fault on a full disk). A
	// dead operation never stores again; Repair clears its record.
	if _, err := f.waitRecords(slots); err != nil {
		return nil // retired; the blocks stay until the space is reused
	}
	for _, d := range gone {
		if err := mmapfile.Zero(f.r, d.Offset, d.Length); err != nil {
			return fmt.Errorf("releasing the blocks of retired filter %d: %w", d.Slot, err)
		}
	}
	return nil
}

// settleCutShort keeps a clean file free of a retirement or a metadata
// write cut short: a file marked clean never holds a hot retired word
// ahead of its directory (I13, docs/PROTOCOLS.md), nor two metadata copies
// that list different directories (metaCutShort), so Verify and Open can
// call either damage. flush calls it once BeginFlush froze the writers at
// epoch ep, holding the growth lock shared, the flush lock and mu, before
// it takes the checksums. No retirement or growth is in progress then (one
// holds the growth lock exclusively from its dirty mark to its directory
// write), so a word ahead or copies that differ were left by one whose
// process died (or whose write failed) in between. The flush ends its
// freeze, converts its growth lock to exclusive without waiting (a flusher
// waiting for the flush lock holds it shared), finishes the retirement as
// RetireBefore would (or the growth as grow would), and freezes the
// writers again. If it cannot, it does not mark the file clean: done, and
// the caller returns err with the file synced (the next flush,
// RetireBefore, growth or read-write Open finishes it).
func (f *Filter) settleCutShort(ep uint64, size int64) (done bool, err error) {
	c := f.chain.Load()
	if c == nil {
		return false, nil
	}
	r := atomic.LoadUint64(f.retired)
	retiring := r > c.dirRetired // (the directory's count only grows)
	torn := f.metaCutShort()
	if !retiring && !torn {
		return false, nil
	}
	m, err := f.readMeta()
	if err != nil {
		f.words.AbortFlush(ep)
		return true, err
	}
	// (cutShort 0: the chain was read before the directory changed;
	// FlushSkipsRetirement: the negative control of
	// TestFlushFinishesRetirement.)
	retiring = retiring && cutShort(r, m) != 0 && !knob(f.tk).FlushSkipsRetirement
	if !retiring && !torn {
		return false, nil
	}
	f.words.AbortFlush(ep)
	if f.file != nil && !f.isExclusive() { // (the exclusive writer holds it exclusively already)
		if f.file.Lock(header.GrowthLockOffset, true, 0) != nil {
			return true, f.sync(0, size)
		}
		// Back to shared, as flush holds it until the checksums are taken.
		defer f.file.Lock(header.GrowthLockOffset, false, f.timeout)
	}
	if err := f.publish(m); err != nil {
		return true, err
	}
	if retiring {
		err = f.retireFront(m, cutShort(r, m)) // (writes both copies)
	} else {
		err = f.finishMetaWrite(m)
	}
	if err != nil {
		return true, err
	}
	if again, _, ok := f.words.BeginFlush(); !ok || again != ep {
		if ok {
			f.words.AbortFlush(again)
		}
		return true, f.sync(0, size)
	}
	return false, nil
}

// retiredWhenClean is Open's check of the hot retired word in a file
// marked clean (validateHot): ahead of the directory m it is damage, not a
// retirement cut short (settleCutShort), and must not be made permanent
// or followed (readers would skip every key of the filters it names). A
// file in use is read again: the word and the directory are believed only
// if the state word did not move meanwhile (a retirement marks the file
// dirty before it raises the word, and no flush returns to an epoch).
func (f *Filter) retiredWhenClean(m *header.Meta) error {
	st := atomic.LoadUint64(f.words.State)
	r := atomic.LoadUint64(f.retired)
	if _, ph := seqnum.Unpack(st); ph != seqnum.Clean || r <= m.Retired {
		return nil
	}
	which, gen := f.metaWhich, f.generation
	now, err := f.readMeta()
	f.metaWhich, f.generation = which, gen
	if err != nil || atomic.LoadUint64(f.words.State) != st || r <= now.Retired {
		return nil
	}
	return &header.CorruptionError{Offset: header.RetiredOffset, Filter: -1, Field: "retired",
		Reason: fmt.Sprintf("the file is marked clean, but its hot retired word %d is ahead of the directory's %d retired filters (a flush finishes a retirement cut short before it marks the file clean): readers would skip filters that hold keys; Repair sets the word to %d", r, now.Retired, now.Retired),
		Err:    header.ErrCorrupt}
}
