// Floor 5 (maintenance) of package scaling: Condition, Stats and Params.

package scaling

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/seqnum"
)

// Condition returns the file's condition as seen now (Dirty after Close:
// a closed handle can no longer vouch for the file).
func (f *Filter) Condition() Condition {
	f = f.settled()
	g, err := f.enter(2)
	if err != nil {
		return Dirty // closed: this handle can no longer vouch for the file
	}
	defer g.n.Add(-1)
	c, _ := f.condition()
	return c
}

func (f *Filter) condition() (Condition, string) {
	_, ph := f.words.Phase()
	if ph == seqnum.Clean {
		return Clean, "equal to the last flush"
	}
	// The boot identity is recorded before the phase leaves clean (see
	// seqnum.MarkDirty), so a mark in progress never reads as another boot's.
	h := header.HotAt(f.hot)
	switch header.BootIDFromWords([2]uint64{atomic.LoadUint64(&h.BootID[0]), atomic.LoadUint64(&h.BootID[1])}) {
	case f.bootID:
	case header.RebuildBootID:
		return Dirty, "a Repair left filters it could not make exact (damaged pages, or a dead writer's change it could not decide): they need Rebuild"
	case [16]byte{}:
		return Dirty, "changed since the last flush, and no boot identity was recorded (an imported or hand-made file): nothing vouches for the changes"
	default:
		return Dirty, "changed since the last flush, and the machine has restarted since: an OS crash may have lost pages"
	}
	if n := f.deadInFlight(); n > 0 {
		return Interrupted, fmt.Sprintf("%d operation(s) of dead writers were cut short", n)
	}
	if ph == seqnum.Flushing {
		return Unflushed, "a flush is running or was killed (the machine did not restart): contents trustworthy, and the next Flush finishes it"
	}
	return Unflushed, "changed since the last flush, same boot: contents trustworthy"
}

// deadInFlight counts in-flight records in slots that no live handle owns.
func (f *Filter) deadInFlight() int {
	n := 0
	for s := 0; s < header.NumSlots; s++ {
		if s != f.slot {
			n += f.slotDeadInFlight(s)
		}
	}
	return n
}

// slotDeadInFlight counts the in-flight records of slot s if no live
// handle owns it. A live writer may finish its operation and close between
// any two reads here, and a new one may claim the slot: so the records
// count as dead only when they are read in flight after the slot was seen
// unowned, it is still unowned afterwards, and its owner word did not
// change meanwhile (a claim writes a new token; a close writes 0).
func (f *Filter) slotDeadInFlight(s int) int {
	owner := &header.SlotAt(f.hot, s).Owner
	for f.slotInFlight(s) > 0 {
		if h := knob(f.tk).SlotReadHook; h != nil {
			h(s)
		}
		before := atomic.LoadUint64(owner)
		if f.slotLive(s) {
			return 0
		}
		busy := f.slotInFlight(s)
		if busy == 0 || f.slotLive(s) {
			return 0
		}
		if atomic.LoadUint64(owner) == before {
			return busy
		}
	}
	return 0
}

// FilterStats describes one filter of the chain.
type FilterStats struct {
	Index        int
	FirstID      uint64 // smallest id added (MaxUint64 while empty)
	LastID       uint64 // largest id added
	Capacity     uint64
	Count        uint64 // items: adds minus removes
	Fill         float64
	ErrorTarget  float64 // false-positive target at capacity
	EstimatedFPR float64 // expected false-positive rate at the current count
	K            int
	Counters     uint64
	Bytes        int64
	Offset       int64
	Layout       string
	Hash         string
	Dirty        bool // changed since the last flush
	Sealed       bool // a newer filter exists: the id range no longer widens
	LateIndex    bool // the filter has taken late Adds (its late-add index is allocated; docs/FORMAT.md)
}

// Stats describes the whole store.
type Stats struct {
	Path            string
	FileSize        int64
	Capacity        uint64
	ErrorRate       float64
	GrowthFactor    float64
	TighteningRatio float64
	Seed            uint64
	MemSeqnum       uint64
	DiskSeqnum      uint64
	Phase           string
	Epoch           uint64
	Condition       Condition
	Count           uint64
	EstimatedFPR    float64       // expected false-positive rate of Contains: the sum over filters
	Filters         []FilterStats // the chain, oldest first
	// Retired counts the filters retired from the chain's front so far
	// (RetireBefore); Filters[j] is filter number Retired+j since the
	// file was created.
	Retired uint64
	// FilterLimit is how many filters the chain can reach: MaxFilters (64),
	// or fewer where the schedule makes a filter too large or its error
	// target too small to build; Add then returns ErrFull.
	FilterLimit int
	// RefreshError is why filters another handle published could not be
	// mapped (nil normally); Filters then lists only those this handle has.
	RefreshError error
	// Flushes counts the durable flushes completed on the file since it
	// was created, by every handle (the hot page's flush count).
	Flushes uint64
	// DirtySince is when the file was first changed after its last
	// flush: how long changes have waited for one (zero while clean).
	DirtySince time.Time
	// Writers counts the writer slots held by live handles, this one's
	// included (one lock query per slot with an owner).
	Writers int
}

// Stats returns a snapshot of the store's numbers.
func (f *Filter) Stats() Stats {
	f = f.settled()
	g, err := f.enter(3)
	if err != nil {
		return Stats{}
	}
	defer g.n.Add(-1)
	c, err := f.current()
	if err != nil {
		c = f.chain.Load() // a newer directory could not be read: show what we have
	}
	ep, ph := f.words.Phase()
	s := Stats{
		FileSize: f.r.Size(), Capacity: f.params.Capacity, ErrorRate: f.params.ErrorRate,
		GrowthFactor: f.params.GrowthFactor, TighteningRatio: f.params.TighteningRatio, Seed: f.params.Seed,
		MemSeqnum: f.MemSeqnum(), DiskSeqnum: f.DiskSeqnum(), Phase: ph.String(), Epoch: ep,
		Condition: f.Condition(), RefreshError: err, FilterLimit: f.filterLimit(),
	}
	if f.file != nil {
		s.Path = f.file.Path()
	}
	s.Retired = c.base
	h := header.HotAt(f.hot)
	s.Flushes = atomic.LoadUint64(&h.FlushCount)
	if ph != seqnum.Clean {
		if ns := atomic.LoadUint64(&h.DirtySince); ns != 0 {
			s.DirtySince = time.Unix(0, int64(ns))
		}
	}
	for slot := 0; slot < header.NumSlots; slot++ {
		// A slot never claimed, or closed, has owner 0: no lock query (a
		// claim in progress writes its owner just after its lock).
		owned := atomic.LoadUint64(&header.SlotAt(f.hot, slot).Owner) != 0
		if slot == f.slot || f.file != nil && owned && f.slotLive(slot) {
			s.Writers++
		}
	}
	for _, m := range c.f {
		items, maxID := m.itemCount(), atomic.LoadUint64(&m.line.MaxID)
		lay := counting4.Layout(m.desc.LayoutID)
		fs := FilterStats{
			Index: m.idx, FirstID: atomic.LoadUint64(&m.line.MinID), LastID: maxID & header.MaxID, Sealed: maxID&header.Sealed != 0,
			Capacity: m.desc.Capacity, Count: items, Fill: float64(items) / float64(m.desc.Capacity),
			ErrorTarget: m.desc.ErrorRate, EstimatedFPR: lay.EstimateFPR(m.desc.Counters, m.desc.K, items),
			K: m.desc.K, Counters: m.desc.Counters, Bytes: m.desc.Length, Offset: m.desc.Offset,
			Layout: lay.String(), Hash: header.HashName(uint32(m.desc.HashID)),
			Dirty:     ph != seqnum.Clean && atomic.LoadUint64(&m.line.Mark)&^seqnum.Pending == ep,
			LateIndex: m.indexAllocated(),
		}
		s.Count += items
		s.EstimatedFPR += fs.EstimatedFPR
		s.Filters = append(s.Filters, fs)
	}
	return s
}

// filterLimit is chainLimit of the file's parameters, worked out once.
func (f *Filter) filterLimit() int {
	f.limit.once.Do(func() { f.limit.n = chainLimit(&f.params) })
	return f.limit.n
}

// Params returns the parameters the file was created with.
func (f *Filter) Params() header.Params { return f.settled().params }
