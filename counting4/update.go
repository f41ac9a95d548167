package counting4

import (
	"sync/atomic"
	"unsafe"

	"github.com/dablooms/dablooms/header"
)

// AddProbe increments the counters of a prepared probe (saturating at 15),
// as AddAt does with the positions of Positions(h): the same counters, the
// same record protocol (evidence, doubt, compare-and-swap, changed, per
// word, in the order of each word's first position), and the same result.
// For the blocked layouts it computes every word's new value from one
// snapshot of the block without a branch per position, then changes each
// word with one compare-and-swap: AddAt's grouping loops, whose trip
// counts depend on the key, took with their CASes over half of a profiled
// Add and Remove (docs/PERFORMANCE.md, What each lever gained).
func (f *Filter) AddProbe(p Probe, rec *Record) {
	switch f.layout {
	case Blocked512:
		if rec.full() {
			casBlock(f, (*[BlockCounters512 / 16]uint64)(f.words[p.base>>4:]), p, true, rec)
			return
		}
		var c blockChange
		blk := (*[BlockCounters512 / 16]uint64)(f.words[p.base>>4:])
		computeBlock(&c, blk, p.s, f.k, true)
		f.addBlock(p, &c, blk[:], rec)
	case Blocked1024:
		if rec.full() {
			if casAsm1024 {
				casBlock1024(f, p, true, rec)
				return
			}
			casBlock(f, (*[BlockCounters1024 / 16]uint64)(f.words[p.base>>4:]), p, true, rec)
			return
		}
		var c blockChange
		blk := (*[BlockCounters1024 / 16]uint64)(f.words[p.base>>4:])
		computeBlock(&c, blk, p.s, f.k, true)
		f.addBlock(p, &c, blk[:], rec)
	default:
		var pos [MaxK]uint64
		f.layout.Positions(p.h, f.counters, f.k, pos[:])
		f.AddAt(pos[:f.k], rec)
	}
}

// RemoveProbe decrements the counters of a prepared probe if all are
// non-zero and reports whether it did, as RemoveAt does with the positions
// of Positions(h) (see AddProbe).
func (f *Filter) RemoveProbe(p Probe, rec *Record) bool {
	switch f.layout {
	case Blocked512:
		if rec.full() {
			return casBlock(f, (*[BlockCounters512 / 16]uint64)(f.words[p.base>>4:]), p, false, rec)
		}
		var c blockChange
		blk := (*[BlockCounters512 / 16]uint64)(f.words[p.base>>4:])
		computeBlock(&c, blk, p.s, f.k, false)
		return f.removeBlock(p, &c, blk[:], rec)
	case Blocked1024:
		if rec.full() {
			if casAsm1024 {
				return casBlock1024(f, p, false, rec)
			}
			return casBlock(f, (*[BlockCounters1024 / 16]uint64)(f.words[p.base>>4:]), p, false, rec)
		}
		var c blockChange
		blk := (*[BlockCounters1024 / 16]uint64)(f.words[p.base>>4:])
		computeBlock(&c, blk, p.s, f.k, false)
		return f.removeBlock(p, &c, blk[:], rec)
	}
	var pos [MaxK]uint64
	f.layout.Positions(p.h, f.counters, f.k, pos[:])
	return f.RemoveAt(pos[:f.k], rec)
}

// blockChange is one key's change to its block, computed from a snapshot:
// old[i] is word i of the block as read, delta[i] what the change adds to
// it (modulo 2^64: a decrement is a negative delta), chg[i] the mask of
// the positions whose counter it changes, and order[:n] the words the
// positions touch, in the order of their first position.
type blockChange struct {
	old, delta, chg [BlockCounters1024 / 16]uint64
	order           [32]uint8 // (32: indexed by n&31 without a bounds check)
	n               int
	bad             uint64 // a remove: some counter was zero
}

// chunkBits returns the layout's position width and positions per state
// word (Layout.chunks) for a block of nw words.
func chunkBits(nw int) (w uint, per int) {
	if nw == BlockCounters512/16 {
		return 7, 9
	}
	return 8, 8
}

// computeBlock fills c from block blk for the k positions of state s, for
// an add or a remove, walking the positions as blockedPositions does.
// Positions that share a counter change it once each, in order, as AddAt
// and RemoveAt do. It is generic, as containsBlock is, so that each block
// size gets constant widths and no bounds checks.
func computeBlock[B [BlockCounters512 / 16]uint64 | [BlockCounters1024 / 16]uint64](c *blockChange, blk *B, s uint64, k int, add bool) {
	w, per, nw := uint(8), 8, 16
	if unsafe.Sizeof(*blk) == BlockCounters512/2 {
		w, per, nw = 7, 9, 8
	}
	for i := 0; i < nw; i++ {
		c.old[i&15] = atomic.LoadUint64(&(*blk)[i])
	}
	var touched uint64
	n := 0
	for j := 0; ; s = header.Fmix64(s ^ golden) {
		x := s
		for end := min(j+per, k); j < end; j++ {
			pc := x & (1<<w - 1)
			x >>= w
			wi := pc >> 4 & 15
			sh := pc & 15 * 4
			v := (c.old[wi] + c.delta[wi]) >> sh & 15
			var d uint64
			if add {
				d = (v+1)>>4 ^ 1 // 1 unless saturated
				c.delta[wi] += d << sh
			} else {
				z := (v - 1) >> 63 // 1 if zero
				c.bad |= z
				d = ((v+1)>>4 ^ 1) &^ z // 1 unless saturated or zero
				c.delta[wi] -= d << sh
			}
			c.chg[wi] |= d << j
			c.order[n&31] = uint8(wi)
			n += int(touched>>wi&1 ^ 1)
			touched |= 1 << wi
		}
		if j >= k {
			break
		}
	}
	c.n = n
}

// wordGroup recomputes word wi's new value from cur for the positions of
// state s that fall in it, returning the new value and the positions
// changed, and for a remove whether a counter was zero: the slow path of a
// compare-and-swap that lost to another writer.
func wordGroup(nw int, s uint64, k int, wi uint64, cur uint64, add bool) (nv, chg uint64, zero bool) {
	w, per := chunkBits(nw)
	mask := uint64(nw - 1)
	nv = cur
	for j := 0; ; s = header.Fmix64(s ^ golden) {
		x := s
		for end := min(j+per, k); j < end; j++ {
			pc := x & (1<<w - 1)
			x >>= w
			if pc>>4&mask != wi {
				continue
			}
			sh := pc & 15 * 4
			switch v := nv >> sh & 15; {
			case v == 15:
			case add:
				nv += 1 << sh
				chg |= 1 << j
			case v == 0:
				zero = true
			default:
				nv -= 1 << sh
				chg |= 1 << j
			}
		}
		if j >= k {
			return nv, chg, zero
		}
	}
}

// addBlock applies c, computed for probe p in block blk.
func (f *Filter) addBlock(p Probe, c *blockChange, blk []uint64, rec *Record) {
	first := p.base >> 4
	for i := range c.n {
		wi := uint64(c.order[i])
		m := c.chg[wi]
		if m == 0 {
			continue // every counter of the word is saturated
		}
		old, nv := c.old[wi], c.old[wi]+c.delta[wi]
		for !f.cas(first+wi, old, nv, m, rec) {
			// Another writer changed the word since the snapshot.
			old = atomic.LoadUint64(&blk[wi])
			if nv, m, _ = wordGroup(len(blk), p.s, f.k, wi, old, true); m == 0 {
				break
			}
		}
		if m != 0 {
			rec.set(m)
		}
	}
	rec.doubt(0)
}

// removeBlock applies c, computed for probe p in block blk, unless it
// found a zero counter.
func (f *Filter) removeBlock(p Probe, c *blockChange, blk []uint64, rec *Record) bool {
	if c.bad != 0 {
		return false // a counter is zero: the key is not there
	}
	first := p.base >> 4
	var done uint64 // the positions of the words changed so far
	for i := range c.n {
		wi := uint64(c.order[i])
		m := c.chg[wi]
		if m != 0 {
			old, nv := c.old[wi], c.old[wi]+c.delta[wi]
			for !f.cas(first+wi, old, nv, m, rec) {
				old = atomic.LoadUint64(&blk[wi])
				var zero bool
				nv, m, zero = wordGroup(len(blk), p.s, f.k, wi, old, false)
				if zero {
					// Another remover got there first: restore what this
					// one changed.
					var pos [MaxK]uint64
					f.layout.Positions(p.h, f.counters, f.k, pos[:])
					f.undo(pos[:f.k], -1, rec, done)
					rec.doubt(0)
					return false
				}
				if m == 0 {
					break
				}
			}
			if m != 0 {
				rec.set(m)
			}
		}
		// (Positions left alone, saturated, need no undo: a counter at 15
		// stays there.)
		done |= m
	}
	rec.doubt(0)
	return true
}

// AddExcl is AddProbe for a caller that is, for now, the only writer of
// the filter's words, in every process, and makes one change at a time
// (scaling's exclusive writer): it stores each word's new value
// (StoreOrdered) where AddProbe compares and swaps it, with the same
// record protocol. A store cannot lose another writer's update only
// because there is none: a caller that breaks the promise loses counts
// (the negative control of scaling's TestExclusiveHoldsOtherWriters).
// Lookups from anywhere stay safe: each word is stored whole, and no
// counter ever goes below what the keys added and not removed need.
//
// Without an undo block (SetUndo) it is a plain read-modify-write per
// position, each a step of the record protocol of its own (evidence,
// doubt, store, changed), in position order. Nothing else changes the
// words, so no step can fail, and no position has to wait for a snapshot
// of the whole block: the loads of one key's words, and the next key's,
// start as early as the processor can issue them (the snapshot and
// per-word grouping of AddProbe's compare-and-swaps cost more than the
// swaps in a single writer: docs/PERFORMANCE.md, "Tried, did not help",
// computeBlock).
//
// For the blocked layouts it walks the positions in the block as
// containsBlock does, generic over the block size so that the chunk widths
// are constants: with them as variables, as updateExcl has them, a bulk
// key took 5 to 9 ns more (BenchmarkBlockAddFloor).
func (f *Filter) AddExcl(p Probe, rec *Record) {
	switch f.layout {
	case Blocked512:
		if f.ub != nil {
			updateUndo(f, (*[BlockCounters512 / 16]uint64)(f.words[p.base>>4:]), p.base>>4, p.s, true, rec.changedWord())
			return
		}
		addExclBlock((*[BlockCounters512 / 16]uint64)(f.words[p.base>>4:]), p.base>>4, p.s, f.k, rec)
		f.touch(p.base >> 4) // (a block lies in one page)
	case Blocked1024:
		if f.ub != nil {
			if first := p.base >> 4; undo1024Asm {
				// updateUndo's steps in one call, the counters changed
				// in place (no copy of the block to change and store).
				if undoAdd1024(f.ub.Saved, f.ub.Block, f.ubEntry|(first+1), &f.words[first], p.s, f.k, rec.changedWord()) != 0 {
					f.touch(first) // (a block lies in one page)
				}
				return
			}
			updateUndo(f, (*[BlockCounters1024 / 16]uint64)(f.words[p.base>>4:]), p.base>>4, p.s, true, rec.changedWord())
			return
		}
		addExclBlock((*[BlockCounters1024 / 16]uint64)(f.words[p.base>>4:]), p.base>>4, p.s, f.k, rec)
		f.touch(p.base >> 4)
	default:
		f.updateExcl(p, 1, rec)
	}
}

// addExclBlock is AddExcl for block blk, word first of the filter, and
// position state s: the steps of updateExclAt with dir 1, in the same
// position order (blockedPositions').
func addExclBlock[B [BlockCounters512 / 16]uint64 | [BlockCounters1024 / 16]uint64](blk *B, first, s uint64, k int, rec *Record) {
	w, per := uint(8), 8
	if unsafe.Sizeof(*blk) == BlockCounters512/2 { // (see containsBlock)
		w, per = 7, 9
	}
	for j := 0; ; s = header.Fmix64(s ^ golden) {
		x := s
		for end := min(j+per, k); j < end; j++ {
			c := x & (1<<w - 1)
			x >>= w
			word, sh := &(*blk)[c>>4], c&15*4
			old := atomic.LoadUint64(word)
			if old>>sh&15 == 15 {
				continue // saturated: stays
			}
			nw := old + 1<<sh
			rec.propose(first+c>>4, nw, 1<<j)
			StoreOrdered(word, nw)
			rec.set(1 << j)
		}
		if j >= k {
			break
		}
	}
	rec.doubt(0)
}

// updateExcl adds dir (1, or ^0 for -1) to each of the key's counters
// that is not saturated, a record step per position (AddExcl); for a
// Remove (dir ^0) only if every counter holds the key (RemoveExcl).
func (f *Filter) updateExcl(p Probe, dir uint64, rec *Record) bool {
	if f.k <= smallK {
		var pos [smallK]uint64 // not MaxK: zeroing 512 bytes per key costs more than the rest of the setup
		return f.updateExclAt(p, pos[:f.k], dir, rec)
	}
	var pos [MaxK]uint64
	return f.updateExclAt(p, pos[:f.k], dir, rec)
}

// updateExclAt is updateExcl with pos (len k) to hold the key's positions.
func (f *Filter) updateExclAt(p Probe, pos []uint64, dir uint64, rec *Record) bool {
	f.probePositions(p, pos)
	if dir != 1 && !f.holdsExcl(pos) {
		return false
	}
	w := f.words
	for j, c := range pos {
		i, sh := c>>4, c&15*4
		old := atomic.LoadUint64(&w[i])
		if old>>sh&15 == 15 {
			continue // saturated: stays
		}
		nw := old + dir<<sh // dir ^0: old - 1<<sh (modulo 2^64), the counter is not 0
		rec.propose(i, nw, 1<<j)
		StoreOrdered(&w[i], nw)
		f.touch(i)
		rec.set(1 << j)
	}
	rec.doubt(0)
	return true
}

// smallK is the largest k whose positions AddExcl and RemoveExcl keep in a
// short array (Size picks k = 6 to 13 for error rates of 1 % to 0.01 %);
// a larger k takes a MaxK array.
const smallK = 16

// probePositions writes the key's positions into pos (len k): those of
// Positions(p.h), taken from the probe's block and state where the layout
// is blocked instead of deriving them again.
func (f *Filter) probePositions(p Probe, pos []uint64) {
	if w, per := f.layout.chunks(); w != 0 {
		walkPositions(p.base, p.s, f.k, pos, w, per)
		return
	}
	f.layout.Positions(p.h, f.counters, f.k, pos)
}

// RemoveExcl is RemoveProbe for a caller that is the only writer (see
// AddExcl). It decides before its first store, as removeBlock does: every
// counter not saturated must hold at least one count per position of the
// key that falls on it, or the key is absent and nothing is stored.
// (Decrementing position by position and undoing at a zero would, for a
// false positive whose positions share a counter holding 1, take that
// counter to zero for a moment: a lookup of a present key could miss it
// meanwhile.) Nothing else writes, so the check stays true while the
// stores follow.
func (f *Filter) RemoveExcl(p Probe, rec *Record) bool {
	switch {
	case f.ub == nil:
	case f.layout == Blocked512:
		return updateUndo(f, (*[BlockCounters512 / 16]uint64)(f.words[p.base>>4:]), p.base>>4, p.s, false, rec.changedWord())
	case f.layout == Blocked1024:
		if first := p.base >> 4; undo1024Asm {
			mask, ok := undoRemove1024(f.ub.Saved, f.ub.Block, f.ubEntry|(first+1), &f.words[first], p.s, f.k, rec.changedWord())
			if mask != 0 {
				f.touch(first) // (a block lies in one page)
			}
			return ok
		}
		return updateUndo(f, (*[BlockCounters1024 / 16]uint64)(f.words[p.base>>4:]), p.base>>4, p.s, false, rec.changedWord())
	}
	return f.updateExcl(p, ^uint64(0), rec)
}

// holdsExcl reports whether the counters at pos hold a key: every one not
// saturated holds at least one count per position of the key on it.
func (f *Filter) holdsExcl(pos []uint64) bool {
	w := f.words
	for j, c := range pos {
		v := atomic.LoadUint64(&w[c>>4]) >> (c & 15 * 4) & 15
		if v == 15 {
			continue // saturated: stays
		}
		var earlier uint64 // positions before j on the same counter
		for _, e := range pos[:j] {
			if e == c {
				earlier++
			}
		}
		if v <= earlier {
			return false
		}
	}
	return true
}
