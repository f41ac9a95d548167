package counting4

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

var layouts = []Layout{Blocked1024, Blocked512, Classic, Partitioned}

// newFilter returns a heap filter of layout l with about counters counters.
func newFilter(t testing.TB, l Layout, counters uint64, k int) *Filter {
	t.Helper()
	switch bs := l.blockSize(); {
	case bs != 0:
		counters = (counters + bs - 1) / bs * bs
	case l == Partitioned:
		counters = (counters + uint64(k) - 1) / uint64(k) * uint64(k)
	}
	f, err := New(make([]uint64, (counters+15)/16), l, counters, k)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// salted returns the i-th test key hash (salted as scaling salts filter 0).
func salted(seed uint64, i int) uint64 {
	s := splitmix64(seed*1_000_003 + uint64(i))
	return s.next() + Salt(0)
}

func snapshot(f *Filter) []uint64 { return slices.Clone(f.Words()) }

func TestNewErrors(t *testing.T) {
	w := make([]uint64, 1024)
	for _, tc := range []struct {
		name     string
		words    []uint64
		l        Layout
		counters uint64
		k        int
	}{
		{"k 0", w, Classic, 1000, 0},
		{"k negative", w, Classic, 1000, -1},
		{"k > MaxK", w, Classic, 1000, MaxK + 1},
		{"no counters", w, Classic, 0, 3},
		{"words too short", w, Classic, 1024*16 + 1, 3},
		{"nil words", nil, Classic, 16, 3},
		{"blocked not whole blocks", w, Blocked512, 1000, 3},
		{"blocked below one block", w, Blocked512, 64, 3},
		{"partitioned not k partitions", w, Partitioned, 1000, 3},
		{"unknown layout 0", w, Layout(0), 1024, 3},
		{"unknown layout 5", w, Layout(5), 1024, 3},
	} {
		f, err := New(tc.words, tc.l, tc.counters, tc.k)
		if !errors.Is(err, ErrSize) || f != nil {
			t.Errorf("%s: New = %v, %v; want ErrSize", tc.name, f, err)
		}
	}
}

func TestNewAccessors(t *testing.T) {
	w := make([]uint64, 100)
	f, err := New(w, Classic, 1000, 5)
	if err != nil {
		t.Fatal(err)
	}
	if f.K() != 5 || f.Counters() != 1000 || f.Layout() != Classic || len(f.Words()) != 63 {
		t.Fatalf("K %d Counters %d Layout %v words %d", f.K(), f.Counters(), f.Layout(), len(f.Words()))
	}
	if &f.Words()[0] != &w[0] {
		t.Fatal("Filter copied the words instead of using them")
	}
	pos := make([]uint64, 5)
	f.Positions(12345, pos)
	want := make([]uint64, 5)
	Classic.Positions(12345, 1000, 5, want)
	if !slices.Equal(pos, want) {
		t.Fatalf("Filter.Positions %v, Layout.Positions %v", pos, want)
	}
}

// TestCounterNibbles pins the in-word layout, which is part of the file
// format: counter c is bits 4(c%16)..4(c%16)+3 of word c/16.
func TestCounterNibbles(t *testing.T) {
	f := newFilter(t, Classic, 64, 1)
	for _, tc := range []struct {
		c    uint64
		word int
		val  uint64
	}{{0, 0, 1}, {1, 0, 1 << 4}, {15, 0, 1 << 60}, {16, 1, 1}, {33, 2, 1 << 4}, {63, 3, 1 << 60}} {
		clear(f.Words())
		f.AddAt([]uint64{tc.c}, nil)
		for i, w := range f.Words() {
			want := uint64(0)
			if i == tc.word {
				want = tc.val
			}
			if w != want {
				t.Fatalf("after adding to counter %d, word %d = %#x, want %#x", tc.c, i, w, want)
			}
		}
		if f.Get(tc.c) != 1 {
			t.Fatalf("Get(%d) = %d", tc.c, f.Get(tc.c))
		}
	}
}

func TestAddContainsRemove(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.String(), func(t *testing.T) {
			const n = 2000
			f := newFilter(t, l, 64*1024, 7)
			for i := 0; i < n; i++ {
				if f.Contains(salted(1, i)) && i < 10 {
					// An empty-ish filter must not claim early keys.
					t.Fatalf("key %d present before it was added", i)
				}
				f.Add(salted(1, i), nil)
				if !f.Contains(salted(1, i)) {
					t.Fatalf("key %d absent right after Add", i)
				}
			}
			for i := 0; i < n; i++ {
				if !f.Contains(salted(1, i)) {
					t.Fatalf("false negative for key %d", i)
				}
			}
			for i := 0; i < n; i += 2 {
				if !f.Remove(salted(1, i), nil) {
					t.Fatalf("Remove of present key %d failed", i)
				}
			}
			for i := 1; i < n; i += 2 {
				if !f.Contains(salted(1, i)) {
					t.Fatalf("false negative for key %d after removing others", i)
				}
			}
			for i := 1; i < n; i += 2 {
				if !f.Remove(salted(1, i), nil) {
					t.Fatalf("Remove of present key %d failed", i)
				}
			}
			for i, w := range f.Words() {
				if w != 0 {
					t.Fatalf("word %d = %#x after removing every key", i, w)
				}
			}
			for i := 0; i < n; i++ {
				if f.Contains(salted(1, i)) {
					t.Fatalf("key %d present in an empty filter", i)
				}
			}
		})
	}
}

// TestSaturation: dablooms 0.9.1 decremented saturated counters, so a key
// added 16 times and removed 15 times was lost.
func TestSaturation(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.String(), func(t *testing.T) {
			f := newFilter(t, l, 4096, 5)
			h := salted(2, 0)
			for i := 0; i < 16; i++ {
				f.Add(h, nil)
			}
			pos := make([]uint64, 5)
			f.Positions(h, pos)
			for _, p := range pos {
				if f.Get(p) != 15 {
					t.Fatalf("counter %d = %d after 16 adds, want 15 (saturated)", p, f.Get(p))
				}
			}
			for i := 0; i < 15; i++ {
				if !f.Remove(h, nil) {
					t.Fatalf("remove %d failed", i+1)
				}
			}
			if !f.Contains(h) {
				t.Fatal("key added 16 times and removed 15 times is absent")
			}
			for i := 0; i < 100; i++ {
				f.Remove(h, nil)
			}
			for _, p := range pos {
				if f.Get(p) != 15 {
					t.Fatalf("saturated counter %d decremented to %d", p, f.Get(p))
				}
			}
			if !f.Contains(h) {
				t.Fatal("saturated key lost")
			}
		})
	}
}

// TestSaturated: a key is saturated once its Adds bring every one of its
// counters to 15 (15 Adds on an empty filter), not before.
func TestSaturated(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.String(), func(t *testing.T) {
			f := newFilter(t, l, 4096, 5)
			h := salted(3, 0)
			for i := range 15 {
				if f.Saturated(h) {
					t.Fatalf("saturated after %d Adds", i)
				}
				f.Add(h, nil)
			}
			if !f.Saturated(h) {
				t.Fatal("not saturated after 15 Adds")
			}
			f.Remove(h, nil)
			if !f.Saturated(h) {
				t.Fatal("a Remove lowered a saturated key's counters")
			}
			if f.Saturated(salted(3, 1)) {
				t.Fatal("another key is saturated")
			}
		})
	}
}

// TestRemoveAbsent: dablooms 0.9.1 decremented the counters of keys never
// added, creating false negatives for real keys.
func TestRemoveAbsent(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.String(), func(t *testing.T) {
			f := newFilter(t, l, 8192, 4)
			for i := 0; i < 500; i++ {
				f.Add(salted(3, i), nil)
			}
			before := snapshot(f)
			pos := make([]uint64, 4)
			partial, tried := 0, 0
			for i := 0; tried < 2000; i++ {
				h := salted(4, i)
				if f.Contains(h) {
					continue // a false positive: removing it is allowed to succeed
				}
				tried++
				f.Positions(h, pos)
				if slices.ContainsFunc(pos, func(p uint64) bool { return f.Get(p) != 0 }) {
					partial++ // some counters shared with present keys
				}
				changed, doubt := uint64(0), uint64(0)
				if f.Remove(h, &Record{Changed: &changed, Doubt: &doubt}) {
					t.Fatalf("Remove of absent key %#x succeeded", h)
				}
				if changed != 0 || doubt != 0 {
					t.Fatalf("failed Remove left record changed=%b doubt=%b", changed, doubt)
				}
			}
			if partial < 100 {
				t.Fatalf("only %d absent keys shared counters with present ones: test too weak", partial)
			}
			if !slices.Equal(before, f.Words()) {
				t.Fatal("Remove of absent keys changed counters")
			}
			for i := 0; i < 500; i++ {
				if !f.Contains(salted(3, i)) {
					t.Fatalf("key %d lost", i)
				}
			}
		})
	}
}

// TestRemovePartwayRollback: a Remove that finds a zero counter after it has
// decremented others restores them. pos lists counter c1 twice, so the
// first pass (ContainsAt) succeeds with c1 = 1 but the second decrement
// finds it at zero.
func TestRemovePartwayRollback(t *testing.T) {
	for _, tc := range []struct {
		name string
		pos  []uint64
		init map[uint64]uint8
	}{
		{"second word", []uint64{3, 20, 20}, map[uint64]uint8{3: 1, 20: 1}},
		{"third word after a shared word", []uint64{3, 5, 40, 70, 40}, map[uint64]uint8{3: 2, 5: 1, 40: 1, 70: 4}},
		{"saturated counter before", []uint64{1, 17, 33, 33}, map[uint64]uint8{1: 15, 17: 3, 33: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFilter(t, Classic, 128, 1)
			for c, v := range tc.init {
				for i := uint8(0); i < v; i++ {
					f.AddAt([]uint64{c}, nil)
				}
			}
			before := snapshot(f)
			if !f.ContainsAt(tc.pos) {
				t.Fatal("setup: positions not all set")
			}
			changed, doubt := uint64(0), uint64(0)
			if f.RemoveAt(tc.pos, &Record{Changed: &changed, Doubt: &doubt}) {
				t.Fatal("RemoveAt succeeded though a counter runs out")
			}
			if !slices.Equal(before, f.Words()) {
				t.Fatalf("counters not restored:\n got %x\nwant %x", f.Words(), before)
			}
			if changed != 0 || doubt != 0 {
				t.Fatalf("record after rollback: changed=%b doubt=%b", changed, doubt)
			}
			// Without a record too.
			if f.RemoveAt(tc.pos, nil) || !slices.Equal(before, f.Words()) {
				t.Fatal("RemoveAt without record: not rolled back")
			}
		})
	}
}

// TestRecord: after an operation the record says exactly which positions
// changed, and nothing is in doubt.
func TestRecord(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.String(), func(t *testing.T) {
			const k = 12
			f := newFilter(t, l, 1<<16, k)
			pos := make([]uint64, k)
			var h uint64
			for i := 0; ; i++ { // a key with k distinct counters
				h = salted(5, i)
				f.Positions(h, pos)
				if distinct(pos) {
					break
				}
			}
			// Saturate positions 2 and 7 beforehand.
			for i := 0; i < 15; i++ {
				f.AddAt([]uint64{pos[2], pos[7]}, nil)
			}
			changed, doubt := uint64(0), uint64(0)
			rec := &Record{Changed: &changed, Doubt: &doubt}
			f.Add(h, rec)
			want := (uint64(1)<<k - 1) &^ (1<<2 | 1<<7)
			if changed != want || doubt != 0 {
				t.Fatalf("after Add: changed=%012b doubt=%b, want changed=%012b doubt=0", changed, doubt, want)
			}
			// Undo with the record reverts exactly those counters.
			f.Undo(pos, +1, rec)
			if changed != 0 || doubt != 0 {
				t.Fatalf("after Undo: changed=%b doubt=%b", changed, doubt)
			}
			for j, p := range pos {
				want := uint8(0)
				if j == 2 || j == 7 {
					want = 15
				}
				if f.Get(p) != want {
					t.Fatalf("after Undo counter %d (position %d) = %d, want %d", p, j, f.Get(p), want)
				}
			}
			// Remove reports its changes the same way.
			f.Add(h, nil)
			f.Add(h, nil)
			if !f.Remove(h, rec) {
				t.Fatal("Remove failed")
			}
			if changed != want || doubt != 0 {
				t.Fatalf("after Remove: changed=%012b doubt=%b, want %012b", changed, doubt, want)
			}
			f.Undo(pos, -1, rec) // undo the remove: back to 2 adds
			if changed != 0 {
				t.Fatalf("after Undo of Remove: changed=%b", changed)
			}
			for j, p := range pos {
				if want := uint8(2); j != 2 && j != 7 && f.Get(p) != want {
					t.Fatalf("after Undo of Remove counter %d = %d, want %d", j, f.Get(p), want)
				}
			}
		})
	}
}

// TestUndoClearsDoubt: Doubt names positions whose compare-and-swap "may
// or may not have happened"; once Undo has returned, none is in doubt, as
// after Add and Remove (each revert leaves its position's bit set until the
// next one or the end of Undo clears it).
func TestUndoClearsDoubt(t *testing.T) {
	for _, dir := range []int{+1, -1} {
		f := newFilter(t, Classic, 1024, 4)
		pos := []uint64{3, 50, 200, 900}
		f.AddAt(pos, nil)
		changed, doubt := uint64(0), uint64(0)
		rec := &Record{Changed: &changed, Doubt: &doubt}
		if dir > 0 {
			f.AddAt(pos, rec)
		} else if !f.RemoveAt(pos, rec) {
			t.Fatal("RemoveAt failed")
		}
		f.Undo(pos, dir, rec)
		if changed != 0 || doubt != 0 {
			t.Errorf("dir %+d: after Undo changed=%b doubt=%b, want 0 0", dir, changed, doubt)
		}
	}
}

func TestUndoWithoutRecord(t *testing.T) {
	f := newFilter(t, Blocked512, 1024, 6)
	h := salted(6, 1)
	pos := make([]uint64, 6)
	f.Positions(h, pos)
	f.Add(h, nil)
	f.Undo(pos, +1, nil)
	if !slices.Equal(f.Words(), make([]uint64, len(f.Words()))) {
		t.Fatal("Undo(+1) of an Add left counters set")
	}
	f.Add(h, nil)
	before := snapshot(f)
	f.Remove(h, nil)
	f.Undo(pos, -1, nil)
	if !slices.Equal(before, f.Words()) {
		t.Fatal("Undo(-1) of a Remove did not restore the counters")
	}
}

// TestConcurrentRemoveSameKey: many goroutines remove a key added once;
// exactly one succeeds and every counter ends at 0 (none wrapped to 15).
func TestConcurrentRemoveSameKey(t *testing.T) {
	keys, g := 300, 8
	if testing.Short() {
		keys = 60
	}
	for _, l := range layouts {
		t.Run(l.String(), func(t *testing.T) {
			f := newFilter(t, l, 1<<14, 8)
			for i := 0; i < keys; i++ {
				h := salted(7, i)
				f.Add(h, nil)
				var wins atomic.Int32
				var wg sync.WaitGroup
				start := make(chan struct{})
				for w := 0; w < g; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						changed, doubt := uint64(0), uint64(0)
						<-start
						ok := f.Remove(h, &Record{Changed: &changed, Doubt: &doubt})
						if ok {
							wins.Add(1)
						} else if changed != 0 {
							t.Errorf("losing remover left changed=%b", changed)
						}
						if doubt != 0 {
							t.Errorf("doubt=%b after Remove", doubt)
						}
					}()
				}
				close(start)
				wg.Wait()
				if wins.Load() != 1 {
					t.Fatalf("key %d: %d removers succeeded, want 1", i, wins.Load())
				}
				for j, w := range f.Words() {
					if w != 0 {
						t.Fatalf("key %d: word %d = %#x after the removal", i, j, w)
					}
				}
			}
		})
	}
}

// TestConcurrentRemoveRollback: removers of one key (added once) that visit
// its counters in different orders make each other fail part-way, which
// exercises the rollback. They retry while the key is present. Exactly one
// removal must succeed in total and every counter end at 0.
func TestConcurrentRemoveRollback(t *testing.T) {
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	f := newFilter(t, Classic, 1024, 1)
	base := []uint64{1, 40, 100, 170, 260, 333, 500, 777} // eight different words
	for r := 0; r < rounds; r++ {
		f.AddAt(base, nil)
		var wins, failures atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := 0; w < 6; w++ {
			pos := slices.Clone(base)
			rnd := rand.New(rand.NewPCG(uint64(r), uint64(w)))
			rnd.Shuffle(len(pos), func(i, j int) { pos[i], pos[j] = pos[j], pos[i] })
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for tries := 0; tries < 100000 && f.ContainsAt(pos); tries++ {
					if f.RemoveAt(pos, nil) {
						wins.Add(1)
						return
					}
					failures.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d removals succeeded, want 1 (%d failed)", r, wins.Load(), failures.Load())
		}
		for _, p := range base {
			if f.Get(p) != 0 {
				t.Fatalf("round %d: counter %d = %d, want 0", r, p, f.Get(p))
			}
		}
	}
}

type op struct {
	h   uint64
	add bool
}

// TestConcurrentMatchesSequential: 8 goroutines add and remove disjoint and
// shared keys at once; the counters end exactly as a sequential replay of
// the same operations leaves them (no update lost). No counter may reach 15,
// so the order of operations cannot matter.
func TestConcurrentMatchesSequential(t *testing.T) {
	const g = 8
	n := 1500
	if testing.Short() {
		n = 300
	}
	for _, l := range layouts {
		t.Run(l.String(), func(t *testing.T) {
			const k = 6
			f := newFilter(t, l, 1<<18, k)
			pos := make([]uint64, k)
			// Shared keys with distinct counters (so 8 adds stay below 15).
			var shared []uint64
			for i := 0; len(shared) < 4; i++ {
				h := salted(8, i)
				f.Positions(h, pos)
				if distinct(pos) {
					shared = append(shared, h)
				}
			}
			plans := make([][]op, g)
			for w := range plans {
				var own []uint64
				for i := 0; i < n; i++ {
					h := salted(uint64(100+w), i)
					plans[w] = append(plans[w], op{h, true})
					own = append(own, h)
					if i%3 == 2 { // remove an earlier own key
						plans[w] = append(plans[w], op{own[i/2], false})
					}
					switch s := shared[(i/50)%len(shared)]; i % 50 {
					case 0:
						plans[w] = append(plans[w], op{s, true})
					case 25:
						plans[w] = append(plans[w], op{s, false})
					}
				}
			}
			// Precondition: no counter can reach 15 in any interleaving. A
			// goroutine's own contribution to a counter peaks at some point
			// of its plan; the sum of the peaks bounds the counter.
			bound := map[uint64]int{}
			for _, p := range plans {
				cur, peak := map[uint64]int{}, map[uint64]int{}
				for _, o := range p {
					f.Positions(o.h, pos)
					for _, c := range pos {
						if o.add {
							cur[c]++
							peak[c] = max(peak[c], cur[c])
						} else {
							cur[c]--
						}
					}
				}
				for c, v := range peak {
					bound[c] += v
				}
			}
			for c, v := range bound {
				if v >= 15 {
					t.Fatalf("setup: counter %d could reach %d", c, v)
				}
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for w := range plans {
				wg.Add(1)
				go func(plan []op) {
					defer wg.Done()
					changed, doubt := uint64(0), uint64(0)
					rec := &Record{Changed: &changed, Doubt: &doubt}
					<-start
					for _, o := range plan {
						changed = 0
						if o.add {
							f.Add(o.h, rec)
						} else if !f.Remove(o.h, rec) {
							t.Errorf("Remove of a key this goroutine added failed")
							return
						}
						if doubt != 0 {
							t.Errorf("doubt=%b after an operation", doubt)
							return
						}
					}
				}(plans[w])
			}
			close(start)
			wg.Wait()
			seq := newFilter(t, l, 1<<18, k)
			for _, p := range plans {
				for _, o := range p {
					if o.add {
						seq.Add(o.h, nil)
					} else if !seq.Remove(o.h, nil) {
						t.Fatal("sequential replay: Remove failed")
					}
				}
			}
			if !slices.Equal(f.Words(), seq.Words()) {
				diff := 0
				for i := range f.Words() {
					if f.Words()[i] != seq.Words()[i] {
						diff++
					}
				}
				t.Fatalf("%d words differ from the sequential replay", diff)
			}
		})
	}
}

// TestConcurrentAddersSaturate: concurrent adds of one key never push a
// counter past 15 (a lost carry would wrap into the next counter).
func TestConcurrentAddersSaturate(t *testing.T) {
	f := newFilter(t, Blocked512, 1024, 8)
	h := salted(9, 0)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				f.Add(h, nil)
			}
		}()
	}
	wg.Wait()
	pos := make([]uint64, 8)
	f.Positions(h, pos)
	set := map[uint64]bool{}
	for _, p := range pos {
		set[p] = true
		if f.Get(p) != 15 {
			t.Fatalf("counter %d = %d, want 15", p, f.Get(p))
		}
	}
	for c := uint64(0); c < f.Counters(); c++ {
		if !set[c] && f.Get(c) != 0 {
			t.Fatalf("counter %d outside the key = %d (carry into a neighbour)", c, f.Get(c))
		}
	}
}

func ExampleFilter() {
	words := make([]uint64, 1024) // a mapped file's counters in real use
	f, _ := New(words, Blocked512, 1024*16, 6)
	key := uint64(0x9e3779b97f4a7c15) // the caller's 64-bit key hash
	f.Add(key, nil)
	f.Add(key, nil)
	fmt.Println(f.Contains(key))
	fmt.Println(f.Remove(key, nil), f.Contains(key))
	fmt.Println(f.Remove(key, nil), f.Contains(key))
	fmt.Println(f.Remove(key, nil)) // never added again: nothing changes
	// Output:
	// true
	// true true
	// true false
	// false
}

func ExampleLayout_Size() {
	counters, k, _ := Classic.Size(1_000_000, 0.01)
	fmt.Printf("classic: k=%d, %.1f bits per key\n", k, float64(counters)*4/1e6)
	bc, _, _ := Blocked512.Size(1_000_000, 0.01)
	fmt.Println("blocked512 costs more, but less than 1.6x:", bc > counters && float64(bc) < 1.6*float64(counters))
	// Output:
	// classic: k=7, 38.3 bits per key
	// blocked512 costs more, but less than 1.6x: true
}

func benchFilter(b *testing.B, l Layout) (*Filter, []uint64) {
	const n = 1 << 20
	c, k, err := l.Size(n, 0.01)
	if err != nil {
		b.Fatal(err)
	}
	f, err := New(make([]uint64, (c+15)/16), l, c, k)
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = salted(10, i)
	}
	return f, keys
}

func BenchmarkAdd(b *testing.B) {
	for _, l := range layouts {
		b.Run(l.String(), func(b *testing.B) {
			f, keys := benchFilter(b, l)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				f.Add(keys[i&(len(keys)-1)], nil)
			}
		})
	}
}

func BenchmarkContains(b *testing.B) {
	for _, l := range layouts {
		for _, present := range []bool{true, false} {
			b.Run(fmt.Sprintf("%v/present=%v", l, present), func(b *testing.B) {
				f, keys := benchFilter(b, l)
				for _, h := range keys[:len(keys)/2] {
					f.Add(h, nil)
				}
				off := 0
				if !present {
					off = len(keys) / 2
				}
				b.ReportAllocs()
				b.ResetTimer()
				hits := 0
				for i := 0; i < b.N; i++ {
					if f.Contains(keys[off+i&(len(keys)/2-1)]) {
						hits++
					}
				}
				if present && b.N > 0 && hits != b.N {
					b.Fatalf("false negatives: %d of %d", b.N-hits, b.N)
				}
			})
		}
	}
}

func BenchmarkRemove(b *testing.B) {
	for _, l := range layouts {
		b.Run(l.String(), func(b *testing.B) {
			f, keys := benchFilter(b, l)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h := keys[i&(len(keys)-1)]
				f.Add(h, nil)
				f.Remove(h, nil)
			}
		})
	}
}

// TestRecordEvidence: the record's evidence names the word and the new value
// of the last compare-and-swap, for adds, removes and the undo of a remove.
func TestRecordEvidence(t *testing.T) {
	f := newFilter(t, Classic, 128, 1)
	var changed, doubt, word, nv uint64
	rec := &Record{Changed: &changed, Doubt: &doubt, Word: &word, New: &nv}
	f.AddAt([]uint64{3, 40, 41}, rec)
	if word != 40>>4+1 || nv != f.Words()[40>>4] {
		t.Fatalf("after add: word %d new %#x, want %d %#x", word, nv, 40>>4+1, f.Words()[40>>4])
	}
	changed = 0 // a new operation (scaling's finish clears the record)
	if !f.RemoveAt([]uint64{40, 3}, rec) || word != 3>>4+1 || nv != f.Words()[0] {
		t.Fatalf("after remove: word %d new %#x, want 1 %#x", word, nv, f.Words()[0])
	}
	// Undoing the remove (as a remove that met a zero counter does): the
	// evidence is that of the last undo step.
	f.Undo([]uint64{40, 3}, -1, rec)
	if word != 3>>4+1 || nv != f.Words()[0] || changed != 0 || doubt != 0 {
		t.Fatalf("after undo: word %d new %#x changed %b doubt %b, want 1 %#x 0 0", word, nv, changed, doubt, f.Words()[0])
	}
	// Without Word and New, nothing is recorded and nothing breaks.
	f.AddAt([]uint64{5}, &Record{Changed: &changed, Doubt: &doubt})
}
