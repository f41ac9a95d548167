package counting4

import (
	"fmt"
	"slices"
	"testing"

	"github.com/dablooms/dablooms/header"
)

// refUpdate1024 is the per-position definition of a key's Add or Remove
// in a Blocked1024 block (AddAt and RemoveAt, position by position): the
// k positions of state s in order, 8 bits each, s re-mixed every 8; a
// counter at 15 stays, else an Add takes it one up and a Remove one down
// (a Remove that meets a counter at 0, as the earlier positions of the
// same key may have left it, fails and changes nothing). It returns the
// block's new words, each word's changed positions, the words in the
// order of their first positions, and whether the Remove found the key.
func refUpdate1024(blk [16]uint64, s uint64, k int, add bool) (nv, chg [16]uint64, order []int, ok bool) {
	nv = blk
	var seen uint64
	for j := 0; j < k; j++ {
		if j > 0 && j%8 == 0 {
			s = header.Fmix64(s ^ golden)
		}
		c := s >> (8 * (j % 8)) & 255
		wi, sh := c>>4, c&15*4
		if seen>>wi&1 == 0 {
			seen |= 1 << wi
			order = append(order, int(wi))
		}
		switch v := nv[wi] >> sh & 15; {
		case v == 15:
		case add:
			nv[wi] += 1 << sh
			chg[wi] |= 1 << j
		case v == 0:
			return blk, [16]uint64{}, nil, false
		default:
			nv[wi] -= 1 << sh
			chg[wi] |= 1 << j
		}
	}
	return nv, chg, order, true
}

// update1024Case is one key's change to one Blocked1024 block.
type update1024Case struct {
	blk      [16]uint64
	s        uint64
	k        int
	add      bool
	changed0 uint64 // the record's changed mask before (a shared writer ORs into it)
}

func (c update1024Case) String() string {
	return fmt.Sprintf("k=%d add=%v s=%#x changed0=%#x blk=%x", c.k, c.add, c.s, c.changed0, c.blk)
}

// update1024Ks: every k the tests try, around the chunk of 8 and the
// tail of the unrolled walks, and the largest.
var update1024Ks = []int{1, 2, 7, 8, 9, 10, 15, 16, 17, 24, 40, 63, MaxK}

// genUpdate1024 makes a case from r: the block's counters drawn from a
// mix that makes the rare cases common (0, 1, 14, 15; or all 15; or all
// 1 and 2), and often a state whose positions fall on two or three
// counters only (duplicates within the key: the same counter changed
// twice, taken to 15 or to 0 by the key itself). The state chosen is that
// of one chunk of 8 positions, the first or the last (the earlier ones
// then follow from inverting the re-mix).
func genUpdate1024(r *splitmix64, k int, add bool) update1024Case {
	c := update1024Case{k: k, add: add}
	pools := [][]uint64{nil, {0, 1, 14, 15}, {1, 2}, {14, 15}, {15}, {0}, {1, 15}, {1}, {13, 14}}
	pool := pools[r.next()%uint64(len(pools))]
	for wi := range c.blk {
		for n := range 16 {
			v := r.next() & 15
			if pool != nil {
				v = pool[r.next()%uint64(len(pool))]
			}
			c.blk[wi] |= v << (4 * n)
		}
	}
	st := r.next()
	if r.next()%2 == 0 {
		// Positions on a few counters only.
		var few [3]uint64
		for i := range few {
			few[i] = r.next() & 255
		}
		n := 1 + r.next()%3
		st = 0
		for b := range 8 {
			st |= few[r.next()%n] << (8 * b)
		}
	}
	chunk := 0
	if r.next()%2 == 0 {
		chunk = (k - 1) / 8
	}
	for range chunk {
		st = fmix64Inverse(st) ^ golden
	}
	c.s = st
	if r.next()%4 == 0 {
		c.changed0 = r.next()
	}
	return c
}

// checkShared1024 runs c through a shared writer's update (AddProbe or
// RemoveProbe with a full record, casBlock's protocol) and through
// casBlock's walk in Go, and checks both against refUpdate1024: the same
// counters, the same result, and the record the protocol leaves: the
// changed mask the old one and every position changed, no doubt, and the
// evidence of the last compare-and-swap (the last changed word, in the
// order of first positions), or, if none changed a word, as it was.
func checkShared1024(t *testing.T, c update1024Case) {
	t.Helper()
	nv, chg, order, ok := refUpdate1024(c.blk, c.s, c.k, c.add)
	var mask uint64
	for _, m := range chg {
		mask |= m
	}
	const noWord, noNew, noDoubt = 0x5a5a, 0xa5a5a5a5, 0x3c3c
	wantWord, wantNew := uint64(noWord), uint64(noNew)
	for _, wi := range order {
		if chg[wi] != 0 {
			wantWord, wantNew = uint64(wi)+1, nv[wi]
		}
	}
	for _, via := range []string{"probe", "go"} {
		words := make([]uint64, 16)
		copy(words, c.blk[:])
		f, err := New(words, Blocked1024, BlockCounters1024, c.k)
		if err != nil {
			t.Fatal(err)
		}
		r := recWords{changed: c.changed0, doubt: noDoubt, word: noWord, nv: noNew}
		p := Probe{s: c.s}
		var got bool
		switch {
		case via == "go":
			got = casBlock(f, (*[16]uint64)(words), p, c.add, r.rec())
		case c.add:
			f.AddProbe(p, r.rec())
			got = true
		default:
			got = f.RemoveProbe(p, r.rec())
		}
		switch {
		case got != ok:
			t.Fatalf("%s: %v: returned %v, want %v", via, c, got, ok)
		case !ok && (!slices.Equal(words, c.blk[:]) || r != recWords{changed: c.changed0, doubt: noDoubt, word: noWord, nv: noNew}):
			t.Fatalf("%s: %v: an absent key's Remove stored something: words %x, record %+v", via, c, words, r)
		case !ok:
		case !slices.Equal(words, nv[:]):
			t.Fatalf("%s: %v: words %x, want %x", via, c, words, nv)
		case r.changed != c.changed0|mask || r.doubt != 0:
			t.Fatalf("%s: %v: changed %#x doubt %#x, want %#x 0", via, c, r.changed, r.doubt, c.changed0|mask)
		case r.word != wantWord || r.nv != wantNew:
			t.Fatalf("%s: %v: evidence %d/%#x, want %d/%#x", via, c, r.word, r.nv, wantWord, wantNew)
		}
	}
}

// checkExcl1024 runs c through an exclusive writer with an undo block
// (AddExcl and RemoveExcl: undoAdd1024 and undoRemove1024 where there is
// assembly) and through updateUndo in Go, and checks both against
// refUpdate1024: the same counters and result; the changed mask stored,
// the undo block disarmed with the block's words before the change
// saved; and for a Remove that changes nothing (absent, or every counter
// saturated) nothing stored at all. (An Add that changes nothing may save
// the block's words as they are and store its mask, 0: undoAdd1024
// decides nothing before it arms.)
func checkExcl1024(t *testing.T, c update1024Case) {
	t.Helper()
	nv, chg, _, ok := refUpdate1024(c.blk, c.s, c.k, c.add)
	var mask uint64
	for _, m := range chg {
		mask |= m
	}
	const noChanged = 0x77
	var sentinel [header.UndoSavedWords]uint64
	for i := range sentinel {
		sentinel[i] = 0xdead0000 + uint64(i)
	}
	for _, via := range []string{"excl", "go"} {
		words := make([]uint64, 16)
		copy(words, c.blk[:])
		f, err := New(words, Blocked1024, BlockCounters1024, c.k)
		if err != nil {
			t.Fatal(err)
		}
		block, saved, changed := uint64(0), sentinel, uint64(noChanged)
		f.SetUndo(&Undo{Block: &block, Saved: &saved}, 5)
		p := Probe{s: c.s}
		var got bool
		switch {
		case via == "go":
			got = updateUndo(f, (*[16]uint64)(words), 0, c.s, c.add, &changed)
		case c.add:
			f.AddExcl(p, &Record{Changed: &changed})
			got = true
		default:
			got = f.RemoveExcl(p, &Record{Changed: &changed})
		}
		nothing := saved == sentinel && changed == noChanged
		switch {
		case got != ok:
			t.Fatalf("%s: %v: returned %v, want %v", via, c, got, ok)
		case block != 0:
			t.Fatalf("%s: %v: the undo block is left armed: %#x", via, c, block)
		case !slices.Equal(words, nv[:]):
			t.Fatalf("%s: %v: words %x, want %x", via, c, words, nv)
		case mask == 0 && !c.add && !nothing:
			t.Fatalf("%s: %v: a Remove that changes nothing stored: saved %x changed %#x", via, c, saved, changed)
		case mask == 0 && c.add && !nothing && (changed != 0 || !slices.Equal(saved[:16], c.blk[:])):
			t.Fatalf("%s: %v: an Add that changes nothing stored saved %x changed %#x", via, c, saved, changed)
		case mask != 0 && (changed != mask || !slices.Equal(saved[:16], c.blk[:])):
			t.Fatalf("%s: %v: changed %#x saved %x, want %#x and the block before", via, c, changed, saved, mask)
		}
	}
}

// TestBlockUpdate1024Table: both writers' Add and Remove of a Blocked1024
// block (casBlock's walk and swaps, and the undo block's walks: assembly
// on amd64) agree with the per-position definition, on crafted blocks
// and keys: counters at 0, 1, 14 and 15, a key's positions on one
// counter (taken to 15 by the key itself, or to 0 and then met again), k
// across the chunks of 8 positions.
func TestBlockUpdate1024Table(t *testing.T) {
	one := func(wi, n int, v uint64) (b [16]uint64) { b[wi] = v << (4 * n); return }
	fill := func(v uint64) (b [16]uint64) {
		for i := range b {
			b[i] = v * 0x1111111111111111
		}
		return
	}
	same := func(c uint64) uint64 { return c * 0x0101010101010101 } // every position of the chunk on counter c
	var cases []update1024Case
	for _, k := range update1024Ks {
		for _, add := range []bool{true, false} {
			for _, cs := range []struct {
				blk [16]uint64
				s   uint64
			}{
				{fill(0), 0x0123456789abcdef},
				{fill(1), 0x0123456789abcdef},
				{fill(14), same(0x37)},
				{fill(15), same(0x37)},
				{fill(13), same(0xff)},
				{fill(1), same(0x00)},
				{one(3, 7, 1), same(0x37)}, // the key's counter at 1, met k times
				{one(3, 7, 14), same(0x37)},
				{one(15, 15, 15), same(0xff)},
				{one(15, 15, 14), same(0xff)},
				{fill(2), 0x3737373737373737 ^ 0x0000100000001000},
				{fill(7), 0xf0e1d2c3b4a59687},
			} {
				cases = append(cases, update1024Case{blk: cs.blk, s: cs.s, k: k, add: add})
				cases = append(cases, update1024Case{blk: cs.blk, s: cs.s, k: k, add: add, changed0: 1 << 63})
			}
		}
	}
	for _, c := range cases {
		checkShared1024(t, c)
		checkExcl1024(t, c)
	}
}

// TestBlockUpdate1024Random: as the table, on many generated cases.
func TestBlockUpdate1024Random(t *testing.T) {
	r := splitmix64(1024)
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := range n {
		k := update1024Ks[i%len(update1024Ks)]
		if i%3 == 0 {
			k = 1 + int(r.next()%MaxK)
		}
		c := genUpdate1024(&r, k, r.next()%2 == 0)
		checkShared1024(t, c)
		checkExcl1024(t, c)
	}
}

// FuzzBlockUpdate1024: as the table and TestBlockUpdate1024Contended, on
// cases generated from the fuzzer's seed, k and direction.
func FuzzBlockUpdate1024(f *testing.F) {
	for i, k := range update1024Ks {
		f.Add(uint64(i), uint8(k), i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, seed uint64, k uint8, add bool) {
		r := splitmix64(seed)
		c := genUpdate1024(&r, 1+int(k)%MaxK, add)
		checkShared1024(t, c)
		checkExcl1024(t, c)
		checkSharedAlias1024(t, c.blk, r.next(), c.k, add, int(r.next()%3), int(r.next()%16))
	})
}

// checkSharedAlias1024 runs a shared writer's Add or Remove of key h on a
// one-block Blocked1024 filter holding blk (AddProbe or RemoveProbe: on
// amd64 casBlock1024's assembly) and casBlock's walk in Go on another,
// with one field of the record (0 Changed, 1 Word, 2 New) pointing at
// word w of the block: the record's steps then change that word between
// its read and its swap, and the swap fails, deterministically, as if
// another writer had changed it, so the retry (wordGroup's) runs, and a
// Remove may meet a counter at 0 in it and restore. Both must leave the
// same words, record and result. It reports whether the words differ
// from refUpdate1024's (the aliased record changed a word the key
// touches), and whether a Remove refUpdate1024 makes failed (it met a 0
// in a retry and restored).
func checkSharedAlias1024(t *testing.T, blk [16]uint64, h uint64, k int, add bool, field, w int) (interfered, restored bool) {
	t.Helper()
	type run struct {
		words []uint64
		r     *recWords // (allocated: 64-bit aligned on 386 too)
		ok    bool
	}
	var runs [2]run
	var s uint64
	for i := range runs {
		x := &runs[i]
		x.words = make([]uint64, 16)
		copy(x.words, blk[:])
		f, err := New(x.words, Blocked1024, BlockCounters1024, k)
		if err != nil {
			t.Fatal(err)
		}
		x.r = &recWords{doubt: 0x3c3c, word: 0x5a5a, nv: 0xa5a5a5a5}
		rec := x.r.rec()
		switch field {
		case 0:
			rec.Changed = &x.words[w]
		case 1:
			rec.Word = &x.words[w]
		case 2:
			rec.New = &x.words[w]
		}
		p := f.Prepare(h)
		s = p.s
		switch {
		case i == 1:
			x.ok = casBlock(f, (*[16]uint64)(x.words), p, add, rec)
		case add:
			f.AddProbe(p, rec)
			x.ok = true
		default:
			x.ok = f.RemoveProbe(p, rec)
		}
	}
	a, b := runs[0], runs[1]
	if a.ok != b.ok || !slices.Equal(a.words, b.words) || *a.r != *b.r {
		t.Fatalf("k=%d add=%v h=%#x field %d at word %d, blk %x:\nprobe %v %x %+v\ngo    %v %x %+v",
			k, add, h, field, w, blk, a.ok, a.words, *a.r, b.ok, b.words, *b.r)
	}
	nv, _, _, ok := refUpdate1024(blk, s, k, add)
	return !slices.Equal(a.words, nv[:]), ok && !a.ok
}

// TestBlockUpdate1024Contended: casBlock1024's retry of a word changed
// between its read and its swap (and the restore of a Remove that meets
// a counter at 0 there) leaves what casBlock's does, with the record
// aliased onto the block's words (checkSharedAlias1024) so that the
// failed swaps come in the same places in both.
func TestBlockUpdate1024Contended(t *testing.T) {
	r := splitmix64(4096)
	n := 2000
	if testing.Short() {
		n = 200
	}
	var interfered, restored int
	for i := range n {
		k := update1024Ks[i%len(update1024Ks)]
		c := genUpdate1024(&r, k, r.next()%2 == 0)
		x, y := checkSharedAlias1024(t, c.blk, r.next(), k, c.add, int(r.next()%3), int(r.next()%16))
		interfered += b2i(x)
		restored += b2i(y)
	}
	t.Logf("%d of %d changed a word between its read and its swap, %d Removes restored", interfered, n, restored)
	if interfered < n/10 || restored == 0 {
		t.Fatalf("too few failed swaps (%d of %d) or restores (%d): the test misses its path", interfered, n, restored)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
