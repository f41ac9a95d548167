package scaling

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/dablooms/dablooms/header"
)

// The exclusive writer (OpenOptions.Exclusive).
//
// Every modification of a shared handle is a chain of locked instructions:
// a compare-and-swap per counter word, and the bookkeeping that lets other
// goroutines and processes write beside it (guards, the record claim, the
// admission, the item count, the id range); and the swaps need a snapshot
// of the key's whole block, computed before any word changes. Together
// they are most of an Add (docs/PERFORMANCE.md, "Where a single Add and
// Remove go", "Exclusive writer": the snapshot more than the swaps). An
// exclusive handle is the file's only writer while it is open, so none
// of that is needed:
//
//   - Across processes and handles it holds the file as a rewrite does
//     (replace.go): the growth and flush locks, and the replaced word at
//     ReplaceFreezing, having waited for the live writers' operations in
//     flight. Every other writer then waits for it (waitReplace: up to its
//     LockTimeout, then ErrLockTimeout); lookups everywhere go on. Close
//     stores ReplaceNone and releases the locks; if the process dies, the
//     next writer that takes the growth lock thaws the word (thaw), as it
//     does after a rewrite that died.
//   - Inside the process its modifications, Flush and RetireBefore take
//     one mutex (wmu): two locked instructions per operation in place of
//     a dozen or more, and none between the key's prefetch and its
//     counters.
//   - Under wmu the counters are stored, not compared and swapped, one
//     read-modify-write per position (counting4.SetExclusive; a Remove
//     decides before its first store); the record is the handle's first, written
//     with ordered plain stores, as is its op word (the Dekker handshakes
//     it takes part in, with Flush, RetireBefore and Freeze, are with
//     holders of wmu or of the locks this handle holds); admission is a
//     count of the room left in process memory (admitExcl); the item
//     count and the id range are stored.
//
// The record protocol, the dirty-first rule, routing, growth and the
// late-add index are those of every handle, so a kill leaves what Repair
// repairs exactly (TestMPExclusiveKill).
//
// The handle reads its own replaced word (noReplace, always ReplaceNone)
// in place of the file's, which says ReplaceFreezing for everyone else;
// sharedReplaced is the file's.

// exclusiveSkipFreeze makes takeExclusive take no lock and leave the
// replaced word alone, so other writers do not wait: the negative control
// of TestExclusiveHoldsOtherWriters.
var exclusiveSkipFreeze = false

// takeExclusive makes f, opened read-write on a file of flags flags and
// not yet shared, the file's only writer until it is closed.
func (f *Filter) takeExclusive(flags uint64) error {
	switch {
	case f.file == nil && !f.ro:
		// In memory the Filter is its store's only handle.
		f.becomeExclusive(&f.noReplace)
		return nil
	case f.ro:
		return &OptionError{Field: "Exclusive", Value: true, Reason: "needs a read-write handle"}
	case flags&header.FlagLiveReplace == 0:
		// Its other handles would not watch the replaced word.
		return fmt.Errorf("%w: an exclusive handle needs a file of version 1.3 or later (Compact rewrites it so)", ErrNotLive)
	case exclusiveSkipFreeze:
		f.becomeExclusive(f.replaced)
		return nil
	}
	if err := f.file.Lock(header.GrowthLockOffset, true, f.timeout); err != nil {
		if errors.Is(err, ErrLockTimeout) {
			return fmt.Errorf("%w: the growth lock was held for over %v (another exclusive handle, or a rewrite)", ErrBusy, f.timeout)
		}
		return err
	}
	if err := f.file.Lock(header.FlushLockOffset, true, f.timeout); err != nil {
		f.file.Unlock(header.GrowthLockOffset)
		if errors.Is(err, ErrLockTimeout) {
			return fmt.Errorf("%w: the flush lock was held for over %v", ErrBusy, f.timeout)
		}
		return err
	}
	unlock := func() {
		f.file.Unlock(header.FlushLockOffset)
		f.file.Unlock(header.GrowthLockOffset)
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
	atomic.StoreUint64(f.replaced, header.ReplaceFreezing)
	if _, err := f.waitRecords(^uint64(0)); err != nil {
		atomic.StoreUint64(f.replaced, header.ReplaceNone)
		unlock()
		if errors.Is(err, ErrLockTimeout) {
			err = fmt.Errorf("%w: other writers' operations still in flight after %v", ErrBusy, f.timeout)
		}
		return err
	}
	f.becomeExclusive(f.replaced)
	return nil
}

// becomeExclusive switches f, not yet shared, to the exclusive paths;
// shared is the file's replaced word.
func (f *Filter) becomeExclusive(shared *uint64) {
	f.sharedReplaced, f.replaced = shared, &f.noReplace
	f.excl = true
	f.rec[0].excl = true
	if c := f.chain.Load(); c != nil {
		for _, m := range c.f {
			f.makeMemberExclusive(m)
		}
	}
}

// makeMemberExclusive points m at the handle's own replaced word and makes
// its counter updates plain stores.
func (f *Filter) makeMemberExclusive(m *member) {
	m.replaced = f.replaced
	m.excl = true
	m.cf.SetExclusive(true)
}

// endExclusive lets the other writers go on: at Close, once no operation
// of this handle is in flight.
func (f *Filter) endExclusive() {
	if !f.excl || f.file == nil {
		return
	}
	atomic.StoreUint64(f.sharedReplaced, header.ReplaceNone)
	f.file.Unlock(header.FlushLockOffset)
	f.file.Unlock(header.GrowthLockOffset)
}

// admitExcl is admit for an exclusive handle: nobody else adds, so the
// room left under limit is counted (items and the pending reservations
// other handles left) when it is first needed, and again when it runs out
// (Removes since may have made room), and in process memory in between.
func (m *member) admitExcl(limit uint64) bool {
	if m.gone() {
		return false
	}
	if m.roomLimit != limit || m.room == 0 {
		m.room = limit - min(limit, m.itemCount()+atomic.LoadUint64(m.pend))
		m.roomLimit = limit
		if m.room == 0 {
			return false
		}
	}
	m.room--
	return true
}
