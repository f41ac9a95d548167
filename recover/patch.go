package recover

import (
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/seqnum"
)

// patch is what Repair or Rebuild writes over a copy of the file: a new head
// (metadata copies, hot page, filter lines, slots), changed counter words,
// and whole rebuilt filters. The copy is cut to size (or, for a truncated
// file, extended with zeros).
type patch struct {
	head    []byte
	words   map[int64]uint64
	filters map[int64][]byte // rebuilt filters' counters, by file offset
	size    int64
	changed bool // anything differs from the original
	// tidy: the patch also drops or zeroes what retired filters left (the
	// bytes after the chain, lines of unused entries), which alone is no
	// reason to rewrite the file.
	tidy bool
	// ranges, for a ring file, are the byte ranges of the original the
	// copy takes: the head and the chain's filters. The space between
	// them held retired filters and is left a hole.
	ranges        [][2]int64
	metaRewritten bool // both metadata copies were written afresh
	// sums are the filters' check pages written afresh (fixPageSums), by
	// file offset.
	sums    map[int64][]byte
	actions []string
	keys    uint64 // keys re-added by Rebuild
}

func (p *patch) act(format string, args ...any) {
	p.actions = append(p.actions, fmt.Sprintf(format, args...))
	p.changed = true
}

func (p *patch) put(off int64, v uint64) {
	if le.Uint64(p.head[off:]) != v {
		le.PutUint64(p.head[off:], v)
		p.changed = true
	}
}

// editLine changes filter line e of the new head with edit.
func (p *patch) editLine(e int, edit func(l *header.Line)) {
	editView(p, header.ReadLine, header.PutLine, e, edit)
}

// editHot changes the words of the new head's hot page with edit.
func (p *patch) editHot(edit func(h *header.Hot)) {
	editView(p, func(b []byte, _ int) header.Hot { return header.ReadHot(b) },
		func(b []byte, _ int, h header.Hot) { header.PutHot(b, h) }, 0, edit)
}

// editSlot changes writer slot s of the new head, its records included,
// with edit.
func (p *patch) editSlot(s int, edit func(sl *header.Slot)) {
	editView(p, header.ReadSlot, header.PutSlot, s, edit)
}

// editView changes view i of the new head (read and put by read and put)
// with edit, noting a change only if it changed something.
func editView[V comparable](p *patch, read func([]byte, int) V, put func([]byte, int, V), i int, edit func(*V)) {
	v := read(p.head, i)
	edit(&v)
	if v != read(p.head, i) {
		put(p.head, i, v)
		p.changed = true
	}
}

func (p *patch) zero(from, to int64) {
	if firstNonZero(p.head[from:to]) >= 0 {
		clear(p.head[from:to])
		p.changed = true
	}
}

// plan works out the repair. With src (Rebuild) every filter that needs it
// is rebuilt from the source; without, such filters are left marked dirty.
func (a *analysis) plan(img image, src Source) (*patch, error) {
	if a.meta == nil {
		return nil, ErrUnrepairable
	}
	p := &patch{head: slices.Clone(a.head), words: map[int64]uint64{}, filters: map[int64][]byte{}, size: a.meta.End()}
	img = a.withUndo(img)
	p.fixMetaAndSize(a)
	p.finishRetirement(a)
	if !a.hotOK && src == nil {
		p.actions = append(p.actions, "the hot page cannot be trusted: the file needs Rebuild")
		return p, nil
	}
	epoch := p.resetHot(a)
	p.undoBlock(a)
	bump, err := p.endCutShort(a, img)
	if err != nil {
		return nil, err
	}
	mem := p.freeDeadSlots(a, bump)
	if err := p.fixLines(a, img); err != nil {
		return nil, err
	}
	rebuilt, left, err := p.rebuildFilters(a, img, src)
	if err != nil {
		return nil, err
	}
	p.fixFields(a)
	p.markState(a, epoch, mem, rebuilt, left)
	p.fillGarbageLines(a, left)
	if err := p.fixPageSums(a, img); err != nil {
		return nil, err
	}
	return p, nil
}

// fixMetaAndSize restores a bad metadata copy from the one in use, and says
// how the file's size changes (p.size is the directory's end).
func (p *patch) fixMetaAndSize(a *analysis) {
	if a.restore >= 0 {
		copy(p.head[a.restore*header.MetaSize:(a.restore+1)*header.MetaSize], a.head[a.which*header.MetaSize:(a.which+1)*header.MetaSize])
		p.act("restored metadata copy %s from copy %s (generation %d)", copyName[a.restore], copyName[a.which], a.meta.Generation)
	}
	if a.ring {
		p.ranges = append(p.ranges, [2]int64{0, header.DataOffset})
		for _, d := range a.meta.Filters {
			p.ranges = append(p.ranges, [2]int64{d.Offset, d.Offset + d.Length})
		}
	}
	if a.size > p.size && a.ring {
		p.tidy = true
		p.actions = append(p.actions, fmt.Sprintf("dropped %d bytes after the last filter of the chain", a.size-p.size))
	} else if a.size > p.size {
		p.act("dropped %d bytes after the last filter", a.size-p.size)
	} else if a.size < p.size {
		p.act("extended the truncated file from %d to %d bytes", a.size, p.size)
	}
}

// finishRetirement finishes a retirement cut short (a.dropped), or undoes
// a hot retired word that cannot be right: it writes the directory readers
// use (a.meta) to both metadata copies and the hot retired word to match.
// The retired filters' lines are zeroed by resetHot, their bytes left out
// of the copy (p.ranges), and records on them cleared by freeDeadSlots.
func (p *patch) finishRetirement(a *analysis) {
	if len(a.dropped) > 0 {
		header.EncodeBoth(p.head, a.meta)
		p.metaRewritten = true
		var gone []int
		for _, d := range a.dropped {
			gone = append(gone, d.Slot)
		}
		p.act("finished a retirement cut short: wrote the directory without the filters in entries %v (%d retired in all, generation %d)", gone, a.meta.Retired, a.meta.Generation)
	}
	if a.retiredBad && a.hotOK {
		p.editHot(func(h *header.Hot) { h.Retired = a.meta.Retired })
		p.act("set the hot retired word %d to the directory's %d", a.hotRetired, a.meta.Retired)
	}
}

// resetHot starts an untrusted hot page afresh (every filter is then
// rebuilt, every slot freed), sets the published count and zeroes the
// reserved bytes of the hot page and the lines of unused directory entries.
// It returns the epoch the file is at: 0 for a hot page started afresh.
func (p *patch) resetHot(a *analysis) (epoch uint64) {
	epoch = a.epoch
	if !a.hotOK {
		p.zero(header.HotOffset, header.DataOffset)
		p.act("reset the hot page, filter lines and writer slots")
		epoch = 0
	}
	n := uint64(len(a.filters))
	p.editHot(func(h *header.Hot) { h.Published, h.Retired = a.meta.Retired+n, a.meta.Retired })
	if a.replacedBad {
		p.editHot(func(h *header.Hot) { h.Replaced = header.ReplaceNone })
		p.act("cleared the replaced word")
	} else {
		// A freeze (a rewrite's, this one's own for a Repair in place):
		// the copy starts live, and the word alone is no reason for one.
		h := header.ReadHot(p.head)
		h.Replaced = header.ReplaceNone
		header.PutHot(p.head, h)
	}
	p.zero(header.HotReservedOffset, header.BootIDOffset)
	if t := header.ReadHot(p.head).Taking; t != 0 {
		// fixPageSums takes every page's checksum again.
		p.editHot(func(h *header.Hot) { h.Taking = 0 })
		p.act("cleared the taking word (%#x) of a flush killed while it took page checksums: a process was killed, the pages' checksums are taken again", t)
	}
	p.zero(header.HotTailOffset, header.HotOffset+header.PageSize)
	for e := range header.MaxFilters {
		if a.chainIndex(e) >= 0 {
			continue
		}
		if a.ring {
			// What a retired filter left: not a reason to rewrite.
			header.PutLine(p.head, e, header.Line{})
			p.tidy = true
			continue
		}
		p.editLine(e, func(l *header.Line) { *l = header.Line{} })
	}
	return epoch
}

// endCutShort ends the operations dead writers cut short, as each filter's
// resolution decided: it takes the resolution's counter words and item
// count, and returns the records whose operation counts as completed.
func (p *patch) endCutShort(a *analysis, img image) (bump map[recRef]bool, err error) {
	bump = map[recRef]bool{}
	for i := range a.filters {
		res := a.filters[i].res
		if res == nil || !a.hotOK {
			continue
		}
		for off, w := range res.words {
			p.words[off] = w
		}
		for j, rr := range a.filters[i].recs {
			if res.choice[j].complete {
				bump[rr] = true
			}
			if err := p.endLate(a, img, i, &a.slots[rr.slot].recs[rr.rec], res.choice[j].complete); err != nil {
				return nil, err
			}
		}
		items := int64(a.filters[i].items) + res.itemsDelta
		if res.recount {
			items = (int64(a.filters[i].sum) + res.sumDelta) / int64(a.filters[i].desc.K)
		}
		p.foldCounts(a, i, uint64(items))
		switch {
		case res.exact:
			p.act("filter %d: %s", a.entry(i), res.summary())
		case res.bounded:
			p.act("filter %d: %s", a.entry(i), res.boundedSummary())
		default:
			p.act("filter %d: ended %d cut-short operation(s) leaving counters high, as %s", a.entry(i), len(res.choice), res.why)
		}
	}
	return bump, nil
}

// freeDeadSlots frees the slots of dead writers, keeping their completed
// counts (plus one for each record in bump), and idles their records in
// flight or with bad fields. It returns mem_seqnum: the completed counts of
// every slot, live ones included.
func (p *patch) freeDeadSlots(a *analysis, bump map[recRef]bool) (mem uint64) {
	for s := range a.slots {
		si := &a.slots[s]
		if si.live {
			mem += si.completed
			continue
		}
		if !a.hotOK {
			continue // zeroed by resetHot
		}
		freed := si.owner != 0 || si.inFlight > 0
		p.editSlot(s, func(sl *header.Slot) {
			if freed {
				sl.Owner, sl.PID, sl.Opened = 0, 0, 0
			}
			for r := range si.recs {
				c := si.recs[r].count()
				if bump[recRef{s, r}] {
					c++
				}
				mem += c
				idleRecord(&si.recs[r], &sl.Records[r], c)
			}
		})
		if freed {
			switch si.inFlight {
			case 0:
				p.act("freed slot %d of a dead writer (pid %d), which had no operation in flight", s, si.pid)
			case 1:
				p.act("freed slot %d of a dead writer (pid %d), which had 1 operation in flight", s, si.pid)
			default:
				p.act("freed slot %d of a dead writer (pid %d), which had %d operations in flight", s, si.pid, si.inFlight)
			}
		}
	}
	return mem
}

// idleRecord makes rec, read as ri, idle with c operations completed
// through it if it is in flight or has bad fields.
func idleRecord(ri *recInfo, rec *header.Record, c uint64) {
	if !ri.inFlight() && !ri.bad {
		return
	}
	*rec = header.Record{Op: uint64(header.IdleOp(c))}
}

// fixLines repairs the filter lines, counter tails and item counts of the
// filters that do not need Rebuild.
func (p *patch) fixLines(a *analysis, img image) error {
	n := len(a.filters)
	for i := range a.filters {
		fi := &a.filters[i]
		e := a.entry(i)
		if fi.strayCounts && !a.needRebuild[i] {
			p.zeroStrayCounts(a, i)
		}
		if fi.lineOK {
			if fi.line.Pending != 0 {
				p.act("filter %d: pending-adds hint %d zeroed (a writer was killed in the middle of an Add)", e, fi.line.Pending)
			}
			p.editLine(e, func(l *header.Line) { l.Pending, l.Reserved = 0, 0 })
		}
		if !validIndexState(&fi.desc, fi.line.Index) {
			p.editLine(e, func(l *header.Line) { l.Index = indexStateFor(&fi.desc) })
			p.act("filter %d: late-add index state %d set to %d", e, fi.line.Index, indexStateFor(&fi.desc))
		}
		if fi.tailOff >= 0 {
			if err := p.zeroTail(img, fi); err != nil {
				return err
			}
			p.act("filter %d: zeroed the bytes after the last counter", a.entry(i))
		}
		if want := i < n-1; fi.lineOK && !a.needRebuild[i] && (fi.sealed != want || fi.tornWiden()) {
			v := fi.maxID
			if fi.tornWiden() {
				v = 0 // the empty range (see tornWiden)
				p.act("filter %d: emptied the id range [none, %d] a widening cut short left", a.entry(i), fi.maxID)
			}
			if want {
				v |= header.Sealed
			}
			p.editLine(e, func(l *header.Line) { l.MaxID = v })
			if fi.sealed != want {
				p.act("filter %d: id range %s", a.entry(i), map[bool]string{true: "sealed", false: "unsealed"}[want])
			}
		}
		if fi.recount && !a.needRebuild[i] {
			v := fi.sum / uint64(fi.desc.K)
			p.foldCounts(a, i, v)
			p.act("filter %d: item count %d recounted from the counters: %d", a.entry(i), int64(fi.items), v)
		}
	}
	return nil
}

// rebuildFilters rebuilds, from src, the filters that need the
// application's data; without src it returns them as left.
func (p *patch) rebuildFilters(a *analysis, img image, src Source) (rebuilt, left []int, err error) {
	for i := range a.filters {
		if !a.needRebuild[i] {
			continue
		}
		if src == nil {
			left = append(left, i)
			continue
		}
		if err := p.rebuild(a, img, i, src); err != nil {
			return nil, nil, err
		}
		rebuilt = append(rebuilt, i)
	}
	return rebuilt, left, nil
}

// markState sets the state word: clean when no filter is left to rebuild;
// otherwise the filters left are marked dirty, in the epoch the file moves
// to when Repair runs on the boot whose changes the counters hold, or else
// in the current one. epoch is the file's epoch (0 for a hot page started
// afresh) and mem its mem_seqnum.
func (p *patch) markState(a *analysis, epoch, mem uint64, rebuilt, left []int) {
	// The epoch the repaired file moves to. Only a hostile file is at
	// MaxEpoch; it stays there (a clean file's marks do not matter, and a
	// dirty one's all read dirty: conservative) rather than wrap to 0.
	next := min(epoch+1, seqnum.MaxEpoch)
	switch {
	case len(left) == 0:
		if a.phase != seqnum.Clean || a.disk != mem || !a.hotOK || len(rebuilt) > 0 || p.metaRewritten {
			p.editHot(func(h *header.Hot) {
				h.State, h.DiskSeq = seqnum.Pack(next, seqnum.Clean), mem
				h.FlushCount++
				h.CleanBootID = header.BootIDWords(a.boot)[0]
				if !a.hotOK {
					h.BootID = header.BootIDWords(a.boot)
				}
			})
			p.act("marked the file clean: epoch %d, disk_seqnum = mem_seqnum = %d", next, mem)
		}
	case a.trusted:
		// Repair on this boot could not make some filters exact: they alone
		// stay marked dirty, with a boot identity no machine has.
		p.editHot(func(h *header.Hot) {
			h.State, h.DiskSeq = seqnum.Pack(next, seqnum.Dirty), 0
			h.BootID = header.BootIDWords(rebuildBoot)
		})
		for _, i := range left {
			p.editLine(a.entry(i), func(l *header.Line) { l.Mark = next })
		}
		p.act("left filters %v marked dirty: they need Rebuild", left)
	default:
		p.editHot(func(h *header.Hot) { h.DiskSeq = 0 })
		for _, i := range left {
			p.editLine(a.entry(i), func(l *header.Line) { l.Mark = epoch })
		}
		p.actions = append(p.actions, fmt.Sprintf("filters %v need Rebuild", left))
	}
}

// fillGarbageLines gives each filter left to rebuild whose line is garbage a
// plausible one, so that the file opens (with AllowUnclean) and Rebuild
// knows the filter's id range.
func (p *patch) fillGarbageLines(a *analysis, left []int) {
	for _, i := range left {
		fi := &a.filters[i]
		if fi.lineOK && fi.itemsOK {
			continue
		}
		items := uint64(0)
		if fi.sat == 0 && fi.sum%uint64(fi.desc.K) == 0 {
			items = fi.sum / uint64(fi.desc.K)
		}
		p.foldCounts(a, i, items)
		if !fi.lineOK {
			lo, hi, _ := a.rangeFor(i)
			if i < len(a.filters)-1 {
				hi |= header.Sealed
			}
			p.editLine(a.entry(i), func(l *header.Line) {
				l.MinID, l.MaxID, l.Pending, l.Index, l.Reserved = lo, hi, 0, indexStateFor(&fi.desc), 0
			})
		}
	}
}

// rangeFor returns the id range Rebuild asks the source for filter i, and
// false if the filter is known to be empty. The filter line's range is
// widened before the counters change but made durable only with the next
// sync of the lines, so for the newest filter (the only one whose range
// widens) it may be behind: its range is open-ended, from the smaller of its
// first id and the line's. A newest filter with a late-add index never
// widens over an id at or below the frontier (I8: its ids there are late
// Adds, which Rebuild takes from its index), yet its first id can lie there
// (the filter before it had an empty range when it was appended) and so can
// a line an OS crash damaged: its range starts above the frontier, so that
// the rebuilt range overlaps no older one's. An older filter's range was
// sealed when the next filter was appended (its line is synced before that
// one changes); if the line is garbage, the directory's first ids bound
// it. A first id above the largest id (which no library writes: a damaged
// directory entry) bounds nothing: the range starts at 0, so no key of the
// filter is left out (keys of older filters may come back into it too,
// which costs accuracy, not keys).
func (a *analysis) rangeFor(i int) (lo, hi uint64, ask bool) {
	fi := &a.filters[i]
	first := fi.desc.FirstID
	if first > header.MaxID {
		first = 0
	}
	if i == len(a.filters)-1 {
		lo = first
		if fi.lineOK && fi.minID <= fi.maxID {
			lo = min(lo, fi.minID)
		}
		if f, ok := a.frontier(i); ok && lo <= f {
			lo = f + 1
		}
		return lo, header.MaxID, true
	}
	if fi.lineOK {
		if fi.minID > fi.maxID {
			return 0, 0, false
		}
		// At least what the range covered when the next filter was
		// appended (checkSealedRanges): a line an OS crash took back to
		// before its last widening still asks for those ids.
		return fi.minID, max(fi.maxID, a.sealedFloor(i)), true
	}
	lo = first
	if next := a.filters[i+1].desc.FirstID; next > lo && next <= header.MaxID {
		return lo, next - 1, true
	}
	return lo, header.MaxID, true
}

// frontier returns, for the newest filter i if it has a late-add index, the
// largest id of the older filters' ranges as Repair and Rebuild leave them
// (scaling's chain.frontier: its route sends an id at or below it to the
// index, never into i's range), and false if i has no index, no older
// range holds an id, or the frontier leaves no id above it (a damaged
// directory: the overlap stays, and Verify notes it).
func (a *analysis) frontier(i int) (uint64, bool) {
	if a.filters[i].desc.IndexBytes() == 0 {
		return 0, false // it widens as version 1.0 did, over older ranges
	}
	var f uint64
	held := false
	for j := range i {
		if lo, hi, ask := a.rangeFor(j); ask && lo <= hi {
			f, held = max(f, hi), true
		}
	}
	return f, held && f < header.MaxID
}

// belowFrontier reports whether the sound line of the newest filter i, with
// a late-add index, reads a range reaching at or below the frontier, which
// its routing never makes (a line an OS crash damaged, or one an older
// library widened): Rebuild asks for its range from above the frontier
// (rangeFor), and takes the keys below it that no other filter holds as
// late Adds of i (newLateKeys), so that none is lost.
func (a *analysis) belowFrontier(i int) bool {
	fi := &a.filters[i]
	if i != len(a.filters)-1 || !fi.lineOK || fi.minID > fi.maxID {
		return false
	}
	f, ok := a.frontier(i)
	return ok && fi.minID <= f
}

// rebuildAhead is how many keys ahead of its counters rebuild prefetches.
const rebuildAhead = 16

// rebuild zeroes filter i and re-adds the keys src yields for its id range.
func (p *patch) rebuild(a *analysis, img image, i int, src Source) error {
	d := a.filters[i].desc
	r, err := newRefill(&d, a.meta.Params.Seed)
	if err != nil {
		return fmt.Errorf("filter %d: %w", a.entry(i), err)
	}
	lo, hi, ask := a.rangeFor(i)
	// Late Adds (docs/FORMAT.md, Late-add index) are read from the file as
	// this patch leaves it (Repair's resolutions applied).
	if r.lk, err = newLateKeys(a, &patchView{img: img, p: p}, i); err != nil {
		return err
	}
	lk := r.lk
	if ask {
		if err := src(lo, hi, r.inRange(i, lo, hi)); err != nil {
			return fmt.Errorf("rebuilding filter %d from ids [%d, %d]: %w", i, lo, hi, err)
		}
	}
	if lk.index != nil && (!ask || lo > 0) {
		// This filter's late Adds: ids below its range, in its index, or
		// (an index page an OS crash lost) held by no other filter.
		top := uint64(header.MaxID)
		if ask {
			top = lo - 1
		}
		if err := src(0, top, r.lateAdd); err != nil {
			return fmt.Errorf("rebuilding filter %d's late Adds from ids [0, %d]: %w", i, top, err)
		}
	}
	r.drain()
	if r.count > itemLimit(d.Capacity) {
		return fmt.Errorf("recover: the source yielded %d keys for filter %d, which holds %d", r.count, i, d.Capacity)
	}
	if lk.index == nil && d.IndexBytes() > 0 && a.filters[i].indexScan != indexEmpty {
		if err := p.zeroStrayIndex(img, &d); err != nil {
			return err
		}
	}
	p.storeRefill(a, i, r, lo, hi, ask)
	return nil
}

// zeroStrayIndex zeroes the chunks of the late-add index of d, a filter
// rebuilt without one (newLateKeys found its state none), that hold
// anything: no entry can be there, since the state is made allocated
// before the first is stored, and Verify reads such bytes as entries.
// (A damaged length of the filter moves the region over other bytes: the
// fuzzer found it.) Its holes, most of an index, stay holes. Not called
// where the analysis read the region and found it empty (indexEmpty): the
// region is read once.
func (p *patch) zeroStrayIndex(img image, d *header.FilterDesc) error {
	off := d.IndexOffset()
	n := min(d.IndexBytes(), img.Size()-off) // (a cut filter: past the end is zero)
	if n <= 0 {
		return nil
	}
	r := &chunkReader{img: img}
	return r.each(off, n, func(pos int64, chunk []byte) bool {
		if firstNonZero(chunk) >= 0 {
			p.filters[off+pos] = make([]byte, len(chunk))
		}
		return true
	})
}

// refill is the counters of a filter being rebuilt, and what rebuild
// counts while it adds the source's keys to them.
type refill struct {
	d     *header.FilterDesc
	cf    *counting4.Filter
	words []uint64
	seed  uint64
	salt  uint64
	lk    *lateKeys // the late Adds of the filter and of newer ones

	// A key's block is prefetched when the source yields it and its
	// counters changed rebuildAhead keys later, so that the cache misses
	// of many keys overlap (as scaling's AddBatch does).
	ahead        [rebuildAhead]uint64
	count, late  uint64 // keys added, late Adds among them
	minID, maxID uint64 // the ids of the keys in range
}

func newRefill(d *header.FilterDesc, seed uint64) (*refill, error) {
	r := &refill{d: d, seed: seed, words: make([]uint64, d.CounterBytes()/8), minID: math.MaxUint64}
	var err error
	if r.cf, err = counting4.New(r.words, counting4.Layout(d.LayoutID), d.Counters, d.K); err != nil {
		return nil, err
	}
	if d.HashID == header.HashXXH64Seeded {
		r.salt = counting4.Salt(d.Slot)
	}
	return r, nil
}

func (r *refill) keyHash(key []byte) uint64 {
	if r.d.HashID == header.HashMurmur3Orig {
		return header.HashKeyOriginal(key)
	}
	return header.HashKey(r.seed, key) + r.salt
}

// put adds the key of hash h (rebuildAhead keys later).
func (r *refill) put(h uint64) {
	r.cf.PrefetchProbe(r.cf.Prepare(h))
	slot := &r.ahead[r.count%rebuildAhead]
	if r.count >= rebuildAhead {
		r.cf.Add(*slot, nil)
	}
	*slot = h
	r.count++
}

// drain adds the keys put has not added yet.
func (r *refill) drain() {
	for n := r.count - min(r.count, rebuildAhead); n < r.count; n++ {
		r.cf.Add(r.ahead[n%rebuildAhead], nil)
	}
}

// inRange is the source's callback for the ids [lo, hi] of filter i.
func (r *refill) inRange(i int, lo, hi uint64) func(key []byte, id uint64) error {
	return func(key []byte, id uint64) error {
		if id < lo || id > hi {
			return fmt.Errorf("recover: the source yielded id %d outside the requested range [%d, %d] of filter %d", id, lo, hi, i)
		}
		if r.lk.lateElsewhere(key, id) {
			return nil // a late Add of a newer filter
		}
		r.put(r.keyHash(key))
		r.minID, r.maxID = min(r.minID, id), max(r.maxID, id)
		return nil
	}
}

// lateAdd is the source's callback for the ids below the filter's range:
// the keys that are its own late Adds.
func (r *refill) lateAdd(key []byte, id uint64) error {
	if kh := r.keyHash(key); r.lk.own(key, kh, id) {
		r.put(kh)
		r.late++
	}
	return nil
}

// storeRefill puts the rebuilt filter i into the patch: its counters, its
// counts, its line (the range of the keys that came back, or for a
// sealed filter what it covered) and its late-add index.
func (p *patch) storeRefill(a *analysis, i int, r *refill, lo, hi uint64, ask bool) {
	d := r.d
	b := make([]byte, d.CounterBytes())
	for j, w := range r.words {
		le.PutUint64(b[j*8:], w)
	}
	p.filters[d.Offset] = b
	p.foldCounts(a, i, r.count)
	minID, maxID := r.minID, r.maxID
	if i < len(a.filters)-1 {
		// A sealed range keeps what it covered (the newer filters' late
		// Adds were decided against it), even if fewer keys came back.
		if ask {
			minID, maxID = min(minID, lo), max(maxID, hi)
		}
		maxID |= header.Sealed
	}
	if r.lk.index != nil {
		p.filters[d.IndexOffset()] = r.lk.indexBytes()
	}
	p.editLine(a.entry(i), func(l *header.Line) {
		l.Mark, l.MinID, l.MaxID, l.Pending, l.Reserved = 0, minID, maxID, 0, 0
		if r.lk.index != nil {
			l.Index = header.IndexAllocated
		}
	})
	p.keys += r.count
	switch {
	case r.late > 0:
		p.act("filter %d: rebuilt from ids [%d, %d]: %d key(s), %d of them late Adds", a.entry(i), lo, hi, r.count, r.late)
	case ask:
		p.act("filter %d: rebuilt from ids [%d, %d]: %d key(s)", a.entry(i), lo, hi, r.count)
	default:
		p.act("filter %d: rebuilt empty (its id range is empty)", a.entry(i))
	}
}

// zeroTail patches the words after the filter's last counter to zero.
func (p *patch) zeroTail(img image, fi *filterInfo) error {
	d := fi.desc
	first := int64((d.Counters + 15) / 16)
	start := d.Offset + (first-1)*8
	if d.Counters%16 == 0 {
		start += 8
	}
	end := d.Offset + d.CounterBytes()
	buf := make([]byte, min(chunkSize, end-start))
	for pos := start; pos < end; pos += chunkSize {
		n := min(chunkSize, end-pos)
		if err := readFull(img, buf[:n], pos); err != nil {
			return err
		}
		for j := int64(0); j < n; j += 8 {
			w := le.Uint64(buf[j:])
			off := pos + j
			if off == d.Offset+(first-1)*8 {
				if pw, ok := p.words[off]; ok {
					w = pw
				}
				w &= 1<<(4*(d.Counters%16)) - 1
			} else {
				w = 0
			}
			if w != le.Uint64(buf[j:]) {
				p.words[off] = w
			}
		}
	}
	return nil
}

// writeTo writes the patch over dst, which holds a copy of the original.
func (p *patch) writeTo(dst io.WriterAt) error {
	if _, err := dst.WriteAt(p.head, 0); err != nil {
		return err
	}
	offs := make([]int64, 0, len(p.words))
	for off := range p.words {
		offs = append(offs, off)
	}
	slices.Sort(offs)
	var b [8]byte
	for _, off := range offs {
		le.PutUint64(b[:], p.words[off])
		if _, err := dst.WriteAt(b[:], off); err != nil {
			return err
		}
	}
	for off, b := range p.filters {
		if _, err := dst.WriteAt(b, off); err != nil {
			return err
		}
	}
	for off, b := range p.sums {
		if _, err := dst.WriteAt(b, off); err != nil {
			return err
		}
	}
	return nil
}

// apply returns a patched copy of img (in memory).
func (p *patch) apply(img image) ([]byte, error) {
	out := make([]byte, p.size)
	if p.ranges == nil {
		p.ranges = [][2]int64{{0, p.size}}
		defer func() { p.ranges = nil }()
	}
	for _, rg := range p.ranges {
		lo, hi := rg[0], min(rg[1], p.size, img.Size())
		if lo >= hi {
			continue
		}
		if err := readFull(img, out[lo:hi], lo); err != nil {
			return nil, err
		}
	}
	if err := p.writeTo(bytesImage(out)); err != nil {
		return nil, err
	}
	return out, nil
}
