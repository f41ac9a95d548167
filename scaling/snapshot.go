// Floor 5 (maintenance) of package scaling: a consistent copy of the
// counters.

package scaling

import (
	"sync/atomic"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/seqnum"
)

// FilterSnapshot is the part of FilterStats that Snapshot reads: what a
// filter holds (its item count and id range) and where it lies.
type FilterSnapshot struct {
	Index       int     // as FilterStats.Index
	FirstID     uint64  // smallest id added (MaxUint64 while empty)
	LastID      uint64  // largest id added
	Sealed      bool    // a newer filter exists: the id range no longer widens
	Count       uint64  // items: adds minus removes
	Capacity    uint64  // items the filter was sized for
	ErrorTarget float64 // false-positive target at capacity
	K           int     // hash functions
	Counters    uint64  // 4-bit counters
	Bytes       int64   // the filter's bytes in the file
	Offset      int64   // where its counters start in the file
}

// Snapshot is the part of Stats that Snapshot reads: the numbers that cost
// a few memory loads each.
type Snapshot struct {
	FileSize   int64
	DiskSeqnum uint64 // as DiskSeqnum: 0 once changed since the last clean Flush
	// Clean: nothing has changed since the last Flush that marked the
	// file clean (Condition Clean), so the modifications completed on it,
	// MemSeqnum when none is in flight, number DiskSeqnum (0 for a file
	// never changed).
	Clean bool
	// Retired counts the filters retired from the chain's front so far;
	// Filters[j] is filter number Retired+j since the file was created.
	Retired uint64
	Filters []FilterSnapshot // the chain, oldest first
}

// Snapshot fills s with the store's item counts, id ranges, file size,
// disk_seqnum and whether it is clean, as Stats would report them, at a small fraction of its cost:
// a few loads per filter, no lock that another handle holds, and no
// allocation once s.Filters has room for the chain (it is truncated and
// refilled, so a caller that passes the same Snapshot each time allocates
// nothing on the steady path). Like Stats, it first picks up filters that
// other handles and processes have appended or retired.
//
// It leaves out what makes Stats cost microseconds: MemSeqnum (it reads
// the op word of every writer record, about a thousand cache lines; call
// MemSeqnum for it), Condition beyond Clean (it reads those records again,
// and asks the kernel whether the slots of the busy ones are owned), the
// false-positive estimates and the names of layouts and hashes.
//
// It returns ErrClosed (s.Filters empty) once the Filter is closed, and the
// reason when filters another handle published could not be mapped
// (Stats.RefreshError): s then describes the filters this handle has.
func (f *Filter) Snapshot(s *Snapshot) error {
	s.Filters = s.Filters[:0]
	f = f.settled()
	g, err := f.enter(4)
	if err != nil {
		*s = Snapshot{Filters: s.Filters}
		return err
	}
	defer g.n.Add(-1)
	c, err := f.current()
	if err != nil {
		c = f.chain.Load() // a newer directory could not be read: show what we have
	}
	_, ph := f.words.Phase()
	s.FileSize, s.DiskSeqnum, s.Clean = f.r.Size(), f.words.DiskSeqnum(), ph == seqnum.Clean
	s.Retired = 0
	if c == nil {
		return err
	}
	s.Retired = c.base
	if cap(s.Filters) < len(c.f) {
		s.Filters = make([]FilterSnapshot, len(c.f), len(c.f)+4) // room for a few growths
	}
	s.Filters = s.Filters[:len(c.f)]
	for i, m := range c.f {
		maxID := atomic.LoadUint64(&m.line.MaxID)
		fs := &s.Filters[i]
		fs.Index, fs.FirstID, fs.LastID, fs.Sealed = m.idx, atomic.LoadUint64(&m.line.MinID), maxID&header.MaxID, maxID&header.Sealed != 0
		fs.Count, fs.Capacity, fs.ErrorTarget = m.itemCount(), m.desc.Capacity, m.desc.ErrorRate
		fs.K, fs.Counters, fs.Bytes, fs.Offset = m.desc.K, m.desc.Counters, m.desc.Length, m.desc.Offset
	}
	return err
}
