// Floor 4 (operations) of package scaling: the exclusive writer: one writer
// for the file, and its strategy.

package scaling

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
)

// The exclusive writer (OpenOptions.Exclusive); its rules are I18 of
// docs/PROTOCOLS.md.
//
// Every modification of a shared handle is a chain of locked instructions:
// a compare-and-swap per counter word, and the bookkeeping that lets other
// goroutines and processes write beside it (guards, the record claim, the
// admission, the item count, the id range); and the swaps need a snapshot
// of the key's whole block, computed before any word changes. Together
// they are most of an Add (docs/PERFORMANCE.md, "Where a single Add and
// Remove go", and "Tried, did not help", computeBlock: the snapshot more
// than the swaps). An
// exclusive handle is the file's only writer while it is open, so none
// of that is needed:
//
//   - Across processes and handles it holds the freeze of a rewrite (I14,
//     stop.go) from Open to Close: every other writer waits (waitReplace),
//     lookups everywhere go on, and if the process dies the next holder of
//     the growth lock thaws the word (thaw).
//   - Inside the process its modifications, Flush and RetireBefore take
//     one mutex (wmu, the hold): two locked instructions per operation in
//     place of a dozen or more, and none between the key's prefetch and
//     its counters.
//   - Under wmu the counters are stored, not compared and swapped: in a
//     file with the undo block (format 1.5, header/undo.go) a key's block
//     at a time, saved in the undo block first (counting4.SetUndo), else
//     one read-modify-write per position (counting4's AddExcl); a
//     Remove decides before its first store. The record is the handle's first,
//     written with ordered stores (StoreOrdered), as is its op word (the handshakes
//     of I2 it takes part in are with holders of wmu or of the locks this
//     handle holds); admission is a count of the room left in process
//     memory (exclWriter.admit); the item count and the id range are
//     stored.
//
// These are the methods of exclWriter, the handle's writer (writer.go
// sets them beside the shared ones). Its records, dirty-first, routing,
// growth and late-add index are every handle's, so a kill leaves what
// Repair repairs exactly (I18, TestMPExclusiveKill).
//
// The handle reads its own replaced word (exclWriter.noReplace, always
// ReplaceNone) in place of the file's, which says ReplaceFreezing for
// everyone else; exclWriter.sharedReplaced is the file's.

// takeExclusive makes f, opened read-write on a file of flags flags and
// not yet shared, the file's only writer until it is closed.
func (f *Filter) takeExclusive(flags uint64) error {
	switch {
	case f.file == nil && !f.ro:
		// In memory the Filter is its store's only handle.
		f.becomeExclusive(nil, flags)
		return nil
	case f.ro:
		return &OptionError{Field: "Exclusive", Value: true, Reason: "needs a read-write handle"}
	case flags&header.FlagLiveReplace == 0:
		// Its other handles would not watch the replaced word.
		return fmt.Errorf("%w: an exclusive handle needs a file of version 1.3 or later (Compact rewrites it so)", ErrNotLive)
	case knob(f.tk).ExclusiveSkipFreeze:
		// No lock, the replaced word left alone: other writers do not
		// wait (the negative control of TestExclusiveHoldsOtherWriters).
		f.becomeExclusive(f.replaced, flags)
		return nil
	}
	unlock, held, err := lockFreeze(f.file, f.timeout)
	switch {
	case err == nil:
	case errors.Is(err, ErrLockTimeout) && held == "growth":
		return fmt.Errorf("%w: the growth lock was held for over %v (another exclusive handle, or a rewrite)", ErrBusy, f.timeout)
	case errors.Is(err, ErrLockTimeout):
		return fmt.Errorf("%w: the %s lock was held for over %v", ErrBusy, held, f.timeout)
	default:
		return err
	}
	// Holding the growth lock, a ReplaceFreezing was left by a holder that
	// died; a ReplaceDone, or another file at the path, means this one was
	// replaced: Open opens the path again.
	f.thaw()
	if same, err := f.file.SamePath(); err != nil || !same || atomic.LoadUint64(f.replaced) != header.ReplaceNone {
		unlock()
		if err == nil {
			err = errRetry
		}
		return err
	}
	if err := f.freeze(); err != nil {
		unlock()
		if errors.Is(err, ErrLockTimeout) {
			err = fmt.Errorf("%w: other writers' operations still in flight after %v", ErrBusy, f.timeout)
		}
		return err
	}
	f.becomeExclusive(f.replaced, flags)
	return nil
}

// becomeExclusive makes f, not yet shared, the exclusive writer (w) of a
// file of flags flags; shared is the file's replaced word (nil in memory,
// where the handle's own is the store's). In a file with
// header.FlagUndoBlock it takes the undo block (header/undo.go), left
// disarmed by thaw if its last owner died.
func (f *Filter) becomeExclusive(shared *uint64, flags uint64) {
	w := &exclWriter{sharedReplaced: shared}
	if shared == nil {
		w.sharedReplaced = &w.noReplace
	}
	f.replaced = &w.noReplace
	if u := header.UndoAt(f.hot); flags&header.FlagUndoBlock != 0 && atomic.LoadUint64(&u.Block) == 0 {
		counting4.StoreOrdered(&u.Owner, uint64(f.slot)+1)
		w.undo = &counting4.Undo{Block: &u.Block, Saved: &u.Saved}
	}
	f.setWriter(w)
	if c := f.chain.Load(); c != nil {
		for _, m := range c.f {
			f.w.adopt(f, m)
		}
	}
}

// isExclusive reports whether f is the exclusive writer, whatever wraps
// its writer (setWriter).
func (f *Filter) isExclusive() bool {
	w := f.w
	if h, ok := w.(routeHookWriter); ok {
		w = h.writer
	}
	_, ok := w.(*exclWriter)
	return ok
}

// exclWriter is the writer of an exclusive handle (see writer.go) and the
// state only it has. Lock order: mu (the hold) before the Filter's mu.
type exclWriter struct {
	// noReplace is the replaced word the handle reads (Filter.replaced),
	// always ReplaceNone; sharedReplaced is the file's, which says
	// ReplaceFreezing while the handle holds the freeze. noReplace is
	// first: a 32-bit platform 64-bit-aligns only an allocated struct's
	// first word, and it is read with 64-bit atomics.
	noReplace      uint64
	sharedReplaced *uint64
	// wmu is the hold: one modification at a time, and Flush and
	// RetireBefore (holdOps); shutdown takes it after it sets closed.
	wmu sync.Mutex
	// undo is the handle's undo block (nil: none; counting4.SetUndo).
	undo *counting4.Undo
	// sweepBuf is the sort buffer of swept batches (sweep.go; under wmu),
	// kept between batches up to sweepKeep words.
	sweepBuf []uint64
}

// adopt points m at the handle's own replaced word and gives its filter
// the undo block (its counter updates are stores: addCounters).
func (w *exclWriter) adopt(f *Filter, m *member) {
	m.replaced = f.replaced
	m.cf.SetUndo(w.undo, m.idx)
}

// startOp takes wmu: one modification at a time; shutdown takes wmu after
// it sets closed.
func (w *exclWriter) startOp(f *Filter, _ uint64) (*guard, error) {
	w.wmu.Lock()
	if f.closed.Load() {
		w.wmu.Unlock()
		return nil, ErrClosed
	}
	return nil, nil
}

func (w *exclWriter) endOp(f *Filter, _ *guard) { w.wmu.Unlock() }

// holdOps takes wmu: no modification of the handle is in flight, or
// starts, until unlock.
func (w *exclWriter) holdOps(f *Filter) (unlock func()) {
	w.wmu.Lock()
	return w.wmu.Unlock
}

// lockFlush takes wmu: no record of the handle is in flight while it
// holds it, and it holds the file's flush and growth locks already (its
// own growths and retirements wait for wmu).
func (w *exclWriter) lockFlush(f *Filter) (unlockGrowth, unlock func(), err error) {
	return func() {}, w.holdOps(f), nil
}

// lockGrowth takes mu only: the handle holds the file's growth lock from
// Open to Close.
func (w *exclWriter) lockGrowth(f *Filter) (unlock func(), err error) {
	f.mu.Lock()
	return f.mu.Unlock, nil
}

// closeWriter lets the other writers go on: at Close, once no operation
// of this handle is in flight.
func (w *exclWriter) closeWriter(f *Filter) {
	if w.undo != nil {
		// A file its exclusive writer closed has a zero undo block (Verify
		// notes one a writer left, and Repair zeroes it).
		u := header.UndoAt(f.hot)
		for i := range u.Saved {
			atomic.StoreUint64(&u.Saved[i], 0)
		}
		counting4.StoreOrdered(&u.Owner, 0)
	}
	if f.file == nil {
		return
	}
	atomic.StoreUint64(w.sharedReplaced, header.ReplaceNone)
	f.file.Unlock(header.FlushLockOffset)
	f.file.Unlock(header.GrowthLockOffset)
}

// admit: nobody else adds, so the room left under limit is counted (items
// and the pending reservations other handles left) when it is first
// needed, and again when it runs out (Removes since may have made room),
// and in process memory in between.
func (w *exclWriter) admit(m *member, limit uint64) bool {
	if m.gone() {
		return false
	}
	if m.roomLimit != limit || m.room == 0 {
		m.room = limit - min(limit, m.itemCount()+atomic.LoadUint64(&m.line.Pending))
		m.roomLimit = limit
		if m.room == 0 {
			return false
		}
	}
	m.room--
	return true
}

// sweepRoom: the room left under limit, all of it the handle's, which a
// swept batch uses up without admit (sweep.go); the next admit counts it
// again.
func (w *exclWriter) sweepRoom(m *member, limit uint64) (uint64, bool) {
	m.room = 0
	if m.gone() {
		return 0, true
	}
	return limit - min(limit, m.itemCount()+atomic.LoadUint64(&m.line.Pending)), true
}

// addCounters and removeCounters store the counters' new values: nobody
// else writes them (counting4's AddExcl, RemoveExcl).
func (w *exclWriter) addCounters(m *member, pr counting4.Probe, r *record) {
	rec := r.counters()
	m.cf.AddExcl(pr, &rec)
}

func (w *exclWriter) removeCounters(m *member, pr counting4.Probe, r *record) bool {
	rec := r.counters()
	return m.cf.RemoveExcl(pr, &rec)
}

// sweepBuffer is the sort buffer of the handle's swept batches.
func (w *exclWriter) sweepBuffer() *[]uint64 { return &w.sweepBuf }

// admitChunked is admit: nothing is reserved in the pending word.
func (w *exclWriter) admitChunked(m *member, limit, _ uint64) (*quotaShard, bool) {
	return nil, w.admit(m, limit)
}

func (w *exclWriter) release(*member, *quotaShard) {} // admit reserves nothing

// widen: nobody else widens or seals the range: one read of each word.
func (w *exclWriter) widen(m *member, id uint64) bool {
	v, lo := atomic.LoadUint64(&m.line.MaxID), atomic.LoadUint64(&m.line.MinID)
	hi := v & header.MaxID
	switch {
	case id >= lo && id <= hi:
		return true
	case v&header.Sealed != 0:
		return false
	case id > hi:
		counting4.StoreOrdered(&m.line.MaxID, id)
	}
	if id < lo {
		counting4.StoreOrdered(&m.line.MinID, id)
	}
	return true
}

// count: nobody else writes the handle's count (nor, with no counts page,
// the items word): no read-modify-write needed, once the handle's bit is
// in the writers word. r is record 0, whose word of the count line is the
// first (header.CountWord), the one this writes with or without
// header.FlagRecordCounts.
func (w *exclWriter) count(m *member, r *record, d int64) {
	if m.own != nil && !m.ownMarked.Load() {
		sharedWriter{}.count(m, r, d)
		return
	}
	p := m.own
	if p == nil {
		counting4.StoreOrdered(&m.line.Items, atomic.LoadUint64(&m.line.Items)+uint64(d))
		return
	}
	counting4.StoreOrdered(p, atomic.LoadUint64(p)+uint64(d))
	m.ps.mark(m.countsPage)
}

// uncount is sharedWriter.uncount with count's stores.
func (w *exclWriter) uncount(m *member, r *record, changed bool) {
	if m.own == nil {
		if v := atomic.LoadUint64(&m.line.Items); int64(v) > 0 {
			counting4.StoreOrdered(&m.line.Items, v-1)
		}
		return
	}
	if !changed && m.itemCount() == 0 {
		return
	}
	w.count(m, r, -1)
}

// claimRecord takes record 0, under wmu. Ordered stores suffice:
// every handshake of I2 its op word takes part in is with a holder of wmu
// (the hold) or of this handle's file locks (the freeze), I18.
func (w *exclWriter) claimRecord(f *Filter, h uint64, op uint64, m *member) *record {
	r := &f.rec[0]
	counting4.StoreOrdered2(&r.rec.Hash, h, &r.rec.Op, uint64(header.OpWord(atomic.LoadUint64(&r.rec.Op)).Begin(op, m.idx)))
	return r
}

// finish completes the operation; record 0 stays the handle's.
func (w *exclWriter) finish(r *record, completed bool) { r.end(completed) }
