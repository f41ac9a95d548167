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
// changed word makes the record's steps in one call of assembly where it
// can: the changed mask of the word before it and this word's evidence
// and doubt (storeRelease4), then the compare-and-swap. The block's page
// is marked once, after the last swap: a block lies in one page, and the
// mark only has to follow each change (I3 of docs/PROTOCOLS.md: a flush
// that read the page between two of the swaps finds it marked again). It
// reports false for a Remove whose key the counters do not hold.
func casBlock[B [BlockCounters512 / 16]uint64 | [BlockCounters1024 / 16]uint64](f *Filter, blk *B, p Probe, add bool, rec *Record) bool {
	w, per := uint(8), 8
	if unsafe.Sizeof(*blk) == BlockCounters512/2 { // (see containsBlock)
		w, per = 7, 9
	}
	const nwMax = BlockCounters1024 / 16
	b := (*[nwMax]uint64)(unsafe.Pointer(blk)) // (wi < len(*blk))
	var old, nv, chg [nwMax]uint64             // by word: as read, new, positions changed
	var order [nwMax]uint8                     // the words, in the order of their first positions
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
			wi, one := c>>4&uint64(len(*blk)-1), ones[c&15]
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
	changed := atomic.LoadUint64(rec.Changed)
	prev := changed // the changed mask as stored
	var done uint64 // a remove: the positions of the words changed so far
	for i := range n {
		wi := uint64(order[i&(nwMax-1)])
		m := chg[wi]
		if m == 0 {
			continue // every counter of the word is saturated
		}
		o, v := old[wi], nv[wi]
		// The word before's changed mask, then this word's evidence and
		// doubt (Record.set, then Record.propose).
		storeRelease4(rec.Changed, changed, rec.Word, first+wi+1, rec.New, v, rec.Doubt, m)
		prev = changed
		for !atomic.CompareAndSwapUint64(&b[wi], o, v) {
			// Another writer changed the word since it was read.
			o = atomic.LoadUint64(&b[wi])
			var zero bool
			v, m, zero = wordGroup(len(*blk), p.s, f.k, wi, o, add)
			if !add && zero {
				// Another remover got there first: restore what this one
				// changed.
				if changed != prev {
					StoreOrdered(rec.Changed, changed)
				}
				f.touch(first)
				var pos [MaxK]uint64
				f.layout.Positions(p.h, f.counters, f.k, pos[:])
				f.undo(pos[:f.k], -1, rec, done)
				rec.doubt(0)
				return false
			}
			if m == 0 {
				break
			}
			StoreOrdered(rec.Word, first+wi+1)
			StoreOrdered(rec.New, v)
			StoreOrdered(rec.Doubt, m)
		}
		changed |= m
		done |= m
		// (Positions left alone, saturated, need no undo: a counter at 15
		// stays there.)
	}
	if changed != prev {
		StoreOrdered(rec.Changed, changed)
	}
	f.touch(first) // (a block lies in one page)
	rec.doubt(0)
	return true
}

// full reports whether r records a change in full (casBlock's case): the
// changed and doubt masks and the evidence.
func (r *Record) full() bool {
	return r != nil && r.Changed != nil && r.Doubt != nil && r.Word != nil && r.New != nil
}
