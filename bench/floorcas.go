package main

import (
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/dablooms/dablooms/counting4"
)

// ours-original-floor-cas: the shared floor control (issue 40). It is
// ours-original-floor with each changed word written by one
// compare-and-swap, as a writer beside other processes must, and nothing
// more: the key's positions fall in one 16-word block (the default
// Blocked1024 layout), each counter is changed in a copy of its word read
// once, and each word whose copy differs from what was read is swapped in
// with one CompareAndSwapUint64 (a failed swap, which the single table
// never sees, redoes the operation). No lock, record, undo block, dirty
// mark, admission, id range or item count. Against it, ours-original's
// single Add and Remove are priced on what a shared writer cannot avoid.

var oursFloorCASSpec = spec{
	id:         "ours-original-floor-cas",
	desc:       "control: ours-original-floor with one compare-and-swap per changed word (a shared writer's floor; no lock, record or bookkeeping)",
	new:        newOursFloorCAS,
	canRemove:  true,
	singleOnly: true,
}

type oursFloorCAS struct{ *oursFloor }

func newOursFloorCAS(c buildConfig) (system, error) {
	s, err := newOursFloor(c)
	if err != nil {
		return nil, err
	}
	fl := s.(*oursFloor)
	for _, ff := range fl.chain {
		if ff.cf.Layout() != counting4.Blocked1024 {
			fl.close()
			return nil, fmt.Errorf("ours-original-floor-cas: a filter's layout is %v, not Blocked1024", ff.cf.Layout())
		}
	}
	return oursFloorCAS{fl}, nil
}

func (s oursFloorCAS) add(key []byte, id uint64) error {
	w, p := s.target(key, id)
	casWords(w, p, true)
	return nil
}

func (s oursFloorCAS) remove(key []byte, id uint64) error {
	w, p := s.target(key, id)
	casWords(w, p, false)
	return nil
}

// casWords changes the counters at p (all in one 16-word block of w) by
// +1 (add) or -1, saturating as the floor does, with one compare-and-swap
// per changed word; a failed swap reads that word again and redoes its
// counters.
func casWords(w, p []uint64, add bool) {
	blk := w[p[0]>>4&^15:][:16]
	var old, nw [16]uint64
	var read uint32
	for _, c := range p {
		i := c >> 4 & 15
		if read&(1<<i) == 0 {
			old[i] = atomic.LoadUint64(&blk[i])
			nw[i], read = old[i], read|1<<i
		}
		nw[i] = step(nw[i], c&15*4, add)
	}
	for m := read; m != 0; m &= m - 1 {
		i := uint64(bits.TrailingZeros32(m))
		for nw[i] != old[i] && !atomic.CompareAndSwapUint64(&blk[i], old[i], nw[i]) {
			old[i] = atomic.LoadUint64(&blk[i])
			nw[i] = old[i]
			for _, c := range p {
				if c>>4&15 == i {
					nw[i] = step(nw[i], c&15*4, add)
				}
			}
		}
	}
}

// step is word with its counter at shift sh one up (add) or down,
// saturating at 15 and never below 0.
func step(word, sh uint64, add bool) uint64 {
	switch v := word >> sh & 15; {
	case add && v != 15:
		return word + 1<<sh
	case !add && v != 0 && v != 15:
		return word - 1<<sh
	}
	return word
}
