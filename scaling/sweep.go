// Floor 4 (operations) of package scaling: batched modifications sorted by
// block.

package scaling

import (
	"math"
	"math/bits"
	"sync/atomic"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/mmapfile"
)

// A swept batch: an exclusive handle's AddBatch applies a long run of keys
// bound for the newest filter in the order of their blocks, not the
// batch's (counting4.Filter.Order). Its stores then walk the counters from
// the first block to the last: the hardware prefetcher follows them, each
// page of a mapped file is dirtied once per batch (where the batch's order
// dirties pages at random, and a file larger than the kernel's dirty limits
// takes a write fault for each store to a page write-back cleaned), and
// the keys of one page share its page walk (docs/PERFORMANCE.md, "Swept
// batches", "A billion keys").
//
// The result is the batch's: Adds to one filter commute (a counter goes up
// by one, or stays at 15), and everything else an Add changes is settled
// before the sweep for the whole run: its admission (the room left, which
// the handle alone uses up), the id range (widened to the run's smallest and
// largest id), the dirty mark. Each key is then one Add's claim, block
// change, count and finish, as in addOnce, so a kill leaves what Repair
// repairs exactly (the keys before the cut in the sweep's order added, the
// cut one undone: TestMPSweepKill). Nothing else can change the chain
// meanwhile: the handle holds wmu for the batch, and every other writer of
// the file waits for its Close (I18).

// sweepMin is the shortest run AddBatch sweeps. Batches of 4096 keys
// gain from it already: a 4096-key exclusive AddBatch
// took a median 87 cpu-ns a key swept against 105 in order into a store
// of 1M keys, 97 against 117 at 10M (docs/PERFORMANCE.md, "Swept
// batches").
const sweepMin = 1 << 12

// BulkBatch is how many keys a bulk load should hand an exclusive
// handle's AddBatch at a time, for a newest filter of capacity keys: a
// 64th of the capacity, and at least 4096. AddBatch sweeps each batch in
// block order, so each batch writes every page of the filter once, and a
// file larger than the kernel's dirty limits loads fast only in few, long
// batches: 1e9 keys (a 7.4 GB file) took 411 s in batches of 4M keys,
// 155 s of 16M and 133 s of 64M; in batches of 4096, before the sweep,
// it ran at 8 µs a key, about 2.2 hours (docs/PERFORMANCE.md, "A billion
// keys"). The sweep keeps 16 bytes a key
// while it runs, on top of the caller's keys: cap the result to what the
// caller can hold.
func BulkBatch(capacity uint64) int { return int(min(max(capacity/64, sweepMin), math.MaxInt32)) }

// sweepKeep is the longest sort buffer (in words) a handle keeps between
// swept batches: 8 bytes a key and as many again, 1 MiB.
const sweepKeep = 1 << 17

// sweepAhead is how many keys ahead of the one it changes a sweep
// prefetches a block: the blocks come in order, but a page's first block
// is a miss the prefetcher cannot foresee.
const sweepAhead = 8

// sweepRun looks at the keys with ids ids, from the first on. If sweep,
// the first k of them are a run an Add would route to n, the newest filter
// of c, with room for all of them (sweepMin or more), with ids from lo to
// hi. Else the first k are to be added in order before the next look: all
// of them if no run can start (a shared handle, a filter without blocks),
// else up to the key that fills n (it grows the chain) or the first key not
// bound for n.
func (f *Filter) sweepRun(c *chain, ids []uint64) (k int, lo, hi uint64, sweep bool) {
	n := c.f[len(c.f)-1]
	room, ok := f.w.sweepRoom(n, n.desc.Capacity)
	switch {
	case !ok || c.legacy || !n.cf.Sweeps():
		return len(ids), 0, 0, false
	case room < sweepMin:
		return int(min(room+1, uint64(len(ids)))), 0, 0, false
	}
	ids = ids[:min(uint64(len(ids)), room)]
	first := atomic.LoadUint64(&n.line.MinID)
	lo, hi = header.MaxID, 0
	for i, id := range ids {
		// A valid id, and route's test for the newest filter.
		if id > header.MaxID || id < first && c.sealed() && id <= c.frontier {
			if i < sweepMin {
				return i + 1, 0, 0, false
			}
			return i, lo, hi, true
		}
		lo, hi = min(lo, id), max(hi, id)
	}
	if len(ids) < sweepMin {
		return len(ids) + 1, 0, 0, false // (the caller clips it)
	}
	return len(ids), lo, hi, true
}

// sweepAdd adds keys, all bound for c's newest filter n with ids from lo
// to hi, in the order of their blocks (see above). It reports false, having
// added nothing (n marked dirty, its range as it was), if n was sealed
// (then the caller adds them one by one).
func (f *Filter) sweepAdd(c *chain, keys [][]byte, lo, hi uint64, scratch *[]uint64) (bool, error) {
	n, w := c.f[len(c.f)-1], f.w
	if err := f.ensureDirty(&n.line.Mark); err != nil {
		return false, err
	}
	if !w.widen(n, lo) || !w.widen(n, hi) {
		return false, nil
	}
	if s, ok := f.r.(mmapfile.Sweeper); ok {
		defer s.Sweep(n.desc.Offset, n.desc.CounterBytes())()
	}
	if cap(*scratch) < 2*len(keys) {
		*scratch = make([]uint64, 2*len(keys))
	}
	os, tmp := (*scratch)[:len(keys)], (*scratch)[len(keys):2*len(keys)]
	if len(keys) > 0 {
		prefetchKeys(&keys[0], min(len(keys), batchKeysAhead))
	}
	for i, k := range keys {
		if a := i + batchKeysAhead; a < len(keys) && a%batchGroup == 0 {
			prefetchKeys(&keys[a], min(len(keys)-a, batchGroup))
		}
		os[i] = n.cf.Order(n.keyHash(f.hash(c, k)))
	}
	radixSortHigh(os, tmp, blockBits(n.cf))
	for i, o := range os {
		if a := i + sweepAhead; a < len(os) {
			_, p := n.cf.PrepareOrder(os[a])
			n.cf.PrefetchProbe(p)
		}
		kh, pr := n.cf.PrepareOrder(o)
		r := w.claimRecord(f, kh, header.OpAdd, n)
		w.addCounters(n, pr, r)
		w.count(n, r, 1)
		w.finish(r, true)
	}
	return true, nil
}

// blockBits is how many high bits of Order a sweep sorts by: enough to
// tell the filter's blocks apart: keys equal in their top bits.Len(blocks)
// bits of Order are in the same block or in two neighbours.
func blockBits(cf *counting4.Filter) uint {
	blocks := cf.Counters() / uint64(max(cf.Layout().BlockWords(), 1)*16)
	return uint(bits.Len64(blocks))
}

// radixDigit is the width of a pass of radixSortHigh: 2^11 counts (16 KiB)
// stay in the first-level cache.
const radixDigit = 11

// radixSortHigh sorts a by its top b bits (b ≤ 64), least significant
// digit first: a pass per radixDigit bits, each stable, through tmp (as
// long as a). The order of elements equal in their top b bits is left as
// it comes.
func radixSortHigh(a, tmp []uint64, b uint) {
	passes := (b + radixDigit - 1) / radixDigit
	src, dst := a, tmp[:len(a)]
	for p := passes; p > 0; p-- {
		shift := 64 - p*radixDigit
		if 64 < p*radixDigit {
			shift = 0
		}
		var count [1 << radixDigit]int
		for _, v := range src {
			count[(v>>shift)&(1<<radixDigit-1)]++
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for _, v := range src {
			d := (v >> shift) & (1<<radixDigit - 1)
			dst[count[d]] = v
			count[d]++
		}
		src, dst = dst, src
	}
	if passes%2 == 1 {
		copy(a, src)
	}
}
