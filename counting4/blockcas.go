package counting4

import (
	"sync/atomic"
	"unsafe"

	"github.com/dablooms/dablooms/header"
)

// casBlock is AddProbe (add) and RemoveProbe for a blocked filter and a
// full record (Changed, Doubt, Word and New): the same counters, record
// steps and result as computeBlock with addBlock or removeBlock, in fewer
// instructions. It reads each word of the block the key touches once, when
// its first position comes (computeBlock read all of them, and zeroed a
// struct of 432 bytes, per key), walks the positions with a counter's
// one from a table (no shift by a variable count per position), and per
// changed word makes the record's steps without a call of its own: the
// changed mask of the word before it and this word's evidence and doubt,
// then the compare-and-swap, all the words in one call of assembly on
// amd64 (casWords) until a swap fails. The block's page
// is marked once, after the last swap: a block lies in one page, and the
// mark only has to follow each change (I3 of docs/PROTOCOLS.md: a flush
// that read the page between two of the swaps finds it marked again). It
// reports false for a Remove whose key the counters do not hold. (A
// Blocked1024 block on amd64 is casBlock1024's.)
func casBlock[B [BlockCounters512 / 16]uint64 | [BlockCounters1024 / 16]uint64](f *Filter, blk *B, p Probe, add bool, rec *Record) bool {
	// (unsafe.Sizeof does not evaluate *blk, len(*blk) would: see
	// containsBlock.)
	w, per, nw := uint(8), 8, int(unsafe.Sizeof(*blk)/8)
	if nw == BlockCounters512/16 {
		w, per = 7, 9
	}
	const nwMax = BlockCounters1024 / 16
	b := unsafe.Slice((*uint64)(unsafe.Pointer(blk)), nw) // (indexed without the dictionary)
	var st blockWords
	old, nv, chg, order := &st.old, &st.nv, &st.chg, &st.order
	var seen uint64
	n := 0
	ones := &nibbleOne
	bit, s := uint64(1), p.s
	for left := f.k; ; s = header.Fmix64(s ^ golden) {
		x, m := s, min(left, per)
		left -= m
		for ; m > 0; m-- {
			c := x & (1<<w - 1)
			x >>= w
			wi, one := c>>4&uint64(nw-1), ones[c&15]
			if seen>>wi&1 == 0 {
				seen |= 1 << wi
				v := atomic.LoadUint64(&b[wi])
				old[wi], nv[wi] = v, v
				order[n&(nwMax-1)] = uint8(wi)
				n++
			}
			o := nv[wi]
			switch {
			case o&(15*one) == 15*one: // saturated: stays
			case add:
				nv[wi] = o + one
				chg[wi] |= bit
			case o&(15*one) == 0:
				return false // a counter is zero: the key is not there
			default:
				nv[wi] = o - one
				chg[wi] |= bit
			}
			bit <<= 1
		}
		if left == 0 {
			break
		}
	}
	first := p.base >> 4
	changed0 := atomic.LoadUint64(rec.Changed)
	changed := changed0
	for i := 0; ; i++ {
		// The swaps, until one fails (casWords).
		if i, changed = casWords(&b[0], &st, i, n, rec, first+1, changed); i >= n {
			break
		}
		// Another writer changed word wi since it was read: its changed
		// mask, evidence and doubt are stored.
		wi := uint64(order[i&(nwMax-1)])
		for {
			o := atomic.LoadUint64(&b[wi])
			v, m, zero := wordGroup(nw, p.s, f.k, wi, o, add)
			if !add && zero {
				f.restoreLostRemove(p, rec, changed&^changed0)
				return false
			}
			if m == 0 {
				break
			}
			StoreOrdered(rec.Word, first+wi+1)
			StoreOrdered(rec.New, v)
			StoreOrdered(rec.Doubt, m)
			if atomic.CompareAndSwapUint64(&b[wi], o, v) {
				changed |= m
				break
			}
		}
		// (Positions left alone, saturated, need no undo: a counter at 15
		// stays there.)
	}
	StoreOrdered(rec.Changed, changed)
	f.touch(first) // (a block lies in one page)
	rec.doubt(0)
	return true
}

// casBlock1024 is casBlock for a Blocked1024 block where casAsm1024
// holds (amd64): the walk, the swaps and the retries of words another
// writer changed are one call of assembly, casUpdate1024, which keeps
// the words as read, their new values and masks in its frame (casBlock
// zeroed a struct of 432 bytes for them, and made two calls); the block's
// 16 words are read at once, before the walk, where casBlock reads each
// at its first position: either way a word's swap succeeds only if the
// word is still as read, and otherwise the retry reads it again. The
// record's steps and their order, the counters and the result are
// casBlock's. What stays here is what follows the last swap (the page's
// mark, then the doubt cleared, as casBlock) and the restore of a Remove
// that lost a counter to another remover.
func casBlock1024(f *Filter, p Probe, add bool, rec *Record) bool {
	first := p.base >> 4
	// The block's last word in range, and so the block (first is a
	// multiple of 16): two bounds checks, where the conversion of
	// f.words[first:] to *[16]uint64 took 19 instructions.
	_ = f.words[first+BlockCounters1024/16-1]
	switch r, changed0, changed := casUpdate1024(&f.words[first], p.s, f.k, add, rec, first+1); r {
	case casAbsent:
		return false // a counter is zero: the key is not there
	case casRaced:
		f.restoreLostRemove(p, rec, changed&^changed0)
		return false
	}
	f.touch(first) // (a block lies in one page)
	rec.doubt(0)
	return true
}

// restoreLostRemove puts back what a Remove of probe p changed (the
// positions of mask) once another remover got to one of its counters
// first (casBlock, casBlock1024), and clears the record's doubt.
func (f *Filter) restoreLostRemove(p Probe, rec *Record, mask uint64) {
	f.touch(p.base >> 4)
	var pos [MaxK]uint64
	f.layout.Positions(p.h, f.counters, f.k, pos[:])
	f.undo(pos[:f.k], -1, rec, mask)
	rec.doubt(0)
}

// casUpdate1024's results: the change made, the key absent (nothing
// stored), or a Remove that lost a counter to another remover (casBlock's
// restore to make).
const (
	casDone = iota
	casAbsent
	casRaced
)

// blockWords is casBlock's change to a block, by word: as read, new, the
// positions changed; and the words in the order of their first
// positions. casWords (blockcas_amd64.s) reads it at fixed offsets.
type blockWords struct {
	old, nv, chg [BlockCounters1024 / 16]uint64
	order        [BlockCounters1024 / 16]uint8
}

// full reports whether r records a change in full (casBlock's case): the
// changed and doubt masks and the evidence.
func (r *Record) full() bool {
	return r != nil && r.Changed != nil && r.Doubt != nil && r.Word != nil && r.New != nil
}
