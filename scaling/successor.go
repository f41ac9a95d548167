// Floor 3 (the file's coordination) of package scaling: following the file
// that replaced a handle's, and thawing a dead freeze.

package scaling

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
)

// errRetry: the file was replaced (or a rewrite that froze it gave up):
// the operation starts over on f.live(). It never leaves the package.
var errRetry = errors.New("dablooms: file replaced; operation starts over")

// successor is how a handle moves to the file that replaced its own
// (move): where and how to open it, and the handle on it once opened.
type successor struct {
	path   string      // "" in memory, or for a file opened without a path
	reopen OpenOptions // the options the successor is opened with
	next   atomic.Pointer[Filter]

	mu         sync.Mutex // next's Store, userClosed, err, tried
	userClosed bool       // Close was called: move opens nothing more
	err        error      // why the last try to open it failed,
	tried      time.Time  // and when (moveRetryDelay)
}

// moveRetryDelay is how long a handle that failed to open its file's
// successor returns the same error before it tries again.
const moveRetryDelay = 50 * time.Millisecond

// live returns the Filter that f's calls go to: f, or the handle on the
// file that replaced f's (and so on).
func (f *Filter) live() *Filter {
	n := f.succ.next.Load()
	if n == nil {
		return f
	}
	for {
		nn := n.succ.next.Load()
		if nn == nil {
			break
		}
		n = nn
	}
	f.succ.next.Store(n) // shortcut for the next call (any successor forwards correctly)
	return n
}

// again reports whether an operation on f that failed with err starts over
// on f.live(): f's file was replaced, or f was closed because it was.
func (f *Filter) again(err error) bool {
	if err == nil {
		return false
	}
	return errors.Is(err, errRetry) || (errors.Is(err, ErrClosed) && f.succ.next.Load() != nil)
}

// settled returns f.live(), having first moved it if its file has been
// replaced (for the calls that do not read the chain: Stats, Flush, …).
func (f *Filter) settled() *Filter {
	for {
		f = f.live()
		if f.replaced == nil || atomic.LoadUint64(f.replaced) != header.ReplaceDone {
			return f
		}
		if err := f.move(); !errors.Is(err, errRetry) {
			return f // stays; the call itself reports what is wrong
		}
	}
}

// waitReplace is what a writer does that found the replaced word set: it
// waits while a rewrite holds the file frozen, then returns errRetry (the
// operation starts over, on this file if the rewrite gave up, on its
// successor if it finished), or an error if the freeze outlasts the lock
// timeout.
func (f *Filter) waitReplace() error {
	deadline := time.Now().Add(f.timeout)
	delay := 20 * time.Microsecond
	for {
		switch atomic.LoadUint64(f.replaced) {
		case header.ReplaceNone:
			return errRetry
		case header.ReplaceFreezing:
			if f.thawIfDead() {
				continue
			}
		default:
			return f.move()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s is held by a whole-file rewrite or an exclusive writer (for over %v)", ErrLockTimeout, f.succ.path, f.timeout)
		}
		time.Sleep(delay)
		delay = min(2*delay, time.Millisecond)
	}
}

// move opens the file now at f's path and makes it f's successor. It
// returns errRetry when the caller should start over on f.live(), or why
// the successor could not be opened (retried after moveRetryDelay).
func (f *Filter) move() error {
	f.succ.mu.Lock()
	defer f.succ.mu.Unlock()
	switch {
	case f.succ.next.Load() != nil:
		return errRetry
	case f.succ.userClosed:
		return ErrClosed
	case f.succ.path == "" && f.file != nil:
		// Still being opened (Open sets the path last): Open opens the
		// path again.
		return errRetry
	case f.succ.path == "":
		return &header.CorruptionError{Offset: header.ReplacedOffset, Filter: -1, Field: "replaced",
			Reason: "a store in memory is marked replaced", Err: header.ErrCorrupt}
	case f.succ.err != nil && time.Since(f.succ.tried) < moveRetryDelay:
		return f.succ.err
	}
	o := f.succ.reopen
	o.ReadOnly = f.ro
	// A handle goes on with its file when a writer dies beside it; it goes
	// on with the file that replaced it alike: a writer that died on the
	// new file (before this handle moved) does not stop it.
	o.AllowUnclean = true
	nf, err := Open(f.succ.path, &o)
	if err != nil {
		f.succ.err, f.succ.tried = fmt.Errorf("%w: %s: opening its successor: %w", ErrReplaced, f.succ.path, err), time.Now()
		return f.succ.err
	}
	f.succ.next.Store(nf)
	// The old file's slot, mapping and descriptor go once the calls in
	// flight on f have returned (they start over on nf).
	go f.closeOnce.Do(f.shutdown)
	return errRetry
}

// thawIfDead clears a ReplaceFreezing left by a rewrite whose process died
// (see thaw); it reports whether the word may have changed.
func (f *Filter) thawIfDead() bool {
	if f.file == nil {
		return false
	}
	if held, err := f.file.Held(header.GrowthLockOffset); err != nil || held {
		return false
	}
	f.growMu.Lock() // (lock order: see lockGrowth)
	defer f.growMu.Unlock()
	if f.file.Lock(header.GrowthLockOffset, true, 0) != nil {
		return false
	}
	defer f.file.Unlock(header.GrowthLockOffset)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.thaw()
	return true
}

// thaw, under the growth lock, clears a ReplaceFreezing: a live rewrite
// holds the growth lock from the store to Done or Abort, so whoever holds
// it and still finds the word so found a rewrite that died. Its new file
// may already be at the path: then the word becomes ReplaceDone (and the
// handles move to it), else ReplaceNone.
func (f *Filter) thaw() {
	if f.file == nil || atomic.LoadUint64(f.replaced) != header.ReplaceFreezing {
		return
	}
	if !f.undoDead() {
		return // (writers go on waiting: see undoDead)
	}
	next := uint64(header.ReplaceNone)
	if same, err := f.file.SamePath(); err != nil || !same {
		next = header.ReplaceDone
	}
	atomic.CompareAndSwapUint64(f.replaced, header.ReplaceFreezing, next)
}

// undoDead undoes the block change a dead exclusive writer left armed in
// the undo block (header/undo.go): it stores the saved words back over the
// block and marks its page changed, then disarms the block. Every holder
// of the growth lock that lets other writers go on calls it first (thaw;
// freezeOnce, before a rewrite reads the file or its Abort lets the
// writers go on): no other writer has written since that writer died (its
// freeze held them), so the block is then exactly as before the
// operation, whose record says that nothing changed; Repair ends the rest
// of it. A death in the middle leaves the block armed for the next holder,
// which stores the same words. It needs only the hot page and the
// directory (a Frozen handle has no chain). A block of a filter retired
// since is only disarmed. It reports false, having changed nothing, if it
// cannot: the directory cannot be read, or the block names words outside
// its filter or an owner that is no writer slot (a damaged undo block);
// the file then stays frozen for writers (ErrBusy), and Repair ends it.
// Undoing also zeroes the changed mask of the owner's record 0, which the
// writer stores just before it disarms.
func (f *Filter) undoDead() bool {
	u := header.UndoAt(f.hot)
	b := atomic.LoadUint64(&u.Block)
	if b == 0 {
		return true
	}
	m, _, err := f.readDirectory(0)
	if err != nil {
		return false
	}
	entry, first := int(b>>header.UndoEntryShift), b&(1<<header.UndoEntryShift-1)-1
	owner := atomic.LoadUint64(&u.Owner)
	if owner == 0 || owner > header.NumSlots {
		return false
	}
	var d *header.FilterDesc
	for i := range m.Filters {
		if m.Filters[i].Slot == entry {
			d = &m.Filters[i]
		}
	}
	if d != nil {
		n := uint64(counting4.Layout(d.LayoutID).BlockWords())
		if n == 0 || n > header.UndoSavedWords || first%n != 0 || (first+n)*8 > uint64(d.CounterBytes()) {
			return false
		}
		words, err := f.r.Words(d.Offset+int64(first)*8, int64(n))
		if err != nil {
			return false
		}
		for i := range words {
			atomic.StoreUint64(&words[i], atomic.LoadUint64(&u.Saved[i]))
		}
		if ps, err := f.mapSums(d); err == nil {
			ps.mark(first * 8 / header.PageSize)
		}
	}
	// The writer may have set its record's changed mask just before it
	// died (the mask is stored before the block is disarmed): with the
	// block as before, nothing changed.
	atomic.StoreUint64(&header.RecordAt(f.hot, int(owner-1), 0).Changed, 0)
	atomic.StoreUint64(&u.Block, 0)
	atomic.StoreUint64(&u.Owner, 0)
	return true
}
