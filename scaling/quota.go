// Floor 2 (a filter's parts) of package scaling: admission: the room a
// filter has left, handed out in shards.

package scaling

import (
	"sync"
	"sync/atomic"

	"github.com/dablooms/dablooms/header"
)

// Admission in chunks. Admitting every Add on the newest filter's shared
// line (admit: an increment of the pending word, and a decrement once the
// item count holds the Add) makes that line bounce between writers twice
// per Add. Instead a handle reserves room for a chunk of Adds with one
// increment of the pending word and hands it out from process memory; the
// Adds it handed out are released from the pending word with the next
// reservation (or at Close), in one step with it.
//
// The pending word then counts, per handle, the room reserved and not yet
// handed out plus the Adds handed out and not yet released, so the
// admission bound holds (I7, docs/PROTOCOLS.md). It may overcount by a
// handle's unused reservations: a filter looks fuller by at most
// quotaShards × quotaChunk items per handle (sized so that this is under
// 1/64 of its capacity); Repair zeroes what a killed handle left. A handle
// gives its own back before it calls a filter full (admitChunked's last
// try, and grow under the growth lock). That leaves only moments when one
// of its own Adds counts twice (counted in items, not yet released; a
// chunk being reserved), so a lone handle's goroutines rarely grow a
// filter early (see TestGrowGivesBackOwnReservations); other handles'
// reservations still can.

const quotaShards = 4 // per filter and handle, chosen by the key hash: goroutines rarely share one

// quotaShard is a handle's reservation on one filter.
//
// mu serialises what changes the reservation (a new chunk, the give-back);
// an admission from it takes one off left with a compare-and-swap, with or
// without mu (sharedFast takes none: one locked instruction, not a lock
// and an unlock). left only rises under mu, and only from zero, so an
// admission that reads zero is refused, never lost.
type quotaShard struct {
	mu   sync.Mutex
	left atomic.Uint64 // reserved and not yet handed out
	done atomic.Uint64 // handed out and finished (counted in items, or given up): not yet released
	_    [40]byte
}

// take hands out one admission from the reservation, if it has one left.
func (s *quotaShard) take() bool {
	for {
		l := s.left.Load()
		if l == 0 {
			return false
		}
		if s.left.CompareAndSwap(l, l-1) {
			return true
		}
	}
}

// quotaChunk is the room one reservation takes on a filter of capacity c:
// up to 32, and small enough that the unused reservations of a handle are
// under 1/64 of the filter.
func quotaChunk(c uint64) uint64 {
	return min(32, c/(64*quotaShards))
}

// admitChunked admits an Add to m (holding at most limit) from shard s of
// this handle's reservation, reserving a new chunk when it is used up. It
// returns the shard the admission came from, or nil if it was admitted one
// at a time (admit) or not at all (ok false).
func (w sharedWriter) admitChunked(m *member, limit uint64, h uint64) (sh *quotaShard, ok bool) {
	if m.gone() {
		return nil, false // the caller grows, which finds the new chain
	}
	chunk := quotaChunk(m.desc.Capacity)
	if chunk < 2 || atomic.LoadUint64(&m.line.MaxID)&header.Sealed != 0 {
		// (No reservation on a sealed filter: a chain read before the
		// growth would leave it there, unused, until Close.)
		return nil, w.admit(m, limit)
	}
	s := &m.quota[h%quotaShards]
	s.mu.Lock()
	if s.take() {
		s.mu.Unlock()
		return s, true
	}
	// Reserve a chunk and release what this shard handed out, in one step.
	d := s.done.Swap(0)
	p := atomic.AddUint64(&m.line.Pending, chunk-d)
	// (QuotaSkipsCheck skips the check: the negative control of
	// TestChunkedAdmissionNeverOverfills.)
	if m.itemCount()+p <= limit || knob(m.tk).QuotaSkipsCheck {
		s.left.Store(chunk - 1) // (left is 0 here, and only rises under mu)
		s.mu.Unlock()
		return s, true
	}
	atomic.AddUint64(&m.line.Pending, -chunk)
	s.mu.Unlock()
	if w.admit(m, limit) {
		return nil, true
	}
	// Near the limit: give back the room the other shards hold unused, so
	// that a lone handle fills the filter to the last item.
	if m.reclaim() == 0 {
		return nil, false
	}
	return nil, w.admit(m, limit)
}

// reclaim gives back the room this handle's shards of m reserved and did
// not hand out, and releases the Adds they handed out that have finished;
// it returns how much the pending word went down.
func (m *member) reclaim() uint64 {
	if m.seq < atomic.LoadUint64(m.retired) {
		// The line may be another filter's now: drop the shards only.
		// (A freeze does not stop the give-back, where gone would: the
		// pending word is a hint a rewrite's copy does not keep, and the
		// file lives on after an Abort or an exclusive writer's Close.)
		for i := range m.quota {
			m.quota[i].mu.Lock()
			m.quota[i].left.Store(0)
			m.quota[i].done.Store(0)
			m.quota[i].mu.Unlock()
		}
		return 0
	}
	var total uint64
	for i := range m.quota {
		s := &m.quota[i]
		s.mu.Lock()
		if r := s.left.Swap(0) + s.done.Swap(0); r > 0 {
			atomic.AddUint64(&m.line.Pending, -r)
			total += r
		}
		s.mu.Unlock()
	}
	return total
}

// release ends an admission: the Add is counted in items, or was given up.
func (sharedWriter) release(m *member, s *quotaShard) {
	if s == nil {
		m.unadmit()
		return
	}
	s.done.Add(1)
}

// releaseQuota gives back every reservation of the handle on m (Close,
// and a filter that is no longer the newest).
func (m *member) releaseQuota() { m.reclaim() }

// admit reserves room for one more item in m, holding at most limit (the
// admission bound, I7): raise pending, then check items + pending. A
// check that fails also counted Adds being turned away at the same
// moment, so a filter within a few items of its limit can be called full
// early: the chain grows a little early, which costs bytes, never accuracy
// (grow checks again under its lock). A writer that dies between admit
// and unadmit leaves pending too high until Repair zeroes it.
func (sharedWriter) admit(m *member, limit uint64) bool {
	if m.gone() {
		return false
	}
	p := atomic.AddUint64(&m.line.Pending, 1)
	if m.itemCount()+p <= limit {
		return true
	}
	m.unadmit()
	return false
}

func (m *member) unadmit() { atomic.AddUint64(&m.line.Pending, ^uint64(0)) }
