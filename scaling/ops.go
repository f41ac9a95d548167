// Floor 4 (operations) of package scaling: Contains, Add and Remove:
// routing, the record, the counters.

package scaling

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
)

// HashKey is the native key hash of a file with the given seed
// (header.HashKey: the hash is part of the file format).
func HashKey(seed uint64, key []byte) uint64 { return header.HashKey(seed, key) }

// hashes holds a key's hash for each hash algorithm in the chain.
type hashes struct{ native, murmur uint64 }

// hash computes the key's hashes. The native hash is always computed (every
// filter appended from now on uses it); the original's only when the chain
// has a converted filter. Converted filters only ever come first, so a chain
// that grows never gains one.
func (f *Filter) hash(c *chain, key []byte) hashes {
	h := hashes{native: header.HashKey(f.params.Seed, key)}
	if c.hasMurmur {
		h.murmur = header.HashKeyOriginal(key)
	}
	return h
}

func (m *member) keyHash(h hashes) uint64 {
	if m.desc.HashID == header.HashMurmur3Orig {
		return h.murmur
	}
	return h.native + m.salt
}

func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// Contains reports whether key may have been added (and not removed): true
// for every key added and not removed, and for a small fraction of others
// (the false-positive rate). It asks every filter and never writes. After
// Close it reports false.
//
// Another handle may have grown the chain: then Contains first maps the new
// filters, retrying a directory that is being rewritten. If the new filters
// cannot be mapped even so (a damaged file), Contains cannot rule the key
// out and reports true; Stats().RefreshError says why.
func (f *Filter) Contains(key []byte) bool {
	// No atomic read-modify-write here (see mapKeep): holding the chain
	// keeps the mapping alive. A handle whose file was replaced fails
	// current (errRetry, or ErrClosed once it has moved): only then does
	// the call go to its successor.
	for {
		c, err := f.current()
		for f.again(err) {
			f = f.live()
			c, err = f.current()
		}
		if err != nil {
			return !errors.Is(err, ErrClosed)
		}
		found := containsIn(c, f.hash(c, key))
		runtime.KeepAlive(c)
		// The mapping may have been detached while it was read (the file
		// was replaced, or Close ran): "absent" then asks again.
		if found || c.keep.answered() {
			return found
		}
	}
}

func containsIn(c *chain, h hashes) bool {
	if len(c.f) == 1 {
		m := c.f[0]
		return m.cf.ContainsProbe(m.cf.Prepare(m.keyHash(h)))
	}
	// Prepare every filter's probe and prefetch its block before testing
	// any, so the cache misses of the chain overlap instead of following one
	// another (a prefetch, unlike a load, holds nothing up: the chain row of
	// docs/PERFORMANCE.md); then test newest first (recent keys are the
	// likelier hits).
	var probes [header.MaxFilters]counting4.Probe
	for i, m := range c.f {
		probes[i] = m.cf.Prepare(m.keyHash(h))
		m.cf.PrefetchProbe(probes[i])
	}
	for i := len(c.f) - 1; i >= 0; i-- {
		if c.f[i].cf.ContainsProbe(probes[i]) {
			return true
		}
	}
	return false
}

// ContainsString is Contains for a string key, without allocating.
func (f *Filter) ContainsString(key string) bool { return f.Contains(bytesOf(key)) }

// Add adds key, recording id as the id of the row it stands for. Ids pick
// the filter for a later Remove; they are usually increasing (a row id, a
// timestamp), but may repeat or go backwards. The key goes into the newest
// filter; when that is full a new filter is appended first.
func (f *Filter) Add(key []byte, id uint64) error {
	return f.modify(key, id, header.OpAdd)
}

// AddString is Add for a string key, without allocating.
func (f *Filter) AddString(key string, id uint64) error { return f.Add(bytesOf(key), id) }

// Remove removes key, which was added with id. It changes only a filter whose
// id range holds id and whose counters for key are all non-zero; if there is
// none it changes nothing and returns an error for which
// errors.Is(err, ErrNotPresent) holds.
func (f *Filter) Remove(key []byte, id uint64) error {
	return f.modify(key, id, header.OpRemove)
}

// RemoveString is Remove for a string key, without allocating.
func (f *Filter) RemoveString(key string, id uint64) error { return f.Remove(bytesOf(key), id) }

func (f *Filter) modify(key []byte, id uint64, op uint64) error {
	return f.fast.op(f, key, id, op) // (setWriter)
}

// modifySlow is modify's general path: everything, and the fast paths'
// fallback.
func (f *Filter) modifySlow(key []byte, id uint64, op uint64) error {
	err := f.modifyOnce(key, id, op)
	for f.again(err) { // the file was replaced (see Contains)
		f = f.live()
		err = f.modifyOnce(key, id, op)
	}
	return err
}

func (f *Filter) modifyOnce(key []byte, id uint64, op uint64) error {
	c, err := f.writableChain()
	if err != nil {
		return err
	}
	h := f.hash(c, key)
	t := prefetchTarget(c, h, id)
	g, err := f.w.startOp(f, h.native)
	if err != nil {
		return err
	}
	defer f.w.endOp(f, g)
	if c, err = f.current(); err != nil {
		return err
	}
	if op == header.OpAdd {
		return f.add(c, h, id, t)
	}
	return f.remove(c, h, id, t)
}

// target is the filter an operation most likely changes, with the key's
// hash and probe in it, prepared before the operation takes its locks
// (prefetchTarget). The zero target guesses nothing.
type target struct {
	m  *member
	kh uint64
	pr counting4.Probe
}

// prefetchTarget guesses the filter an operation with id changes (the
// newest whose range starts at or below id), prepares the key's probe in
// it and starts the miss of its block, before the operation takes its
// locks: a guess read without them, which only decides what is prepared
// (a prefetch never faults, nor changes anything). The operation's steps
// take the probe from it when they pick the same filter (probe).
func prefetchTarget(c *chain, h hashes, id uint64) target {
	m := c.f[c.guess(id)]
	kh := m.keyHash(h)
	pr := m.cf.Prepare(kh)
	m.cf.PrefetchProbe(pr)
	return target{m: m, kh: kh, pr: pr}
}

// guess returns the position in c.f of the newest filter whose min id
// is at or below id (0 if none): the filter an operation with id most
// likely changes (prefetchTarget, the fast paths). It walks c.lines, two
// loads a filter where c.f[j].line.MinID took four, so that a Remove of
// an old id in a long chain pays little for it (BenchmarkChainRemove).
func (c *chain) guess(id uint64) int {
	l := c.lines
	i := len(l) - 1
	for ; i > 0; i-- {
		if id >= atomic.LoadUint64(&l[i].MinID) {
			break
		}
	}
	return i
}

// probe returns the key hash and the prepared probe of the key of h in m:
// the guess's, if m is the guessed filter (a member never changes its
// filter), else prepared now, with its block's miss started.
func (t *target) probe(m *member, h hashes) (uint64, counting4.Probe) {
	if m == t.m {
		return t.kh, t.pr
	}
	kh := m.keyHash(h)
	pr := m.cf.Prepare(kh)
	m.cf.PrefetchProbe(pr)
	return kh, pr
}

// An Add or a Remove is a row of named steps, each its own function or
// call, in this order:
//
//	route   pick the filter (route, findLate, rangeTarget)
//	admit   reserve the Add's place in it (inside route: admit, admitChunked)
//	claim   start the block's miss, publish the operation in a record (claim)
//	gate    read the state after the record is published (gone; I2): back
//	        out of a filter retired, or a file frozen, since the chain was read
//	dirty   the dirty-first rule (ensureDirty; I1)
//	range   where a Remove will find it: the id range (widen) or the
//	        late-add index entry (insert; a Remove claims it)
//	apply   change the counters (AddProbe, RemoveProbe)
//	count   the item count (count, uncount), then release the admission
//	finish  make the record idle again (finish)
//
// A step that cannot go on with the chain it has says why, as a retry, and
// the operation starts over with the chain that reason leads to (retryWith).

// retry is why an attempt at an operation starts over: noRetry is none.
type retry int

const (
	noRetry        retry = iota
	retryFull            // the newest filter is full, or sealed by a growth: grow (growFull)
	retryIndexFull       // the pair's probe window in the late-add index is full: grow (growIndexFull)
	retrySealed          // an older filter was sealed by a growth since the chain was read: refresh
	retryGone            // the filter was retired, or the file is being replaced: routeAgain
	retryLostClaim       // a concurrent Remove claimed the late-add entry first: look again
)

func (f *Filter) add(c *chain, h hashes, id uint64, t target) error {
	if id > header.MaxID {
		return fmt.Errorf("%w: id %d is above 2^63-1", ErrInvalidID, id)
	}
	for {
		why, err := f.addOnce(c, h, id, &t)
		if why == noRetry || err != nil {
			return err
		}
		if c, err = f.retryWith(c, why); err != nil {
			return err
		}
	}
}

// addOnce is one attempt of an Add on chain c, step by step (see above).
func (f *Filter) addOnce(c *chain, h hashes, id uint64, t *target) (retry, error) {
	m, late, sh := route(f.w, c, id, h.native) // route, admit
	if m == nil {
		return retryFull, nil
	}
	if why, err := f.routed(m, late, sh); why != noRetry || err != nil {
		return why, err
	}
	kh, pr, r := f.claim(m, h, t, header.OpAdd)
	w := f.w
	if m.gone() {
		// Back out without touching its line again (its entry may be
		// reused), and without releasing the admission (see routeAgain).
		w.finish(r, false)
		return retryGone, nil
	}
	if late && lateSaturated(m, kh, id) {
		// A replay of a pair whose copies saturate: nothing to change
		// (header.IndexSaturated), and nothing to count.
		w.release(m, sh)
		w.finish(r, false)
		return noRetry, nil
	}
	why, err := noRetry, f.ensureDirty(&m.line.Mark)
	if err == nil {
		why = placeAdd(w, c, m, kh, id, late, r)
	}
	if why != noRetry || err != nil {
		w.release(m, sh)
		w.finish(r, false)
		return why, err
	}
	w.addCounters(m, pr, r)
	// Count, then release the admission (I7).
	w.count(m, r, 1)
	w.release(m, sh)
	w.finish(r, true)
	return noRetry, nil
}

// claim is the claim step of an operation op of the key of h on m: the
// miss of the key's block started (by prefetchTarget, or here: the
// bookkeeping that follows overlaps a prefetch, where a load would hold
// up its locked instructions), it publishes the operation in a record.
// The caller reads the state word next (the gate, gone): record first,
// then the state word (I2, docs/PROTOCOLS.md).
func (f *Filter) claim(m *member, h hashes, t *target, op uint64) (kh uint64, pr counting4.Probe, r *record) {
	kh, pr = t.probe(m, h)
	return kh, pr, f.w.claimRecord(f, kh, op, m)
}

// routed runs once an Add is routed to m, before its record is claimed:
// for a late Add (late) it allocates the index's blocks. allocIndex
// may wait for the growth lock, and a retirement or growth holding it may
// be waiting for this handle's records to finish.
func (f *Filter) routed(m *member, late bool, sh *quotaShard) (retry, error) {
	if !late {
		return noRetry, nil
	}
	err := f.allocIndex(m)
	switch {
	case err == nil:
		return noRetry, nil
	case errors.Is(err, errRetired):
		return retryGone, nil
	}
	f.w.release(m, sh)
	return noRetry, err
}

// placeAdd records the Add where a Remove from any process finds it, before
// the counters change: a late Add in the filter's index, a full probe
// window moving it to a new filter (I9); any other Add by widening the
// range (I8), which fails if a growth sealed the filter since the chain
// was read: the Add raced it and moves to the new filter.
func placeAdd(w writer, c *chain, m *member, kh, id uint64, late bool, r *record) retry {
	if late {
		if m.ix.insert(kh, id, r) {
			return noRetry
		}
		return retryIndexFull
	}
	if w.widen(m, id) {
		return noRetry
	}
	if m == c.f[len(c.f)-1] {
		// The newest filter is sealed: a growth is being published (or its
		// process died): grow finishes it, finds it, or (a sealed newest
		// filter with nothing after it) appends one.
		return retryFull
	}
	return retrySealed
}

// retryWith is the chain an operation starts over with after an attempt
// on c returned why.
func (f *Filter) retryWith(c *chain, why retry) (*chain, error) {
	var err error
	switch why {
	case retryFull:
		err = f.grow(c.end, growFull)
	case retryIndexFull:
		err = f.grow(c.end, growIndexFull)
	case retrySealed:
		err = f.refresh()
	case retryGone:
		return f.routeAgain()
	}
	if err != nil {
		return nil, err
	}
	return f.current()
}

func (f *Filter) remove(c *chain, h hashes, id uint64, t target) error {
	// A late Add (see route) is in the filter whose index holds it, whatever
	// the id ranges say; its entry is claimed before the counters change
	// (I10). One that loses the entry looks again: another late copy, or
	// the copy its id range holds.
	for {
		m, e, late := findLate(c, h, id)
		if !late {
			return f.removeInRange(c, h, id, &t)
		}
		if why, err := f.removeLate(m, h, id, e, &t); why != retryLostClaim {
			return err
		}
	}
}

// removeLate removes the late Add of (key, id) whose index entry in m is e:
// claim, then counters (I10); Repair puts the entry back for a Remove it
// undoes (recover/lateindex.go).
func (f *Filter) removeLate(m *member, h hashes, id uint64, e lateEntry, t *target) (retry, error) {
	kh, pr, r := f.claim(m, h, t, header.OpRemove)
	w := f.w
	if m.gone() {
		// The filter holding the key was retired since the chain was read:
		// the key is gone with it. Or the file is being replaced: wait,
		// and start over.
		w.finish(r, false)
		return noRetry, f.goneErr(ErrNotPresent)
	}
	if m.ix.saturated(e, m.cf, kh) {
		// Its copies saturate (header.IndexSaturated): the Remove succeeds
		// and changes nothing, as one of a saturated key does.
		w.finish(r, false)
		return noRetry, nil
	}
	if err := f.ensureDirty(&m.line.Mark); err != nil {
		w.finish(r, false)
		return noRetry, err
	}
	slot, ok := m.ix.claim(kh, id, e, r)
	if !ok {
		w.finish(r, false)
		return retryLostClaim, nil
	}
	if !removeCounted(w, m, pr, r) {
		// The counters no longer hold the key (a damaged file: no change
		// of this library's takes a late copy's counts without its entry).
		m.ix.restore(kh, id, slot, e.fp)
		w.finish(r, false)
		return noRetry, ErrNotPresent
	}
	w.finish(r, true)
	return noRetry, nil
}

// removeInRange removes key from the filter whose id range holds id.
func (f *Filter) removeInRange(c *chain, h hashes, id uint64, t *target) error {
	m, kh, pr, err := rangeTarget(c, h, id, t)
	if err != nil {
		return err
	}
	// The record is claimed while the block's miss is pending (a locked
	// instruction would wait for a load of the block, not for a
	// prefetch); the presence test follows. A Remove of an absent key then
	// claims a record and gives it back, but makes no counter change and
	// marks nothing dirty: where the filter is not yet marked dirty it
	// tests presence first. Once it is marked, a blocked filter's
	// RemoveProbe makes that test itself, from its snapshot of the block,
	// before it changes anything; the classic layout's decrements a word
	// at a time and undoes at a zero counter, which would lower other
	// keys' counters for a moment, so it keeps the test first.
	w := f.w
	r := w.claimRecord(f, kh, header.OpRemove, m)
	if m.gone() {
		// Its filter was retired since the chain was read: the key is
		// gone with it. Or the file is being replaced: wait, and start
		// over.
		w.finish(r, false)
		return f.goneErr(ErrNotPresent)
	}
	if m.cf.Layout().BlockWords() == 0 || !f.writable(&m.line.Mark) {
		if !m.cf.ContainsProbe(pr) {
			w.finish(r, false)
			return ErrNotPresent
		}
		if err := f.ensureDirty(&m.line.Mark); err != nil {
			w.finish(r, false)
			return err
		}
	}
	if !removeCounted(w, m, pr, r) {
		w.finish(r, false)
		return ErrNotPresent
	}
	w.finish(r, true)
	return nil
}

// removeCounted takes the key of probe pr out of m's counters, if they all
// hold it, and then one from m's item count.
func removeCounted(w writer, m *member, pr counting4.Probe, r *record) bool {
	if !w.removeCounters(m, pr, r) {
		return false
	}
	w.uncount(m, r, atomic.LoadUint64(&r.rec.Changed) != 0)
	return true
}

// rangeTarget returns the filter whose id range holds id and (for a file
// a 1.0 library grew, where several ranges may hold it) whose counters
// hold the key, with the key's probe prepared and its block's miss
// started. Where several ranges hold id the key must be in exactly one of
// them: decrementing the wrong one would take counts from other keys, so
// it refuses rather than guess (ErrAmbiguous).
func rangeTarget(c *chain, h hashes, id uint64, t *target) (*member, uint64, counting4.Probe, error) {
	only, n := inRange(c, id)
	switch n {
	case 0:
		return nil, 0, counting4.Probe{}, ErrNotPresent
	case 1:
		// (Always so in a file this version wrote.)
		kh, pr := t.probe(only, h)
		return only, kh, pr, nil
	}
	var found *member
	var pr counting4.Probe
	for i := len(c.f) - 1; i >= 0; i-- {
		m := c.f[i]
		if id < atomic.LoadUint64(&m.line.MinID) || id > atomic.LoadUint64(&m.line.MaxID)&header.MaxID {
			continue
		}
		if p := m.cf.Prepare(m.keyHash(h)); m.cf.ContainsProbe(p) {
			if found != nil {
				return nil, 0, counting4.Probe{}, ErrAmbiguous
			}
			found, pr = m, p
		}
	}
	if found == nil {
		return nil, 0, counting4.Probe{}, ErrNotPresent
	}
	return found, found.keyHash(h), pr, nil
}

// inRange returns how many filters' id ranges hold id (0, 1, or 2 for
// more), and the filter if only one does.
func inRange(c *chain, id uint64) (*member, int) {
	var only *member
	n := 0
	for i := len(c.f) - 1; i >= 0 && n < 2; i-- {
		m := c.f[i]
		if m.holds(id) {
			only = m
			n++
		}
	}
	return only, n
}

// lateSaturated reports whether a late Add of (key, id), of key hash kh,
// to m would change nothing: m's index holds the pair saturated.
func lateSaturated(m *member, kh, id uint64) bool {
	e, ok := m.ix.find(kh, id)
	return ok && m.ix.saturated(e, m.cf, kh)
}

// findLate returns the filter whose late-add index holds (key, id) and
// whose counters hold the key, newest first, and the index entry.
func findLate(c *chain, h hashes, id uint64) (*member, lateEntry, bool) {
	for i := len(c.f) - 1; i >= 0; i-- {
		m := c.f[i]
		if !m.indexAllocated() {
			continue
		}
		kh := m.keyHash(h)
		if !m.cf.ContainsProbe(m.cf.Prepare(kh)) {
			continue
		}
		if e, ok := m.ix.find(kh, id); ok {
			return m, e, true
		}
	}
	return nil, lateEntry{}, false
}

// writableChain returns the chain for a modification: ErrReadOnly on a
// read-only Filter, ErrClosed once closed.
func (f *Filter) writableChain() (*chain, error) {
	if f.ro {
		if f.closed.Load() {
			return nil, ErrClosed
		}
		return nil, ErrReadOnly
	}
	c := f.chain.Load()
	if c == nil {
		return nil, ErrClosed
	}
	return c, nil
}

// route picks the filter an Add with id goes to and admits the Add there
// (see admit), or returns nil if the newest filter is full and the chain
// must grow first. No two filters claim one id (I8, I9):
//   - an id inside or above the newest filter's range, or above the
//     frontier, goes to the newest (widening its range);
//   - an id inside the sealed range of an older filter goes to that filter
//     while it has room in its slack (an Add that raced a growth, a writer
//     a little behind the others, an id that repeats);
//   - any other id (at or below the frontier: a writer far behind the
//     others, ids going backwards) goes to the newest as a late Add (late
//     true): it leaves the range alone and is recorded in the filter's
//     late-add index, where Remove finds it. A filter without an index
//     (the first, or one a 1.0 library appended) takes it as 1.0 did, by
//     widening its range over an older one's.
//
// A chain with legacy set (the negative control
// testknobs.Knobs.LegacyRouting) routes every Add as version 1.0 did.
func route(w writer, c *chain, id, h uint64) (m *member, late bool, sh *quotaShard) {
	if c.legacy {
		return routeLegacy(w, c, id), false, nil
	}
	n := c.f[len(c.f)-1]
	if id >= atomic.LoadUint64(&n.line.MinID) || !c.sealed() || id > c.frontier {
		sh, ok := w.admitChunked(n, n.desc.Capacity, h)
		if !ok {
			return nil, false, nil
		}
		return n, false, sh
	}
	if m := routeSlack(w, c, id); m != nil {
		return m, false, nil
	}
	sh, ok := w.admitChunked(n, n.desc.Capacity, h)
	if !ok {
		return nil, false, nil
	}
	return n, n.ix.e != nil, sh
}

// routeSlack returns the older filter whose sealed range holds id, with the
// Add admitted to its slack, or nil.
func routeSlack(w writer, c *chain, id uint64) *member {
	for j := len(c.f) - 2; j >= 0; j-- {
		m := c.f[j]
		lo, hi := atomic.LoadUint64(&m.line.MinID), atomic.LoadUint64(&m.line.MaxID)&header.MaxID
		if lo <= id && id <= hi && w.admit(m, header.ItemLimit(m.desc.Capacity)) {
			return m
		}
	}
	return nil
}

// routeLegacy is version 1.0's routing: ids below the newest filter's range
// and outside every older one's slack widen the newest's range.
func routeLegacy(w writer, c *chain, id uint64) *member {
	n := c.f[len(c.f)-1]
	if id < atomic.LoadUint64(&n.line.MinID) {
		if m := routeSlack(w, c, id); m != nil {
			return m
		}
	}
	if !w.admit(n, n.desc.Capacity) {
		return nil
	}
	return n
}

// widen extends the filter's id range to hold id, max id then min id,
// before the counters change (I8). It fails if the range would have to
// grow and the filter is sealed.
func (sharedWriter) widen(m *member, id uint64) bool {
	for {
		v := atomic.LoadUint64(&m.line.MaxID)
		if id <= v&header.MaxID {
			break
		}
		if v&header.Sealed != 0 {
			return false
		}
		if atomic.CompareAndSwapUint64(&m.line.MaxID, v, id) {
			break
		}
	}
	for {
		v := atomic.LoadUint64(&m.line.MinID)
		if id >= v {
			return true
		}
		if atomic.LoadUint64(&m.line.MaxID)&header.Sealed != 0 {
			return false
		}
		if atomic.CompareAndSwapUint64(&m.line.MinID, v, id) {
			return true
		}
	}
}
