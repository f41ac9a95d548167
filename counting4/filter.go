package counting4

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/dablooms/dablooms/header"
)

// Filter is a counting Bloom filter over words it does not own. All methods
// are safe for concurrent use, also by other processes sharing the words.
type Filter struct {
	words    []uint64
	counters uint64
	k        int
	layout   Layout
	ub       *Undo  // the undo block: see SetUndo
	ubEntry  uint64 // its directory entry, as the armed block word names it
	// pages is the filter's changed map (nil: none; see SetPageMap).
	pages header.PageMap
	// blocks and bw: a blocked layout's number of blocks (counters>>bw)
	// and its position width (Layout.chunks), for Prepare; both 0 for
	// the layouts without blocks.
	blocks uint64
	bw     uint
}

// wordsPerPageShift: word i of the counters lies in page i>>9 (4096/8
// words a page).
const wordsPerPageShift = 9

// SetPageMap gives the filter its changed map (header.PageMap, a file
// with page checksums): every change to a counter word then marks the
// word's page, after the change (the compare-and-swap, or the exclusive
// writer's store). Page p of the map is the page of counter words
// [512p, 512p+512). Set it before the filter is shared.
func (f *Filter) SetPageMap(m header.PageMap) { f.pages = m }

// touch marks the page of word i changed, after its change.
func (f *Filter) touch(i uint64) {
	if f.pages != nil {
		f.pages.Mark(i >> wordsPerPageShift)
	}
}

// New returns a filter of the given layout, counters and k over words, which
// must hold at least counters/16 words.
func New(words []uint64, layout Layout, counters uint64, k int) (*Filter, error) {
	switch {
	case k < 1 || k > MaxK:
		return nil, fmt.Errorf("%w: k = %d", ErrSize, k)
	case counters == 0 || (counters+15)/16 > uint64(len(words)):
		return nil, fmt.Errorf("%w: %d counters need %d words, have %d", ErrSize, counters, (counters+15)/16, len(words))
	case layout.blockSize() != 0 && counters%layout.blockSize() != 0:
		return nil, fmt.Errorf("%w: %d counters is not whole blocks", ErrSize, counters)
	case layout == Partitioned && (counters%uint64(k) != 0 || counters/uint64(k) >= 1<<32):
		return nil, fmt.Errorf("%w: %d counters is not %d partitions of fewer than 2^32", ErrSize, counters, k)
	case layout != Blocked512 && layout != Blocked1024 && layout != Classic && layout != Partitioned:
		return nil, fmt.Errorf("%w: unknown layout %d", ErrSize, layout)
	}
	w, _ := layout.chunks()
	var blocks uint64 // (0 for the layouts without blocks: see Prepare)
	if w != 0 {
		blocks = counters >> w
	}
	return &Filter{words: words[:(counters+15)/16], counters: counters, k: k, layout: layout, blocks: blocks, bw: w}, nil
}

// K returns the number of counters per key.
func (f *Filter) K() int { return f.k }

// Counters returns the number of counters.
func (f *Filter) Counters() uint64 { return f.counters }

// Layout returns the filter's layout.
func (f *Filter) Layout() Layout { return f.layout }

// Words returns the words the filter works on.
func (f *Filter) Words() []uint64 { return f.words }

// Positions writes the key's k counter indices into pos (len ≥ K()).
func (f *Filter) Positions(h uint64, pos []uint64) { f.layout.Positions(h, f.counters, f.k, pos) }

// Get returns counter c.
func (f *Filter) Get(c uint64) uint8 {
	return uint8(atomic.LoadUint64(&f.words[c>>4]) >> ((c & 15) * 4) & 15)
}

// Contains reports whether all of the key's counters are non-zero. It never
// writes. For the blocked layouts it is ContainsProbe, which does not
// materialise the positions.
func (f *Filter) Contains(h uint64) bool {
	if f.layout.blockSize() != 0 {
		return f.ContainsProbe(f.Prepare(h))
	}
	var pos [MaxK]uint64
	f.layout.Positions(h, f.counters, f.k, pos[:])
	return f.ContainsAt(pos[:f.k])
}

// ContainsAt reports whether all counters at pos are non-zero.
func (f *Filter) ContainsAt(pos []uint64) bool {
	w := f.words
	for _, p := range pos {
		if atomic.LoadUint64(&w[p>>4])>>((p&15)*4)&15 == 0 {
			return false
		}
	}
	return true
}

// Saturated reports whether all of the key's counters are saturated (15).
// They stay so: no Add or Remove changes a counter at 15, nor does an
// Undo; only an undo block's restore lowers one, that of the operation it
// undoes, which raised it (an exclusive writer's, whose operations do not
// overlap).
func (f *Filter) Saturated(h uint64) bool {
	var pos [MaxK]uint64
	f.layout.Positions(h, f.counters, f.k, pos[:])
	for _, p := range pos[:f.k] {
		if f.Get(p) != 15 {
			return false
		}
	}
	return true
}

// Record is where an operation reports its progress, so that an operation
// cut short by the death of its process can be rolled back exactly. Bit j of
// Changed is set while position j's counter differs from its value before the
// operation. Bit j of Doubt is set while the compare-and-swap that flips bit j
// of Changed may or may not have happened. Before that compare-and-swap,
// Word is set to the index (within the filter) of the counter word it
// changes, plus one, and New to the value the word takes if it succeeds: the
// evidence that lets recovery tell whether it happened. A nil *Record records
// nothing; nil Word and New record no evidence.
type Record struct {
	Changed *uint64
	Doubt   *uint64
	Word    *uint64
	New     *uint64
}

// Add increments the key's k counters (saturating at 15).
func (f *Filter) Add(h uint64, rec *Record) {
	var pos [MaxK]uint64
	f.layout.Positions(h, f.counters, f.k, pos[:])
	f.AddAt(pos[:f.k], rec)
}

// AddAt increments the counters at pos (saturating at 15). Positions that
// share a word are changed by one compare-and-swap.
func (f *Filter) AddAt(pos []uint64, rec *Record) {
	var done uint64
	for j := range pos {
		if done&(1<<j) != 0 {
			continue
		}
		group := sameWord(pos, j)
		done |= group
		w := &f.words[pos[j]>>4]
		for {
			old := atomic.LoadUint64(w)
			nw, changed := old, uint64(0)
			for g := group; g != 0; g &= g - 1 {
				jj := bits.TrailingZeros64(g)
				sh := (pos[jj] & 15) * 4
				if nw>>sh&15 != 15 {
					nw += 1 << sh
					changed |= 1 << jj
				}
			}
			if changed == 0 {
				break
			}
			if f.cas(pos[j]>>4, old, nw, changed, rec) {
				rec.set(changed)
				break
			}
		}
	}
	rec.doubt(0)
}

// sameWord returns the mask of positions from j on whose counter lies in the
// same word as pos[j]. It scans at most 16 positions ahead: grouping saves
// compare-and-swaps but is not needed for correctness (two CASes on one word
// are as correct as one), and an unbounded scan costs O(k²) for large k.
func sameWord(pos []uint64, j int) uint64 {
	w := pos[j] >> 4
	m := uint64(1) << j
	for jj := j + 1; jj < len(pos) && jj <= j+16; jj++ {
		if pos[jj]>>4 == w {
			m |= 1 << jj
		}
	}
	return m
}

// Remove decrements the key's k counters if all are non-zero and reports
// whether it did. Saturated counters are left at 15. If a counter is found
// at zero part-way (another remover got there first), every counter changed
// so far is restored and Remove reports false: a Remove either changes all
// of the key's non-saturated counters or none.
func (f *Filter) Remove(h uint64, rec *Record) bool {
	var pos [MaxK]uint64
	f.layout.Positions(h, f.counters, f.k, pos[:])
	return f.RemoveAt(pos[:f.k], rec)
}

// RemoveAt is Remove for precomputed positions. Positions that share a
// word are changed by one compare-and-swap.
func (f *Filter) RemoveAt(pos []uint64, rec *Record) bool {
	if !f.ContainsAt(pos) {
		return false
	}
	var done uint64
	for j := range pos {
		if done&(1<<j) != 0 {
			continue
		}
		group := sameWord(pos, j)
		w := &f.words[pos[j]>>4]
		for {
			old := atomic.LoadUint64(w)
			nw, changed, ok := old, uint64(0), true
			for g := group; g != 0; g &= g - 1 {
				jj := bits.TrailingZeros64(g)
				sh := (pos[jj] & 15) * 4
				switch nw >> sh & 15 {
				case 0:
					ok = false
				case 15:
				default:
					nw -= 1 << sh
					changed |= 1 << jj
				}
			}
			if !ok {
				// Another remover got there first: restore what this one changed.
				f.undo(pos, -1, rec, done)
				rec.doubt(0)
				return false
			}
			if changed == 0 {
				break
			}
			if f.cas(pos[j]>>4, old, nw, changed, rec) {
				rec.set(changed)
				break
			}
		}
		done |= group
	}
	rec.doubt(0)
	return true
}

// Undo reverts the counters at pos of an operation of direction dir (+1 for
// an add, -1 for a remove). With a record, only positions whose bit is set in
// its Changed mask are reverted, and the mask is kept up to date; without
// one, every position is. Saturated counters are left at 15.
func (f *Filter) Undo(pos []uint64, dir int, rec *Record) {
	f.undo(pos, dir, rec, ^uint64(0))
	rec.doubt(0)
}

// undo is Undo for the positions in mask (bit j: pos[j]).
func (f *Filter) undo(pos []uint64, dir int, rec *Record, mask uint64) {
	for j, p := range pos {
		if mask&(1<<j) == 0 || rec != nil && rec.Changed != nil && *rec.Changed&(1<<j) == 0 {
			continue
		}
		f.revert(p, dir, rec, j)
		rec.clear(uint64(1) << j)
	}
}

// revert takes back one step of direction dir at counter p (position j):
// a decrement for an add (dir > 0), an increment for a remove. A saturated
// counter (15) is left as it is, and so is a zero one for a decrement.
func (f *Filter) revert(p uint64, dir int, rec *Record, j int) {
	i, sh := p>>4, (p&15)*4
	for {
		old := atomic.LoadUint64(&f.words[i])
		c, nw := old>>sh&15, old+1<<sh
		if dir > 0 {
			nw = old - 1<<sh
		}
		if c == 15 || dir > 0 && c == 0 || f.cas(i, old, nw, uint64(1)<<j, rec) {
			return
		}
	}
}

// cas changes word i from old to nw, changing the counters of the
// positions in the mask changed. Recovery relies on the order: first the
// evidence (which word becomes what), then the doubt mask naming the
// positions, then the compare-and-swap; on success the caller sets or
// clears those positions in the record's Changed mask.
func (f *Filter) cas(i, old, nw, changed uint64, rec *Record) bool {
	rec.propose(i, nw, changed)
	if atomic.CompareAndSwapUint64(&f.words[i], old, nw) {
		f.touch(i)
		return true
	}
	return false
}

// propose records the compare-and-swap (or store) about to be tried: the
// evidence, word w of the filter is to become nw, then the doubt mask m
// naming the positions it changes; in that order, in one call (each
// StoreOrdered a call of its own cost a shared Add and Remove a tenth more
// instructions than the XCHGs they replaced).
func (r *Record) propose(w, nw, m uint64) {
	switch {
	case r == nil:
	case r.Word != nil && r.New != nil:
		storeRelease3(r.Word, w+1, r.New, nw, r.Doubt, m)
	default:
		StoreOrdered(r.Doubt, m)
	}
}

func (r *Record) doubt(m uint64) {
	if r != nil {
		StoreOrdered(r.Doubt, m)
	}
}

func (r *Record) set(m uint64) {
	if r != nil {
		StoreOrdered(r.Changed, *r.Changed|m)
	}
}

func (r *Record) clear(m uint64) {
	if r != nil {
		StoreOrdered(r.Changed, *r.Changed&^m)
	}
}

// Probe is a key's hash prepared for one filter: what a lookup needs to walk
// the key's counters without materialising them (blocked layouts), or the
// hash itself (the others).
type Probe struct {
	h    uint64 // the key hash
	base uint64 // blocked: first counter of the key's block
	s    uint64 // blocked: position state
}

// Prepare computes the key's probe for this filter. For a blocked layout
// it is blockStart's, with the number of blocks from New; the others use
// the hash alone, and their base (0: their blocks is 0) and s mean
// nothing. Written without a branch on the layout, so that callers inline
// it (a call and its moves cost a single write about 15 instructions).
func (f *Filter) Prepare(h uint64) Probe {
	g := header.Fmix64(h)
	base, _ := bits.Mul64(g, f.blocks)
	return Probe{h: h, base: base << f.bw, s: header.Fmix64(g ^ golden)}
}

// ContainsProbe is Contains for a prepared probe. For the blocked layouts it
// derives each position as it goes (the same positions as Positions) within
// the probe's block, testing the positions of one state word (8 or 9) without
// a branch per position.
func (f *Filter) ContainsProbe(p Probe) bool {
	switch f.layout {
	case Blocked512:
		return containsBlock((*[BlockCounters512 / 16]uint64)(f.words[p.base>>4:]), p.s, f.k)
	case Blocked1024:
		return containsBlock((*[BlockCounters1024 / 16]uint64)(f.words[p.base>>4:]), p.s, f.k)
	}
	return f.Contains(p.h) // not blocked: Contains does not come back here
}

// containsBlock reports whether the k counters of position state s in block
// blk are all non-zero: it walks the positions of blockedPositions, w-bit
// chunks of s re-mixed every per (Layout.chunks). It is generic so that each
// block size gets its own code with constant w and per and without bounds
// checks: the loop with a variable per (j%per a division per position) and
// bounds checks made lookups of present keys about 1.6 times as slow.
func containsBlock[B [BlockCounters512 / 16]uint64 | [BlockCounters1024 / 16]uint64](blk *B, s uint64, k int) bool {
	w, per := uint(8), 8
	// unsafe.Sizeof does not evaluate *blk (len(*blk) would read the whole
	// block, non-atomically, in the generic code).
	if unsafe.Sizeof(*blk) == BlockCounters512/2 {
		w, per = 7, 9
	}
	for j := 0; ; s = header.Fmix64(s ^ golden) {
		x := s
		for end := min(j+per, k); j < end; j++ {
			c := x & (1<<w - 1)
			if atomic.LoadUint64(&(*blk)[c>>4])>>(c&15*4)&15 == 0 {
				return false
			}
			x >>= w
		}
		if j >= k {
			return true
		}
	}
}
