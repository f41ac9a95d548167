// Floor 2 (a filter's parts) of package scaling: the writer strategy a
// handle picks at Open, and the shared one.

package scaling

import (
	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
)

// The writer: what a modification does that differs between a shared
// handle and the exclusive writer (exclusive.go). A handle's writer is
// chosen once, when it is opened or created (sharedWriter; takeExclusive
// makes it exclWriter before the handle is shared), and never changes;
// the steps of an Add and a Remove (ops.go) call it and test nothing.
//
//	step            shared (sharedWriter)                 exclusive (exclWriter)
//	op start/end    a guard Close waits for (enter)       wmu, one modification at a time
//	admission       the pending word, in chunks (quota.go) the room left, in process memory
//	swept batch     none: another writer may fill m       the room left (sweepRoom, sweep.go)
//	id range        compare-and-swap, sealed checked      one read of each word, ordered stores
//	record claim    a free record of the slot (slot.go)   record 0, ordered stores
//	record finish   the record is free again              (record 0 stays the handle's)
//	item count      atomic add to the handle's count      ordered store (counts.go)
//	counter update  compare-and-swap (AddProbe)           store (AddExcl, RemoveExcl)
//	hold (stop.go)  nothing to take: guards and records   wmu (holdOps: Flush, RetireBefore, Close)
//	flush lock      the file's flush lock (lockFlush)     wmu; it holds the file's from Open
//	growth lock     the file's growth lock (lockGrowth)   mu only; it holds the file's from Open
//
// It is an interface of two types rather than a branch in each step:
// sharedWriter is empty, and exclWriter holds the state only the
// exclusive writer has (its hold, the replaced words, the undo block, the
// sweep buffer). A type parameter would not inline the variants either (Go calls a
// type parameter's methods through its dictionary); the functions behind
// the interface were not inlined into the steps before it, where each
// tested a flag.
type writer interface {
	startOp(f *Filter, h uint64) (*guard, error)
	endOp(f *Filter, g *guard)
	admit(m *member, limit uint64) bool
	admitChunked(m *member, limit, h uint64) (*quotaShard, bool)
	sweepRoom(m *member, limit uint64) (room uint64, ok bool)
	sweepBuffer() *[]uint64
	release(m *member, s *quotaShard)
	widen(m *member, id uint64) bool
	addCounters(m *member, pr counting4.Probe, r *record)
	removeCounters(m *member, pr counting4.Probe, r *record) bool
	count(m *member, r *record, d int64)
	uncount(m *member, r *record, changed bool)
	claimRecord(f *Filter, h, op uint64, m *member) *record
	finish(r *record, completed bool)
	adopt(f *Filter, m *member)
	holdOps(f *Filter) (unlock func())
	lockFlush(f *Filter) (unlockGrowth, unlock func(), err error)
	lockGrowth(f *Filter) (unlock func(), err error)
	closeWriter(f *Filter)
}

// sharedWriter is the writer of a handle that shares the file with other
// writers, in this process and others: every change a locked instruction.
type sharedWriter struct{}

// adopt readies a member of a new chain: nothing to do on a shared handle.
func (sharedWriter) adopt(*Filter, *member) {}

// sweepRoom is not ok: a shared handle's batch goes in order, since
// another writer may fill or seal the filter while it runs (sweep.go).
func (sharedWriter) sweepRoom(*member, uint64) (uint64, bool) { return 0, false }

// addCounters and removeCounters change the counters of probe pr in m
// with a compare-and-swap per word (other writers change them too), in
// record r.
func (sharedWriter) addCounters(m *member, pr counting4.Probe, r *record) {
	rec := r.counters()
	m.cf.AddProbe(pr, &rec)
}

func (sharedWriter) removeCounters(m *member, pr counting4.Probe, r *record) bool {
	rec := r.counters()
	return m.cf.RemoveProbe(pr, &rec)
}

// sweepBuffer is nil: a shared handle never sweeps.
func (sharedWriter) sweepBuffer() *[]uint64 { return nil }

// holdOps stops the handle's modifications: a shared handle's do not need
// stopping (Close waits for their guards and claimed records; Flush and
// RetireBefore take part in the records' handshake, I2).
func (sharedWriter) holdOps(*Filter) func() { return func() {} }

// closeWriter ends the writer at Close: nothing to give back on a shared
// handle.
func (sharedWriter) closeWriter(*Filter) {}

// routeHookWriter is the writer of a handle whose knobs have a RouteHook
// (testknobs.Knobs): its own writer, with the hook run once an Add is
// routed to a filter, before its record is claimed.
type routeHookWriter struct {
	writer
	hook func(seq uint64)
}

func (w routeHookWriter) claimRecord(f *Filter, h, op uint64, m *member) *record {
	if op == header.OpAdd {
		w.hook(m.seq)
	}
	return w.writer.claimRecord(f, h, op, m)
}
