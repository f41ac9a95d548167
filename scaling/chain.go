// Floor 2 (a filter's parts) of package scaling: the chain of filters a
// handle reads, and each filter's member.

package scaling

import (
	"errors"
	"sync/atomic"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
)

// chain is an immutable snapshot of the filters; a growth publishes a new one.
type chain struct {
	f     []*member
	lines []*header.Line // f[j].line, for the walks of the fast paths (guess, removeRoute)
	// base is the number of filters retired before f[0] (f[j] is the
	// chain's filter number base+j since the file was created), end is
	// base+len(f), and retired the hot retired word this chain was built
	// from (see current).
	base, end, retired uint64
	// dirRetired is the directory's count of retired filters: below
	// retired while a retirement is unfinished (see RetireBefore).
	dirRetired uint64
	hasMurmur  bool   // some filter uses the original's hash
	frontier   uint64 // the largest max id of the sealed filters (all but the newest), ranges read empty too (see route, loadChain)
	// disjoint: the sealed filters' non-empty ranges ascend along f
	// without overlapping, and every filter after f[0] has a late-add
	// index region, so no range widens over the frontier (route sends
	// such an Add to the index): see removeRoute.
	disjoint bool
	keep     *mapKeep // keeps the mapping while the chain is in use
	// legacy routes Adds as version 1.0 did (the negative control
	// testknobs.Knobs.LegacyRouting; see route).
	legacy bool
}

// sealed reports whether c has a sealed filter: every filter but the
// newest is, and the frontier counts them all.
func (c *chain) sealed() bool { return len(c.f) > 1 }

type member struct {
	desc header.FilterDesc
	cf   *counting4.Filter
	idx  int    // the directory entry (desc.Slot): names the line and the filter in records
	seq  uint64 // the chain's filter number (retired once the hot retired word passes it)
	// retired and replaced are the hot retired and replaced words (see gone).
	retired, replaced *uint64
	tk                *testknobs.Knobs // the handle's (nil: none; see gone)
	salt              uint64           // added to the native hash (0 for the original's hash)
	blocked           bool             // cf's layout is blocked: a Remove decides before its first store (removeRoute)
	line              *header.Line     // the filter's hot line (Pending: Adds admitted, not yet counted; see admit)
	ix                lateIndex        // empty for a filter without one
	ps                pageSums         // the check pages (empty without them)
	countsPage        uint64           // the counts page's number among the covered pages
	quota             [quotaShards]quotaShard

	writerCounts // the per-writer item counts (counts.go)
	exclRoom     // the exclusive writer's admission (exclusive.go)
}

// writerCounts are a member's per-writer item counts (header/counts.go);
// counts is nil for a filter without them, which counts in items alone.
type writerCounts struct {
	counts    []uint64 // the counts page: slot s's count is counts[s*countStride]
	own       *uint64  // this handle's count (nil: read-only), its line's first word
	ownSlot   int
	ownMarked atomic.Bool
	// recWords: the file has header.FlagRecordCounts, so a writer's
	// count is the sum of its line's header.CountWords words, and record
	// r of this handle counts in word header.CountWord(r) (count).
	recWords bool
}

// exclRoom is an exclusive handle's admission to a member (exclusive.go):
// room is how many more Adds limit roomLimit admits.
type exclRoom struct {
	room, roomLimit uint64
}

// errRetired: the filter an operation chose was retired before it could
// begin (allocIndex found it so under the growth lock).
var errRetired = errors.New("dablooms: filter retired")

// gone reports whether m has been retired since the caller's chain was
// read (I13), or a rewrite freezes or has replaced the file (I14): the
// gate, read after the record is published (I2). A member that is gone
// must not touch its line any more: the entry may already hold a new
// filter. After a rewrite goneErr waits for it and starts over. (The
// negative control of TestRetireRacingAdd, testknobs.Knobs.SkipGoneCheck,
// turns the gate off; it is read only when the gate would close.)
func (m *member) gone() bool {
	return (m.seq < atomic.LoadUint64(m.retired) || atomic.LoadUint64(m.replaced) != header.ReplaceNone) && !knob(m.tk).SkipGoneCheck
}

// holds reports whether m's id range holds id (an empty range, min id
// above max id, holds none).
func (m *member) holds(id uint64) bool {
	return id >= atomic.LoadUint64(&m.line.MinID) && id <= atomic.LoadUint64(&m.line.MaxID)&header.MaxID
}
