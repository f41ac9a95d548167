package scaling

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dablooms/dablooms/counting4"
)

// churnWriter is one writer goroutine's published progress: keys [0, added) have
// been added (their Add returned), and the removal of keys [0, removing) has
// begun or finished. Key i of writer w is "w<w>-<i>".
type churnWriter struct {
	added    atomic.Int64
	removing atomic.Int64
	_        [48]byte
}

// TestConcurrentAddRemoveContains runs 4 writers, each adding its own keys
// and removing them again a fixed lag behind, beside 4 readers that check
// keys whose Add has returned and whose Remove has not begun. The chain
// grows during the run: each writer alone keeps more keys live than the
// first filter holds, so it grows even if the scheduler runs the writers
// one after another.
// No reader may see a false negative, and once every key has been removed
// every counter of every filter is zero again and every item count is 0.
// Memory mode, so the race detector sees every access (run with -race).
//
// It also covers the original's "two threads doing only checks" defect
// (false negatives from a shared scratch buffer): the readers share the
// Filter and only check.
//
// Ids come from one atomic counter, taken just before each Add, so an Add
// may race a growth with an id inside the older filter's range. Should such
// a key end up in a filter whose id range overlaps another's, its Remove
// could land in (or be refused by) the wrong one if the key were a false
// positive there (the documented, unavoidable counting-filter loss). The
// growth factor is therefore large: the newer filter is less than a fifth
// full while the older filter's keys are removed, and its false-positive
// rate is ~1e-9. The error rate keeps k ≤ 9: the classic layout's double
// hashing can put most of a key's counters on one counter in a small filter
// (a step h2·m/2^64 near 0 or m), and with k ≥ 15 such a key alone
// saturates it, which would leave a counter at 15 after the removes.
func TestConcurrentAddRemoveContains(t *testing.T) {
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"default", Options{Capacity: 500, ErrorRate: 0.01, GrowthFactor: 32, Seed: 0xc0c0}},
		{"blocked512", Options{Capacity: 500, ErrorRate: 0.01, GrowthFactor: 32, Layout: counting4.Blocked512, Seed: 0xc0c2}},
		{"classic", Options{Capacity: 500, ErrorRate: 0.01, GrowthFactor: 32, Layout: counting4.Classic, Seed: 0xc0c1}},
	} {
		t.Run(c.name, func(t *testing.T) { runChurn(t, &c.o) })
	}
}

func runChurn(t *testing.T, o *Options) {
	const writers, readers = 4, 4
	perWriter, lag := 6000, 700
	if testing.Short() {
		perWriter, lag = 2500, 600
	}
	f, _ := newStore(t, inMemory, o)
	var (
		ws      [writers]churnWriter
		nextID  atomic.Uint64
		stop    atomic.Bool
		checks  atomic.Int64
		falseNs atomic.Int64
		wg, rg  sync.WaitGroup
	)
	key := func(w, i int) []byte { return fmt.Appendf(nil, "w%d-%d", w, i) }
	ids := make([][]uint64, writers)
	for w := range writers {
		ids[w] = make([]uint64, perWriter)
	}
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			remove := func(i int) {
				ws[w].removing.Store(int64(i + 1)) // published before the Remove starts
				if err := f.Remove(key(w, i), ids[w][i]); err != nil {
					t.Errorf("writer %d: Remove(%d): %v", w, i, err)
				}
			}
			for i := range perWriter {
				ids[w][i] = nextID.Add(1)
				if err := f.Add(key(w, i), ids[w][i]); err != nil {
					t.Errorf("writer %d: Add(%d): %v", w, i, err)
					return
				}
				ws[w].added.Store(int64(i + 1))
				if i >= lag {
					remove(i - lag)
				}
			}
			// On 2 CPUs the writers can finish before a reader is
			// scheduled: hold the last removals until the readers have
			// checked keys this writer still holds.
			for deadline := time.Now().Add(10 * time.Second); checks.Load() < 100 && time.Now().Before(deadline); {
				runtime.Gosched()
			}
			for i := max(0, perWriter-lag); i < perWriter; i++ {
				remove(i)
			}
		}()
	}
	for r := range readers {
		rg.Add(1)
		go func() {
			defer rg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 99))
			for !stop.Load() {
				w := rng.IntN(writers)
				lo, hi := ws[w].removing.Load(), ws[w].added.Load()
				if hi <= lo {
					continue
				}
				i := int(lo + rng.Int64N(hi-lo))
				checks.Add(1)
				if !f.Contains(key(w, i)) {
					// A false negative unless the Remove of key i was
					// published before Contains returned.
					if int64(i) >= ws[w].removing.Load() {
						falseNs.Add(1)
						t.Errorf("reader %d: false negative for writer %d key %d (added, not removed)", r, w, i)
					}
				}
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	rg.Wait()

	st := f.Stats()
	var ranges []string
	for _, fs := range st.Filters {
		ranges = append(ranges, fmt.Sprintf("#%d ids [%d,%d] k=%d", fs.Index, fs.FirstID, fs.LastID, fs.K))
	}
	t.Logf("%d writers × %d keys, live set %d (capacity %d): %d filters %v; %d checks by %d readers, %d false negatives",
		writers, perWriter, writers*lag, o.Capacity, len(st.Filters), ranges, checks.Load(), readers, falseNs.Load())
	if len(st.Filters) < 2 {
		t.Errorf("the chain did not grow during the test (%d filter)", len(st.Filters))
	}
	if checks.Load() == 0 {
		t.Error("the readers checked nothing")
	}
	for _, fs := range st.Filters {
		if fs.Count != 0 {
			t.Errorf("filter %d: item count %d after equal adds and removes", fs.Index, int64(fs.Count))
		}
	}
	for i, m := range f.chain.Load().f {
		nz, sat := 0, 0
		for _, w := range m.cf.Words() {
			if w != 0 {
				nz++
			}
		}
		for c := range m.cf.Counters() {
			if m.cf.Get(c) == 15 {
				sat++
			}
		}
		if nz != 0 {
			t.Errorf("filter %d: after equal adds and removes %d counter words are not zero (%d counters saturated)", i, nz, sat)
		}
	}
	if got, want := f.MemSeqnum(), uint64(2*writers*perWriter); got != want {
		t.Errorf("MemSeqnum %d, want %d", got, want)
	}
}

// TestConcurrentReadersOnly is the original's failing probe as such: several
// goroutines doing nothing but checks on a filled filter see no false
// negative (the original saw 61,529 and 376,114 in 2M checks).
func TestConcurrentReadersOnly(t *testing.T) {
	requireFiles(t)
	const keys = 20_000
	f, _ := newStore(t, inMemory, &Options{Capacity: 5000, ErrorRate: 0.01, Seed: 0xc1})
	for i := range keys {
		if err := f.Add(makeKey(nil, "key-", i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	checksPer := 200_000
	if testing.Short() {
		checksPer = 50_000
	}
	var wg sync.WaitGroup
	var fn atomic.Int64
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for c := range checksPer {
				buf = makeKey(buf, "key-", (c*7919+g*13)%keys)
				if !f.Contains(buf) {
					fn.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if fn.Load() != 0 {
		t.Fatalf("%d false negatives in %d concurrent checks", fn.Load(), 4*checksPer)
	}
}
