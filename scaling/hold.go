// Floor 0 (words) of package scaling: the exclusive writer's hold, a
// mutex whose release is a plain store.

package scaling

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/dablooms/dablooms/counting4"
)

// hold is the exclusive writer's mutex (exclWriter.wmu): one modification
// of the handle at a time. Uncontended, it is taken with one
// compare-and-swap and released with an ordered store
// (counting4.StoreOrdered: a MOV on amd64, STLR on arm64), where
// sync.Mutex's Unlock is a locked add. A locked instruction drains the
// store buffer and holds up every later load until it is done; at the end
// of a single Add or Remove it kept the next operation's hash and
// prefetch from starting under this one's stores (docs/PERFORMANCE.md,
// "What each lever gained").
//
// A plain store cannot see a waiter, so a waiter must never sleep waiting
// to be woken by one. So:
//
//   - state is the mutex itself: 1 while held, taken by a compare-and-swap
//     from 0. Every holder holds it; it alone excludes.
//   - line is a sync.Mutex that waiters sleep on (parked, woken in turn).
//     A goroutine that holds line takes state by polling it (take).
//   - busy says that the hold is contended or held long: while it is set,
//     lockOp goes through line too (lock), and its holder releases line
//     with state, so a waiter sleeps until it is woken, as on a
//     sync.Mutex. lock sets it; the release of a hold taken through line
//     clears it when no goroutine is queued for line.
//   - A hold taken by lockOp while busy was clear (the fast hold) is
//     released by the store alone. It is short: a straight-line
//     modification, no I/O, no sleep. So the polling in take, which waits
//     only for fast holds begun before busy was set, is short too; and
//     take sets busy again if it polls long (busy was cleared under it).
//
// The release store orders every load and store of the hold before it
// (TSO on amd64, a release on arm64, an atomic store elsewhere and under
// the race detector, which then sees the hold as it sees a mutex), and the
// compare-and-swap that takes it orders every later one after: a mutex's
// happens-before, from each release to the next take.
type hold struct {
	state  uint64     // 1 while held (first: 64-bit aligned on 32-bit platforms)
	busy   uint32     // 1: lockOp takes line too
	queued int32      // goroutines in lock, not yet holding state
	line   sync.Mutex // the waiters' line; its holder polls state
}

// lockOp takes h for a short hold (no I/O, no sleep, a modification's
// work), and reports whether it took line too: unlockOp needs to know.
func (h *hold) lockOp() (lined bool) {
	if atomic.LoadUint32(&h.busy) == 0 && atomic.CompareAndSwapUint64(&h.state, 0, 1) {
		return false
	}
	h.lock()
	return true
}

// unlockOp releases a hold lockOp took.
func (h *hold) unlockOp(lined bool) {
	if lined {
		h.unlock()
		return
	}
	counting4.StoreOrdered(&h.state, 0)
}

// lock takes h through line, for any hold (unlock releases it): waiters
// sleep on line meanwhile.
func (h *hold) lock() {
	atomic.AddInt32(&h.queued, 1)
	if atomic.LoadUint32(&h.busy) == 0 {
		atomic.StoreUint32(&h.busy, 1)
	}
	h.line.Lock()
	h.take()
	atomic.AddInt32(&h.queued, -1)
}

// unlock releases a hold lock took; the last of a queue clears busy.
func (h *hold) unlock() {
	if atomic.LoadInt32(&h.queued) == 0 {
		atomic.StoreUint32(&h.busy, 0)
	}
	counting4.StoreOrdered(&h.state, 0)
	h.line.Unlock()
}

// holdSpins is how many times take polls state in a busy loop before it
// yields between polls, and holdYields how many yields it polls through
// before it sets busy again.
const (
	holdSpins  = 64
	holdYields = 16
)

// take waits for state with line held. What holds state is a fast hold
// (lockOp while busy was clear), whose modification ends in well under a
// microsecond unless its goroutine is descheduled: take polls, busy for
// holdSpins polls, then yielding its processor between polls (to the
// holder, if it waits on the same one), and if the fast holds go on it
// sets busy, which the release of a queue's last hold may have cleared
// after this goroutine counted itself in queued.
func (h *hold) take() {
	for i := 0; ; i++ {
		if atomic.LoadUint64(&h.state) == 0 && atomic.CompareAndSwapUint64(&h.state, 0, 1) {
			return
		}
		if i >= holdSpins {
			if i == holdSpins+holdYields {
				atomic.StoreUint32(&h.busy, 1)
			}
			runtime.Gosched()
		}
	}
}
