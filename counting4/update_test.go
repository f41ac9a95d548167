package counting4

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

type recWords struct{ changed, doubt, word, nv uint64 }

func (r *recWords) rec() *Record {
	return &Record{Changed: &r.changed, Doubt: &r.doubt, Word: &r.word, New: &r.nv}
}

// TestProbeUpdateMatchesAt: AddProbe and RemoveProbe change the same
// counters as AddAt and RemoveAt with the positions of Positions, return
// the same, and leave the same record (Changed, Doubt, and the evidence of
// the last compare-and-swap), for every layout and many k, on filters so
// small that positions share words and counters, counters saturate and
// removes meet zero counters. So do they on a filter with one writer
// (AddExcl, RemoveExcl: stores, a record step per position), but for the
// evidence, which names its last store.
func TestProbeUpdateMatchesAt(t *testing.T) {
	for _, l := range layouts {
		for _, k := range []int{1, 2, 7, 8, 9, 10, 16, 17, 18, 33, MaxK} {
			for _, blocks := range []uint64{1, 3} {
				t.Run(fmt.Sprintf("%v/k=%d/blocks=%d", l, k, blocks), func(t *testing.T) {
					a := newFilter(t, l, blocks*BlockCounters1024, k)
					b := newFilter(t, l, blocks*BlockCounters1024, k)
					c := newFilter(t, l, blocks*BlockCounters1024, k)
					s := splitmix64(uint64(k)*31 + blocks)
					keys := make([]uint64, 24)
					for i := range keys {
						keys[i] = s.next()
					}
					var pos [MaxK]uint64
					for op := range 3000 {
						h := keys[s.next()%uint64(len(keys))]
						add := s.next()%5 < 3
						var ra, rb, rc recWords
						var oka, okb, okc bool
						a.Positions(h, pos[:])
						if add {
							a.AddAt(pos[:k], ra.rec())
							b.AddProbe(b.Prepare(h), rb.rec())
							c.AddExcl(c.Prepare(h), rc.rec())
							oka, okb, okc = true, true, true
						} else {
							oka = a.RemoveAt(pos[:k], ra.rec())
							okb = b.RemoveProbe(b.Prepare(h), rb.rec())
							okc = c.RemoveExcl(c.Prepare(h), rc.rec())
						}
						if oka != okb || oka != okc {
							t.Fatalf("op %d (add %v): At %v, Probe %v, exclusive %v", op, add, oka, okb, okc)
						}
						if !slices.Equal(a.Words(), b.Words()) || !slices.Equal(a.Words(), c.Words()) {
							t.Fatalf("op %d (add %v): the counters differ", op, add)
						}
						if ra.changed != rb.changed || ra.doubt != rb.doubt || rb.doubt != 0 {
							t.Fatalf("op %d (add %v): record At %+v, Probe %+v", op, add, ra, rb)
						}
						if rc.changed != ra.changed || rc.doubt != 0 {
							t.Fatalf("op %d (add %v): record At %+v, exclusive %+v", op, add, ra, rc)
						}
						// The exclusive evidence names the last store: that
						// word now holds its new value.
						if rc.word != 0 && (rc.word > uint64(len(c.Words())) || c.Words()[rc.word-1] != rc.nv) {
							t.Fatalf("op %d (add %v): exclusive evidence %+v names no word holding its value", op, add, rc)
						}
						// The evidence of the last CAS: the same word and value
						// when both made the same compare-and-swaps (a failed
						// remove's undo, and AddAt's split groups for k > 17,
						// make others).
						if oka && k <= 17 && (ra.word != rb.word || ra.nv != rb.nv) {
							t.Fatalf("op %d (add %v): evidence At %+v, Probe %+v", op, add, ra, rb)
						}
					}
				})
			}
		}
	}
}

// TestProbeUpdateNilRecord: without a record the probe updates change the
// counters as with one.
func TestProbeUpdateNilRecord(t *testing.T) {
	for _, l := range layouts {
		a := newFilter(t, l, 2*BlockCounters1024, 9)
		b := newFilter(t, l, 2*BlockCounters1024, 9)
		s := splitmix64(5)
		for range 2000 {
			h := s.next() % 40
			var r recWords
			if s.next()%2 == 0 {
				a.AddProbe(a.Prepare(h), nil)
				b.AddProbe(b.Prepare(h), r.rec())
			} else if x, y := a.RemoveProbe(a.Prepare(h), nil), b.RemoveProbe(b.Prepare(h), r.rec()); x != y {
				t.Fatalf("%v: remove %v without a record, %v with", l, x, y)
			}
		}
		if !slices.Equal(a.Words(), b.Words()) {
			t.Fatalf("%v: the counters differ", l)
		}
	}
}

// TestProbeUpdateContended: goroutines adding and removing keys of one
// block lose compare-and-swaps to each other (the slow path that recomputes
// a word); every counter ends where the operations put it, no record is
// left in doubt, and of two Removes racing for a key added once exactly one
// succeeds (the loser meets a zero counter and restores what it changed).
func TestProbeUpdateContended(t *testing.T) {
	for _, l := range []Layout{Blocked1024, Blocked512} {
		t.Run(l.String(), func(t *testing.T) {
			f := newFilter(t, l, l.blockSize(), 8)
			const workers, rounds = 4, 3000
			var wg sync.WaitGroup
			for g := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var r recWords
					s := splitmix64(uint64(g) + 100)
					for range rounds {
						h := s.next()
						r = recWords{}
						f.AddProbe(f.Prepare(h), r.rec())
						if r.doubt != 0 {
							t.Errorf("add left doubt %b", r.doubt)
							return
						}
						r = recWords{}
						if !f.RemoveProbe(f.Prepare(h), r.rec()) || r.doubt != 0 {
							t.Errorf("remove of an added key failed or left doubt %b", r.doubt)
							return
						}
					}
				}()
			}
			wg.Wait()
			for i, w := range f.Words() {
				if w != 0 {
					t.Fatalf("word %d is %#x after every add was removed", i, w)
				}
			}
			// Two removers race for one key added once.
			s := splitmix64(9)
			for range 2000 {
				h := s.next()
				f.AddProbe(f.Prepare(h), nil)
				var wins atomic.Int32
				var start sync.WaitGroup
				start.Add(1)
				for range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						var r recWords
						start.Wait()
						ok := f.RemoveProbe(f.Prepare(h), r.rec())
						if ok {
							wins.Add(1)
						}
						// The loser restored what it changed: its record
						// names no changed counter.
						if r.doubt != 0 || !ok && r.changed != 0 {
							t.Errorf("remove %v left changed %b doubt %b", ok, r.changed, r.doubt)
						}
					}()
				}
				start.Done()
				wg.Wait()
				if n := wins.Load(); n != 1 {
					t.Fatalf("%d of 2 racing removes of a key added once succeeded", n)
				}
				for i, w := range f.Words() {
					if w != 0 {
						t.Fatalf("word %d is %#x after the key was removed", i, w)
					}
				}
			}
		})
	}
}

// TestProbeRemoveRollbackContended: Removes of keys that share counters
// race: real keys and false positives of the same block (present by the
// other keys' counters), so a Remove often wins some words and then meets
// a counter another Remove took to zero, and must restore what it changed.
// However they interleave, every successful Remove took exactly k counts
// and every failed one none: the block's counter sum is k × (adds − wins).
func TestProbeRemoveRollbackContended(t *testing.T) {
	for _, l := range []Layout{Blocked512, Blocked1024} {
		t.Run(l.String(), func(t *testing.T) {
			const k, keys = 4, 24
			f := newFilter(t, l, l.blockSize(), k)
			s := splitmix64(77)
			rounds := 1500
			if testing.Short() {
				rounds = 300
			}
			var failed int
			for round := range rounds {
				clear(f.Words())
				real := make([]uint64, keys)
				for i := range real {
					real[i] = s.next()
					f.AddProbe(f.Prepare(real[i]), nil)
				}
				var phantoms []uint64
				for len(phantoms) < 8 {
					if h := s.next(); f.ContainsProbe(f.Prepare(h)) {
						phantoms = append(phantoms, h)
					}
				}
				all := append(real, phantoms...)
				var wins, fails atomic.Int32
				var wg sync.WaitGroup
				start := make(chan struct{})
				for g := range 4 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						for i := g; i < len(all); i += 4 {
							var r recWords
							ok := f.RemoveProbe(f.Prepare(all[i]), r.rec())
							if ok {
								wins.Add(1)
							} else {
								fails.Add(1)
							}
							if r.doubt != 0 || !ok && r.changed != 0 {
								t.Errorf("remove %v left changed %b doubt %b", ok, r.changed, r.doubt)
							}
						}
					}()
				}
				close(start)
				wg.Wait()
				failed += int(fails.Load())
				var sum int
				for _, w := range f.Words() {
					for sh := 0; sh < 64; sh += 4 {
						sum += int(w >> sh & 15)
					}
				}
				if want := k * (keys - int(wins.Load())); sum != want {
					t.Fatalf("round %d: counter sum %d, want %d (%d removes won)", round, sum, want, wins.Load())
				}
			}
			if failed == 0 {
				t.Fatal("no Remove failed: the race this test is about never happened")
			}
		})
	}
}

// A Remove on a filter with one writer that finds the key absent stores
// nothing at all, not even for a moment: here the key's counters are all
// non-zero but two of its positions share a counter holding 1, so only a
// Remove that decided first leaves the record's evidence untouched (one
// that decremented position by position would have taken that counter,
// which other keys may need, to zero before undoing).
func TestExclusiveRemoveStoresNothingWhenAbsent(t *testing.T) {
	for _, l := range []Layout{Blocked512, Blocked1024} {
		f := newFilter(t, l, 4*BlockCounters1024, 8)
		var h uint64
		var pos [MaxK]uint64
		found := false
		for h = 1; h < 1_000_000 && !found; h++ {
			f.Positions(h, pos[:])
			for j := 1; j < 8 && !found; j++ {
				found = slices.Contains(pos[:j], pos[j])
			}
		}
		if !found {
			t.Fatalf("%v: no key with two positions on one counter", l)
		}
		h--
		for _, c := range pos[:8] { // every counter of the key at 1
			w := &f.Words()[c>>4]
			*w = *w&^(15<<(c&15*4)) | 1<<(c&15*4)
		}
		before := slices.Clone(f.Words())
		var r recWords
		if f.RemoveExcl(f.Prepare(h), r.rec()) {
			t.Fatalf("%v: removed a key one of whose counters holds 1 for two positions", l)
		}
		if r.word != 0 || r.nv != 0 || r.changed != 0 || r.doubt != 0 {
			t.Errorf("%v: the failed Remove stored something (record %+v)", l, r)
		}
		if !slices.Equal(before, f.Words()) {
			t.Errorf("%v: the failed Remove changed the counters", l)
		}
	}
}
