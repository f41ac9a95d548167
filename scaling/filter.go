// Floor 1 (the handle) of package scaling: the Filter and its state, by
// concern, and the guards Close waits for.

package scaling

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/mmapfile"
	"github.com/dablooms/dablooms/seqnum"
)

// Filter is a scalable counting Bloom filter stored in a file (or in memory).
// All methods are safe for concurrent use by goroutines; several processes
// may open the same file (see the package documentation).
type Filter struct {
	mapping  // the file (or memory) the handle maps
	settings // what it was opened with

	hotWords // the shared words every operation reads

	// w is the handle's writer (writer.go), chosen before it is shared;
	// an exclusive handle's holds the state only it has (exclusive.go).
	w    writer
	fast fastPath // the straight-line path w takes (setWriter)

	succ successor // moving to a file that replaced this one (successor.go)

	chain atomic.Pointer[chain] // nil once closed

	// The handle's locks, in the order they are taken: a holder of one
	// takes only those after it.
	//
	//  1. the exclusive writer's hold (exclWriter.wmu; holdOps): its
	//     operations, Flush, RetireBefore and Close;
	//  2. growMu, then the file's growth lock (lockGrowth; Flush takes it
	//     shared);
	//  3. flushMu, then the file's flush lock (lockFlush);
	//  4. mu;
	//  5. leaves, under which nothing of this handle's is taken: a quota
	//     shard's mu (quota.go), succ.mu (successor.go; a successor's Open
	//     takes only the successor's locks).
	mu       sync.Mutex // growth, meta, refresh, flush, close
	growMu   sync.Mutex // this handle's holders of the growth lock
	flushing            // flushMu: this handle's flushes

	metaCopy  // the metadata copy this handle wrote last (under mu)
	slotState // the handle's writer slot, records and guards
	closing   // Close's state

	limit lazyLimit // filterLimit
}

// mapping is what a Filter maps: its region, and the file behind it.
type mapping struct {
	r    mmapfile.Region
	file *mmapfile.File // nil in memory mode
	ro   bool
}

// settings are what a Filter was made with: the file's parameters, and
// the options and identity of the handle.
type settings struct {
	params  header.Params
	timeout time.Duration
	bootID  [16]byte
	tk      *testknobs.Knobs // the module's tests (testknobs.go); nil: none
}

// hotWords are the words of the hot page (and the state words) a Filter
// reads on every operation, mapped once (mapHot).
type hotWords struct {
	hot       []uint64 // words [HotOffset, DataOffset)
	words     seqnum.Words
	published *uint64 // the chain's end: filters ever appended
	retired   *uint64 // filters ever retired from the chain's front
	replaced  *uint64 // the replaced word (replace.go, successor.go); the exclusive writer's own if exclusive
}

// metaCopy is which of the two metadata copies holds the newest
// generation, as this handle last read or wrote it (under mu).
type metaCopy struct {
	metaWhich  int
	generation uint64
}

// closing is the state of Close: closed is set first, then the handle
// waits for its operations and releases the file once (closeOnce).
type closing struct {
	closed    atomic.Bool
	closeErr  error
	closeOnce sync.Once
}

// flushing is the state of the handle's flushes (flush.go, pagesums.go).
type flushing struct {
	flushMu    sync.Mutex                   // this handle's flushes
	sumBuf     *[header.PageSize / 8]uint64 // Flush's copy of a page to checksum (under mu)
	syncFailed atomic.Bool                  // a sync failed: Flush refuses from then on (ErrSyncFailed)
}

// slotState is the handle's writer slot (slot.go), the records of its
// operations in flight, and the guards Close waits for (with the claimed
// records: sharedFast's guard is its record's claim).
type slotState struct {
	slot   int // writer slot, -1 if read-only
	rec    [header.RecordsPerSlot]record
	guards [16]guard
}

// lazyLimit is chainLimit of the file's parameters, worked out once
// (filterLimit).
type lazyLimit struct {
	once sync.Once
	n    int
}

// mapKeep keeps the region mapped while anything can still read it (I16,
// docs/PROTOCOLS.md). Lookups do not register with the Filter (an atomic
// read-modify-write per lookup would serialise their cache misses):
// instead every chain of a Filter points to one mapKeep (the first chain
// makes it, later ones take it over), and a lookup holds its chain until
// it returns. Close detaches the region at once (a mapped file's pages
// become zero pages) and drops the Filter's chain; a cleanup unmaps it.
//
// A lookup that read zeros cannot be told from one that found the key
// absent: detached is set before the zero pages go in, and a lookup that
// answers "absent" checks it afterwards (answered) and asks again if set
// (I15).
type mapKeep struct {
	r        mmapfile.Region
	detached atomic.Bool
}

// answered reports whether an "absent" answer read from the chain holding
// k can stand: false if the region was detached (from before the reads).
// loadFence orders the lookup's loads of the counters before the load of
// detached (see fence_*.go): a load that saw a zero page was served after
// the detach, which followed the store of detached.
func (k *mapKeep) answered() bool {
	loadFence()
	return !k.detached.Load()
}

type guard struct {
	n atomic.Int64
	_ [56]byte
}

// record is one in-flight operation record in the mapped slot.
type record struct {
	busy uint64           // 1: claimed by a goroutine of a shared handle (claim, free)
	_    [0]atomic.Uint64 // (busy 8-aligned on 32-bit platforms, for its 64-bit atomics)
	rec  *header.Record   // the mapped words (Word, New: the evidence of the CAS in doubt)
	// cw is the word of the handle's count lines this record counts in
	// where the file has header.FlagRecordCounts, and cwOwn whether the
	// word is the record's alone (header.CountWord; count).
	cw    uint8
	cwOwn bool
	// A line each, as when the record held its eight word pointers: the
	// goroutines of a handle claim busy flags at once, and four records to
	// a line would make their claims contend. (64 bytes with 8-byte
	// pointers, and with 4-byte ones too: 8 + 4 + 2 + 46 rounds up to 64.)
	_ [64 - 16 - 2]byte
}

// startOp begins a modification so that Close waits for it, and fails
// once the Filter is closed: a shared handle registers a guard (enter),
// which it returns. endOp ends it.
func (sharedWriter) startOp(f *Filter, h uint64) (*guard, error) { return f.enter(h) }

func (sharedWriter) endOp(_ *Filter, g *guard) { g.n.Add(-1) }

// enter registers an operation so that Close waits for it; it fails once
// the Filter is closed.
func (f *Filter) enter(h uint64) (*guard, error) {
	g := &f.guards[h&15]
	g.n.Add(1)
	if f.closed.Load() {
		g.n.Add(-1)
		return nil, ErrClosed
	}
	return g, nil
}

// counters is the record as counting4 writes it.
func (r *record) counters() counting4.Record {
	return counting4.Record{Changed: &r.rec.Changed, Doubt: &r.rec.Doubt, Word: &r.rec.Word, New: &r.rec.New}
}
