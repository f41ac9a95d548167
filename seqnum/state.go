package seqnum

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Phase is the low two bits of the state word.
type Phase uint64

const (
	Clean    Phase = 0
	Marking  Phase = 1
	Dirty    Phase = 2
	Flushing Phase = 3
)

func (p Phase) String() string {
	return [...]string{"clean", "marking", "dirty", "flushing"}[p&3]
}

// Pending is set in a filter's mark word while its mark is being made durable.
const Pending = uint64(1) << 63

// MaxEpoch is the largest epoch a file may hold: a flush moves to epoch+1,
// which must still fit the state word's 62 epoch bits. No file counts that
// far (2^62 flushes), so a state word outside 1..MaxEpoch is garbage.
const MaxEpoch = 1<<62 - 2

// ValidEpoch reports whether epoch can be a file's: 1..MaxEpoch (a new file
// starts at 1).
func ValidEpoch(epoch uint64) bool { return epoch != 0 && epoch <= MaxEpoch }

// Pack builds a state word.
func Pack(epoch uint64, p Phase) uint64 { return epoch<<2 | uint64(p) }

// Unpack splits a state word.
func Unpack(w uint64) (epoch uint64, p Phase) { return w >> 2, Phase(w & 3) }

// Writable reports whether a writer may change a filter whose mark word is
// mark while the state word is state: the fast path of every modification.
func Writable(state, mark uint64) bool {
	return Phase(state&3) == Dirty && mark == state>>2
}

// takeoverAfter is how long a writer waits for another's dirty mark to become
// durable before making it durable itself (the other may have died).
const takeoverAfter = 200 * time.Millisecond

// Words are the shared words of the protocol.
type Words struct {
	State *uint64 // the state word
	Disk  *uint64 // disk_seqnum

	takeover time.Duration // the package's tests: takeoverAfter if 0
}

// takeoverWait is how long MarkDirty waits before taking over a mark.
func (w Words) takeoverWait() time.Duration {
	if w.takeover > 0 {
		return w.takeover
	}
	return takeoverAfter
}

// MarkDirty makes the phase Dirty and the filter's mark word equal to the
// epoch, durably: onMark is called just before this writer tries to start a global
// mark (to record the boot identity), sync is called after a mark is written
// and before it is relied on. It returns the first sync error.
func (w Words) MarkDirty(mark *uint64, onMark func(), sync func() error) error {
	var waitStart time.Time
	takeover := w.takeoverWait()
	waited := func() bool {
		if waitStart.IsZero() {
			waitStart = time.Now()
		}
		runtime.Gosched()
		return time.Since(waitStart) > takeover
	}
	for {
		st := atomic.LoadUint64(w.State)
		ep, ph := Unpack(st)
		switch ph {
		case Clean, Flushing:
			// Record the boot identity before the phase leaves clean, so a
			// reader that sees Marking already sees this machine's boot and
			// cannot mistake a mark in progress for one left by an earlier
			// boot. Every writer on this machine records the same identity,
			// so a marker that loses the race below wrote nothing wrong.
			if onMark != nil {
				onMark()
			}
			if !atomic.CompareAndSwapUint64(w.State, st, Pack(ep, Marking)) {
				continue
			}
			atomic.StoreUint64(w.Disk, 0)
			atomic.StoreUint64(mark, ep)
			if err := sync(); err != nil {
				// Leave the phase at Marking: nobody may rely on a mark that
				// is not durable. Another writer takes over after the wait.
				return err
			}
			atomic.CompareAndSwapUint64(w.State, Pack(ep, Marking), Pack(ep, Dirty))
			return nil
		case Marking:
			if waited() {
				atomic.StoreUint64(mark, ep)
				if err := sync(); err != nil {
					return err
				}
				atomic.CompareAndSwapUint64(w.State, st, Pack(ep, Dirty))
				waitStart = time.Time{}
			}
		case Dirty:
			m := atomic.LoadUint64(mark)
			switch {
			case m == ep:
				return nil
			case m == ep|Pending:
				if waited() {
					if err := sync(); err != nil {
						return err
					}
					atomic.CompareAndSwapUint64(mark, m, ep)
				}
			default:
				if !atomic.CompareAndSwapUint64(mark, m, ep|Pending) {
					continue
				}
				if err := sync(); err != nil {
					atomic.CompareAndSwapUint64(mark, ep|Pending, m)
					return err
				}
				atomic.CompareAndSwapUint64(mark, ep|Pending, ep)
				return nil
			}
		}
	}
}

// BeginFlush freezes writers: it moves Dirty to Flushing and returns the
// epoch. clean is true if the phase was already Clean (nothing to do);
// ok is false if the phase is Marking (a writer is starting) or Flushing
// (another flush runs): the caller syncs but cannot claim clean. Flushes of
// one file must not overlap: EndFlush cannot tell another flush's Flushing
// state from its own (TestOverlappingFlushersABA).
func (w Words) BeginFlush() (epoch uint64, clean, ok bool) {
	for {
		st := atomic.LoadUint64(w.State)
		ep, ph := Unpack(st)
		switch ph {
		case Clean:
			return ep, true, false
		case Dirty:
			if atomic.CompareAndSwapUint64(w.State, st, Pack(ep, Flushing)) {
				return ep, false, true
			}
		default:
			return ep, false, false
		}
	}
}

// TakeOverFlush returns the epoch of a flushing phase whose flush died, and
// true, for a caller that holds the file's flush lock: with one flush at a
// time, the flush that moved dirty to flushing is no longer running, and
// no writer has re-marked the file since (it would have moved the phase
// on). The caller goes on as if its BeginFlush had returned ok. It reports
// false if the phase is not flushing.
func (w Words) TakeOverFlush() (epoch uint64, ok bool) {
	ep, ph := Unpack(atomic.LoadUint64(w.State))
	return ep, ph == Flushing
}

// AbortFlush gives up a flush begun with BeginFlush (an operation was in
// flight). It is harmless if a writer already moved the phase on.
func (w Words) AbortFlush(epoch uint64) {
	atomic.CompareAndSwapUint64(w.State, Pack(epoch, Flushing), Pack(epoch, Dirty))
}

// EndFlush records disk_seqnum = mem and moves Flushing to Clean with the next
// epoch. It reports false if a writer intervened since BeginFlush; the file
// then stays dirty (disk_seqnum is not claimed).
func (w Words) EndFlush(epoch, mem uint64) bool {
	atomic.StoreUint64(w.Disk, mem)
	return atomic.CompareAndSwapUint64(w.State, Pack(epoch, Flushing), Pack(epoch+1, Clean))
}

// DiskSeqnum returns disk_seqnum: its stored value while the phase is Clean,
// else 0.
func (w Words) DiskSeqnum() uint64 {
	for {
		st := atomic.LoadUint64(w.State)
		if Phase(st&3) != Clean {
			return 0
		}
		d := atomic.LoadUint64(w.Disk)
		if atomic.LoadUint64(w.State) == st {
			return d
		}
	}
}

// Phase returns the current phase and epoch.
func (w Words) Phase() (epoch uint64, p Phase) { return Unpack(atomic.LoadUint64(w.State)) }

// Mem sums per-slot completed counters into mem_seqnum; it is 0 if any
// operation is in flight or was interrupted.
func Mem(completed []uint64, inFlight bool) uint64 {
	if inFlight {
		return 0
	}
	var s uint64
	for _, c := range completed {
		s += c
	}
	return s
}
