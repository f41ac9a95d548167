// Floor 4 (operations) of package scaling: the straight-line Add and
// Remove of the common case, one for each writer.

package scaling

import (
	"sync/atomic"
	"unsafe"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
)

// The straight-line Add and Remove of each writer (exclFast for the
// exclusive writer, sharedFast for a shared handle): the common case of
// ops.go's steps, written out in one function each, with ops.go's
// general path as the fallback for everything else.
//
// The common case is an Add whose id is at or above the newest filter's
// min id, or a Remove whose id one filter's range alone holds, in a chain
// with no filter of the original's hash, no late-add index allocated, not
// routed as 1.0 did (testknobs.Knobs.LegacyRouting), and no route hook
// (testknobs.Knobs.RouteHook: the writer is then wrapped, and setWriter
// chooses the general path alone); the chain still current under the hold, the filter not
// gone, marked dirty in this epoch (an Add marks it; a Remove falls back),
// with admission room counted in process memory, an id range that needs
// no widening over a seal, and a blocked layout for a Remove (its counter
// update decides before its first store). Everything else falls back
// before it changes anything, or, once it has claimed the record, after
// finishing it as not completed, which changes nothing either (I6).
//
// The steps are ops.go's, in its order and with its stores (claim, gate,
// dirty, range, apply, count, finish): a kill at any instruction leaves
// what the general path leaves there (I18). What it saves is the general
// path's structure: the writer's methods behind an interface, the retry
// loops, the target guessed and looked up again, the deferred unlock.
// Nothing between the hold's Lock and Unlock panics but a fault on the
// mapping, which kills the process (no SetPanicOnFault here), so the hold
// is released without a defer.

// setWriter makes w the handle's writer (writer.go), wrapped in a
// routeHookWriter if its knobs have a RouteHook, and chooses the path of
// its Adds and Removes (fastPath): the hook and the path are chosen here,
// once, and no step of an operation tests for them.
func (f *Filter) setWriter(w writer) {
	f.fast = fastPath{op: (*Filter).modifySlow}
	switch w := w.(type) {
	case *exclWriter:
		f.fast = fastPath{op: (*Filter).exclFast, excl: w}
	case sharedWriter:
		f.fast.op = (*Filter).sharedFast
	}
	if f.tk != nil && f.tk.RouteHook != nil {
		w = routeHookWriter{writer: w, hook: f.tk.RouteHook}
		f.fast = fastPath{op: (*Filter).modifySlow} // (the hook is the general path's)
	}
	f.w = w
}

// fastPath is how a handle's Add and Remove run, chosen with its writer
// (setWriter): by the straight-line path of the writer (fastpath.go) or,
// for a wrapped writer, by the general path alone. One indirect call,
// where a type switch on the writer cost 17 instructions an operation
// (bench/instructions.sh).
type fastPath struct {
	op   func(f *Filter, key []byte, id uint64, op uint64) error // exclFast, sharedFast or modifySlow
	excl *exclWriter                                             // exclFast's writer, f.w itself
}

// exclFast runs the Add (op header.OpAdd) or Remove of key with id on f,
// whose writer is f.fast.excl: the common case here, everything else by
// the general path (modifySlow), called before anything changed. Both
// operations are written out in this one function, sharing the jumps at
// its end: a function for each, called from here, cost 26 instructions
// an operation (bench/instructions.sh).
func (f *Filter) exclFast(key []byte, id uint64, op uint64) error {
	// The key's bytes first: where keys come from a large buffer in any
	// order their first load is a miss, which the steps before the hash
	// then hide (docs/PERFORMANCE.md, "What each lever gained").
	prefetchKey(unsafe.SliceData(key))
	w := f.fast.excl
	c := f.chain.Load()
	if c == nil || c.hasMurmur || c.legacy || id > header.MaxID {
		return f.modifySlow(key, id, op)
	}
	// Guess the filter and start its block's miss before the hold, as
	// prefetchTarget does; everything is decided again under it. (The
	// prefetch is written out in both writers' paths: calling
	// prefetchTarget cost 35 instructions an operation;
	// bench/instructions.sh.)
	m := c.f[c.guess(id)]
	kh := header.HashKey(f.params.Seed, key) + m.salt
	pr := m.cf.Prepare(kh)
	m.cf.PrefetchProbe(pr)
	w.wmu.Lock()
	if f.closed.Load() || f.chain.Load() != c || f.stale(c) {
		goto slow
	}
	if op == header.OpAdd {
		// route, admit: the newest filter, with room counted
		// (exclWriter.admit).
		if m != c.f[len(c.f)-1] || id < atomic.LoadUint64(&m.line.MinID) ||
			m.room == 0 || m.roomLimit != m.desc.Capacity {
			goto slow
		}
		// claim, gate (I2).
		r := &f.rec[0]
		rec := r.rec
		counting4.StoreOrdered2(&rec.Hash, kh, &rec.Op, uint64(header.OpWord(atomic.LoadUint64(&rec.Op)).Begin(header.OpAdd, m.idx)))
		if m.gone() {
			goto undone
		}
		// dirty (I1).
		if !f.writable(&m.line.Mark) {
			if err := f.ensureDirty(&m.line.Mark); err != nil {
				r.endExcl(false)
				w.wmu.Unlock()
				return err
			}
		}
		// range (I8): exclWriter.widen, which needs no widening over a
		// seal here.
		v, lo := atomic.LoadUint64(&m.line.MaxID), atomic.LoadUint64(&m.line.MinID)
		if id > v&header.MaxID {
			if v&header.Sealed != 0 {
				goto undone
			}
			counting4.StoreOrdered(&m.line.MaxID, id)
		}
		if id < lo {
			counting4.StoreOrdered(&m.line.MinID, id)
		}
		m.room--
		// apply, count, finish.
		rc := r.counters()
		m.cf.AddExcl(pr, &rc)
		if p := m.own; p != nil && m.ownMarked.Load() { // (exclWriter.count's common case)
			counting4.StoreOrdered(p, atomic.LoadUint64(p)+1)
			m.ps.mark(m.countsPage)
		} else {
			w.count(m, r, 1)
		}
		r.endExcl(true)
		w.wmu.Unlock()
		return nil
	}
	// The Remove. Route (removeRoute).
	if !removeRoute(c, m, id) {
		goto slow
	}
	{
		// claim, gate (I2).
		r := &f.rec[0]
		rec := r.rec
		counting4.StoreOrdered2(&rec.Hash, kh, &rec.Op, uint64(header.OpWord(atomic.LoadUint64(&rec.Op)).Begin(header.OpRemove, m.idx)))
		if m.gone() || !f.writable(&m.line.Mark) {
			goto undone // (not marked dirty: removeInRange tests presence first)
		}
		// apply: RemoveExcl decides before its first store (I5).
		rc := r.counters()
		if !m.cf.RemoveExcl(pr, &rc) {
			r.endExcl(false)
			w.wmu.Unlock()
			return ErrNotPresent
		}
		// count, finish.
		if p := m.own; p != nil && m.ownMarked.Load() && atomic.LoadUint64(&rec.Changed) != 0 {
			counting4.StoreOrdered(p, atomic.LoadUint64(p)-1) // (exclWriter.uncount's common case)
			m.ps.mark(m.countsPage)
		} else {
			w.uncount(m, r, atomic.LoadUint64(&rec.Changed) != 0)
		}
		r.endExcl(true)
		w.wmu.Unlock()
		return nil
	}
undone: // the record claimed, nothing changed: finished as not completed (I6)
	f.rec[0].endExcl(false)
slow:
	w.wmu.Unlock()
	return f.modifySlow(key, id, op)
}

// removeRoute reports whether a Remove of id from m is the fast paths'
// case: m's layout is blocked (its counter update decides before its
// first store), no filter of c has a late-add index allocated (findLate
// has no copy to look for), and of c's id ranges m's alone holds id
// (rangeTarget). m must be the filter the fast paths guessed: the newest
// of c whose min id was at or below id when the guess read it.
//
// Why m's range alone, where c.disjoint holds and the newest's min id is
// above the frontier: the filters after m had min ids above id, and only
// the newest's can have come down since, to above the frontier (a sealed
// filter's, by an Add that raced its seal, to above the frontier that Add
// read, which an older range's max id never passes); the sealed filters
// before m end below m's min id (disjoint), and if m is the newest they
// end at or below the frontier, below its min id. (A sealed range read
// empty may still gain ids by an Add that raced the seal, but only ids
// above the frontier that Add read and at most its max id, which this
// chain's frontier counts: loadChain.) So the walk is one load per
// filter (its index state word), not three.
// Anything else (a file a 1.0 library grew, whose ranges may overlap)
// falls back.
func removeRoute(c *chain, m *member, id uint64) bool {
	if !m.blocked || !c.disjoint {
		return false
	}
	for _, l := range c.lines {
		if atomic.LoadUint64(&l.Index) == header.IndexAllocated { // (indexAllocated, or damage: fall back)
			return false
		}
	}
	return m.holds(id) && (!c.sealed() || atomic.LoadUint64(&c.f[len(c.f)-1].line.MinID) > c.frontier)
}

// fastRecords is how many of a handle's records sharedFast chooses among:
// those whose word of the count line is their own (header.CountWord), so
// that its count is a plain store where the file has
// header.FlagRecordCounts (sharedWriter.count).
const fastRecords = header.CountWords - 1

// sharedFast is exclFast for a shared handle (its writer sharedWriter):
// the same common case, with a shared handle's steps (the chunked
// admission from a reservation the shard still holds, a record of the
// slot, compare-and-swaps), each the sharedWriter method the general path
// calls or its first test inlined; what it does not take it leaves to the
// general path (modifySlow), before it changed anything. Its guard is the
// claim of its record (claim): shutdown waits for claimed records as for
// guards, and the claim is taken before closed and the chain are read, as
// enter takes a guard.
// One record is tried, one of the first fastRecords; if another goroutine
// has it, the general path looks further. An Add that finds its
// filter gone at the gate leaves its admission unreleased, as addOnce does.
func (f *Filter) sharedFast(key []byte, id uint64, op uint64) error {
	c := f.chain.Load()
	if c == nil || f.ro || c.hasMurmur || c.legacy || id > header.MaxID {
		return f.modifySlow(key, id, op)
	}
	m := c.f[c.guess(id)]
	h := header.HashKey(f.params.Seed, key)
	kh := h + m.salt
	pr := m.cf.Prepare(kh)
	m.cf.PrefetchProbe(pr)
	// (fastrange: kh % 7 took 6 instructions more.)
	r := &f.rec[(kh>>32)*fastRecords>>32]
	if !r.claim() { // (enter)
		return f.modifySlow(key, id, op)
	}
	if f.closed.Load() || f.chain.Load() != c || f.stale(c) {
		r.free()
		return f.modifySlow(key, id, op)
	}
	var ok bool
	var err error
	if op == header.OpAdd {
		ok, err = f.sharedFastAdd(c, m, h, kh, pr, id, r)
	} else {
		ok, err = f.sharedFastRemove(c, m, kh, pr, id, r)
	}
	if !ok {
		return f.modifySlow(key, id, op)
	}
	return err
}

// sharedFastAdd is sharedFast's Add to m with claimed record r, which it
// frees.
func (f *Filter) sharedFastAdd(c *chain, m *member, h, kh uint64, pr counting4.Probe, id uint64, r *record) (bool, error) {
	var w sharedWriter
	// route, admit: the newest filter, from a reservation its shard holds
	// (admitChunked's first case), or else from admitChunked (a new chunk;
	// one in 32 Adds), which refuses where the general path grows.
	if m != c.f[len(c.f)-1] || id < atomic.LoadUint64(&m.line.MinID) || m.gone() ||
		quotaChunk(m.desc.Capacity) < 2 || atomic.LoadUint64(&m.line.MaxID)&header.Sealed != 0 {
		r.free()
		return false, nil
	}
	// claim (I2): the record first, then the state word, with a locked
	// instruction between them, or x86 may let the gate's loads pass the
	// op word's store. r.begin makes that store an XCHG; here the take's
	// compare-and-swap is that instruction, and the op word is stored
	// plainly before it. A take that makes none (the reservation used up)
	// stores the op word again with an XCHG before admitChunked.
	rec := r.rec
	counting4.StoreOrdered2(&rec.Hash, kh, &rec.Op, uint64(header.OpWord(atomic.LoadUint64(&rec.Op)).Begin(header.OpAdd, m.idx)))
	s := &m.quota[h%quotaShards]
	if !s.take() {
		atomic.StoreUint64(&rec.Op, atomic.LoadUint64(&rec.Op))
		var ok bool
		if s, ok = w.admitChunked(m, m.desc.Capacity, h); !ok {
			w.finish(r, false)
			return false, nil
		}
	}
	// gate.
	if m.gone() {
		w.finish(r, false)
		return false, nil
	}
	// dirty (I1).
	if !f.writable(&m.line.Mark) {
		if err := f.ensureDirty(&m.line.Mark); err != nil {
			w.release(m, s)
			w.finish(r, false)
			return true, err
		}
	}
	// range (I8).
	if id > atomic.LoadUint64(&m.line.MaxID)&header.MaxID || id < atomic.LoadUint64(&m.line.MinID) {
		if !w.widen(m, id) {
			w.release(m, s)
			w.finish(r, false)
			return false, nil
		}
	}
	// apply, count, then release the admission (I7), finish.
	rc := r.counters()
	m.cf.AddProbe(pr, &rc)
	if p := m.recCount(r); p != nil { // (sharedWriter.count's common case)
		counting4.StoreOrdered(p, atomic.LoadUint64(p)+1)
		// The release's locked add is the barrier the count store needs
		// before the mark reads the changed map (count).
		w.release(m, s)
		m.ps.mark(m.countsPage)
	} else {
		w.count(m, r, 1)
		w.release(m, s)
	}
	w.finish(r, true)
	return true, nil
}

// sharedFastRemove is sharedFast's Remove from m with claimed record r,
// which it frees.
func (f *Filter) sharedFastRemove(c *chain, m *member, kh uint64, pr counting4.Probe, id uint64, r *record) (bool, error) {
	var w sharedWriter
	if !removeRoute(c, m, id) {
		r.free()
		return false, nil
	}
	r.begin(kh, header.OpRemove, m)
	if m.gone() || !f.writable(&m.line.Mark) {
		w.finish(r, false)
		return false, nil
	}
	rc := r.counters()
	if !m.cf.RemoveProbe(pr, &rc) {
		w.finish(r, false)
		return true, ErrNotPresent
	}
	if p := m.recCount(r); p != nil && atomic.LoadUint64(&r.rec.Changed) != 0 { // (sharedWriter.uncount's common case)
		// (No barrier before the mark, as count has: this Remove passed
		// its dirty check before it changed anything, so a Flush that
		// takes the marks began after that check and read the records
		// after its BeginFlush, finding this one in flight, and took
		// nothing (I3).)
		counting4.StoreOrdered(p, atomic.LoadUint64(p)-1)
		m.ps.mark(m.countsPage)
	} else {
		w.uncount(m, r, atomic.LoadUint64(&r.rec.Changed) != 0)
	}
	w.finish(r, true)
	return true, nil
}
