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
// of the handle at a time. It is a sync.Mutex but for its release, which
// is an ordered store (counting4.StoreOrdered: a MOV on amd64, STLR on
// arm64) where sync.Mutex's Unlock is a locked add. A locked instruction
// drains the store buffer and holds up every later load until it is done;
// at the end of a single Add or Remove it kept the next operation's hash
// and prefetch from starting under this one's stores (knock-out builds,
// docs/PERFORMANCE.md: 0.1-0.2 × the floor at 10M keys). Taking it is
// still one compare-and-swap.
//
// A plain store cannot see a waiter, so no waiter sleeps waiting to be
// woken by a release. Instead:
//
//   - state is the mutex itself: 1 while held, taken by a compare-and-swap
//     from 0, released by an ordered store of 0.
//   - line is where waiters sleep: the one goroutine that holds line (the
//     head) waits for state by polling it, the others sleep on line (a
//     sync.Mutex: parked, woken in turn).
//   - Short holds (lockOp: the straight-line paths, which do no I/O and
//     hold state for a modification's stores alone) take state directly,
//     and queue on line only when it is held.
//   - Long holds (lock: the general path, batches, Flush, RetireBefore,
//     Close, which may sync, grow the file or run for milliseconds) take
//     line first and keep it until they release state. So the head, which
//     holds line, never polls through a long hold: state is then held by a
//     short hold alone, for a modification's time, and everyone else
//     sleeps.
//   - wait keeps the head from starving: once it has polled a while it
//     sets wait, and short holds that read it queue on line behind it
//     instead of taking state as it comes free.
//
// The release store orders every load and store of the hold before it
// (TSO on amd64, a release on arm64, an atomic store elsewhere and under
// the race detector, which then sees the hold as it sees a mutex), and the
// compare-and-swap that takes it orders every later one after: a
// mutex's happens-before, from each release to the next take.
type hold struct {
	state uint64     // 1 while held (first: 64-bit aligned on 32-bit platforms)
	wait  uint32     // 1 while the head has polled long: short holds queue
	line  sync.Mutex // the waiters' line; its holder alone polls state
}

// lockOp takes h for a short hold: no I/O, no sleep, no more than one
// modification's work while held (unlockOp releases it).
func (h *hold) lockOp() {
	if atomic.LoadUint32(&h.wait) != 0 || !atomic.CompareAndSwapUint64(&h.state, 0, 1) {
		h.queue()
	}
}

// queue is lockOp's wait: in line, as its head.
func (h *hold) queue() {
	h.line.Lock()
	h.take()
	h.line.Unlock()
}

// lock takes h for a long hold (unlock releases it): waiters sleep
// on line meanwhile.
func (h *hold) lock() {
	h.line.Lock()
	h.take()
}

// unlockOp releases a short hold.
func (h *hold) unlockOp() { counting4.StoreOrdered(&h.state, 0) }

// unlock releases a long hold.
func (h *hold) unlock() {
	counting4.StoreOrdered(&h.state, 0)
	h.line.Unlock()
}

// holdSpins is how many times the head polls state in a busy loop before
// it yields between polls, and holdYields how many yields it polls through
// before it sets wait.
const (
	holdSpins  = 64
	holdYields = 16
)

// take is the head's wait for state, with line held: what holds state is a
// short hold (lockOp), whose modification ends in well under a
// microsecond unless its goroutine is descheduled, so the head polls, busy
// for holdSpins polls, then yielding its processor between polls (to the
// holder, if it waits on the same one), and after holdYields yields it
// sets wait so that no later short hold takes state before it.
func (h *hold) take() {
	for i := 0; ; i++ {
		if atomic.LoadUint64(&h.state) == 0 && atomic.CompareAndSwapUint64(&h.state, 0, 1) {
			break
		}
		if i >= holdSpins {
			if i == holdSpins+holdYields {
				atomic.StoreUint32(&h.wait, 1)
			}
			runtime.Gosched()
		}
	}
	if atomic.LoadUint32(&h.wait) != 0 {
		atomic.StoreUint32(&h.wait, 0)
	}
}
