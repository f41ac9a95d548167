package scaling

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
)

// windowKey is the key of event j of hour h in the sliding-window tests.
func windowKey(h, j int) []byte { return fmt.Appendf(nil, "event-%d-%d", h, j) }

// TestRetireBefore: filters below the id go, the newest never does, keys
// at or above the id stay, and the count of retired filters is kept.
func TestRetireBefore(t *testing.T) {
	for _, mode := range []storeMode{inMemory, inFile} {
		t.Run(string(mode), func(t *testing.T) {
			f, _ := newStore(t, mode, &Options{Capacity: 100, GrowthFactor: 1})
			addKeys(t, f, 0, 1000)
			before := f.Stats()
			if len(before.Filters) < 5 {
				t.Fatalf("only %d filters", len(before.Filters))
			}
			// Nothing lies wholly below id 0 or the first filter's last id.
			if n, err := f.RetireBefore(before.Filters[0].LastID); n != 0 || err != nil {
				t.Fatalf("RetireBefore(first filter's last id) = %d, %v; want 0", n, err)
			}
			cut := before.Filters[3].FirstID
			n, err := f.RetireBefore(cut)
			if err != nil || n != 3 {
				t.Fatalf("RetireBefore(%d) = %d, %v; want 3", cut, n, err)
			}
			after := f.Stats()
			if after.Retired != 3 || len(after.Filters) != len(before.Filters)-3 || after.Filters[0].FirstID != cut {
				t.Fatalf("after: retired %d, %d filters from id %d; before %d filters", after.Retired, len(after.Filters), after.Filters[0].FirstID, len(before.Filters))
			}
			for i := int(cut); i < 1000; i++ {
				if !f.Contains(kKey(i)) {
					t.Fatalf("key %d (id ≥ %d) lost", i, cut)
				}
			}
			gone := 0
			for i := range int(cut) {
				if !f.Contains(kKey(i)) {
					gone++
				}
			}
			if gone < int(cut)*9/10 {
				t.Fatalf("only %d of %d retired keys are gone", gone, cut)
			}
			// Everything but the newest: the newest stays.
			n, err = f.RetireBefore(header.MaxID)
			if err != nil || n != len(after.Filters)-1 {
				t.Fatalf("RetireBefore(max) = %d, %v; want %d", n, err, len(after.Filters)-1)
			}
			if st := f.Stats(); len(st.Filters) != 1 {
				t.Fatalf("%d filters left, want the newest", len(st.Filters))
			}
			if err := f.Add([]byte("after"), 5000); err != nil || !f.Contains([]byte("after")) {
				t.Fatalf("Add after retiring: %v", err)
			}
		})
	}
}

// TestRetireRing is the sliding window of a time-ordered stream: every
// hour adds its events with the hour as id and retires what is older than
// the window. Far more filters than a directory holds pass through; no key
// inside the window is ever missing, the chain stays short, and the file
// stops growing once the window is full.
func TestRetireRing(t *testing.T) {
	for _, mode := range []storeMode{inMemory, inFile} {
		t.Run(string(mode), func(t *testing.T) {
			const hours, window, perHour = 1000, 6, 150
			f, path := newStore(t, mode, &Options{Capacity: 200, GrowthFactor: 1})
			var settled int64
			maxChain := 0
			for h := range hours {
				for j := range perHour {
					if err := f.Add(windowKey(h, j), uint64(h)); err != nil {
						t.Fatalf("hour %d: %v", h, err)
					}
				}
				if h >= window {
					if _, err := f.RetireBefore(uint64(h - window + 1)); err != nil {
						t.Fatalf("hour %d: retire: %v", h, err)
					}
				}
				for w := max(0, h-window+1); w <= h; w++ {
					for j := 0; j < perHour; j += 7 {
						if !f.Contains(windowKey(w, j)) {
							t.Fatalf("hour %d: key %d of hour %d (inside the window) missing", h, j, w)
						}
					}
				}
				st := f.Stats()
				maxChain = max(maxChain, len(st.Filters))
				if h == 100 {
					settled = st.FileSize
				}
				if h > 100 && st.FileSize > settled {
					t.Fatalf("hour %d: file grew to %d bytes from %d at hour 100", h, st.FileSize, settled)
				}
			}
			st := f.Stats()
			if st.Retired < 2*header.MaxFilters {
				t.Fatalf("only %d filters retired: the ring did not go round", st.Retired)
			}
			if maxChain > window+2 {
				t.Fatalf("chain reached %d filters for a window of %d hours", maxChain, window)
			}
			t.Logf("%d filters retired, chain at most %d, file %d bytes", st.Retired, maxChain, st.FileSize)
			if mode == inFile {
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
				g, err := Open(path, &OpenOptions{AllowUnclean: true})
				if err != nil {
					t.Fatal(err)
				}
				defer g.Close()
				for w := hours - window; w < hours; w++ {
					for j := range perHour {
						if !g.Contains(windowKey(w, j)) {
							t.Fatalf("after reopening: key %d of hour %d missing", j, w)
						}
					}
				}
				if gs := g.Stats(); gs.Retired != st.Retired || len(gs.Filters) != len(st.Filters) {
					t.Fatalf("reopened: %d retired, %d filters; was %d, %d", gs.Retired, len(gs.Filters), st.Retired, len(st.Filters))
				}
			}
		})
	}
}

// TestRetireSeenByOtherHandles: a retirement by one handle is seen by
// another (a read-only one too) at its next lookup, and a growth by the
// other reuses the retired space.
func TestRetireSeenByOtherHandles(t *testing.T) {
	a, path := newStore(t, inFile, &Options{Capacity: 100, GrowthFactor: 1})
	b, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ro, err := Open(path, &OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	addKeys(t, a, 0, 600)
	if !ro.Contains([]byte("k0")) || !b.Contains([]byte("k0")) {
		t.Fatal("k0 missing before the retirement")
	}
	n, err := a.RetireBefore(400)
	if err != nil || n == 0 {
		t.Fatalf("RetireBefore = %d, %v", n, err)
	}
	for _, h := range []*Filter{b, ro} {
		st := h.Stats()
		if st.Retired != uint64(n) {
			t.Fatalf("other handle sees %d retired, want %d", st.Retired, n)
		}
		gone := 0
		for i := range 300 {
			if !h.Contains(kKey(i)) {
				gone++
			}
		}
		if gone < 270 {
			t.Fatalf("other handle still finds %d of 300 retired keys", 300-gone)
		}
	}
	size := a.Stats().FileSize
	addKeys(t, b, 600, 900)
	for i := 400; i < 900; i++ {
		if !a.Contains(kKey(i)) || !ro.Contains(kKey(i)) {
			t.Fatalf("key %d missing", i)
		}
	}
	if st := a.Stats(); st.FileSize != size {
		t.Fatalf("file grew from %d to %d bytes though retired space was free", size, st.FileSize)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != size {
		t.Fatalf("file is %d bytes, Stats says %d", fi.Size(), size)
	}
}

// TestRetireRacingAdd: an Add that read the chain before a retirement and
// is routed to a filter that is retired before its record is published
// backs out and goes to a live filter. With the check disabled (the
// negative control) the key lands in the retired filter and is lost.
func TestRetireRacingAdd(t *testing.T) {
	for _, control := range []bool{false, true} {
		t.Run(fmt.Sprintf("control=%v", control), func(t *testing.T) {
			var armed atomic.Bool
			var once sync.Once
			routed := make(chan struct{})
			resume := make(chan struct{})
			hook := func(seq uint64) {
				if seq == 0 && armed.Load() {
					once.Do(func() { close(routed); <-resume })
				}
			}
			f, _ := newStore(t, inMemory, &Options{Capacity: 100, GrowthFactor: 1, knobs: &testknobs.Knobs{RouteHook: hook, SkipGoneCheck: control}})
			addKeys(t, f, 0, 300)
			first := f.Stats().Filters[0]
			armed.Store(true)
			late := []byte("late-key")
			errc := make(chan error, 1)
			go func() { errc <- f.Add(late, first.FirstID) }() // inside filter 0's range: its slack
			<-routed
			if n, err := f.RetireBefore(first.LastID + 1); err != nil || n != 1 {
				t.Errorf("RetireBefore = %d, %v", n, err)
			}
			close(resume)
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			found := f.Contains(late)
			if control {
				if found {
					t.Fatal("negative control: the Add that wrote into a retired filter should be lost")
				}
				return
			}
			if !found {
				t.Fatal("an Add that raced a retirement was lost")
			}
			if err := f.Remove(late, first.FirstID); err != nil {
				t.Fatalf("Remove of the re-routed key: %v", err)
			}
		})
	}
}

// TestRetireFlags: retiring makes the file version 1.2 (FlagRing), which a
// reader finds on reopen; a file that never retired keeps no ring flag.
func TestRetireFlags(t *testing.T) {
	f, path := newStore(t, inFile, &Options{Capacity: 100, GrowthFactor: 1})
	addKeys(t, f, 0, 300)
	m := readMetaOf(t, path)
	if m.Flags&header.FlagRing != 0 {
		t.Fatal("FlagRing set before any retirement")
	}
	if _, err := f.RetireBefore(150); err != nil {
		t.Fatal(err)
	}
	m = readMetaOf(t, path)
	if m.Flags&header.FlagRing == 0 || m.Retired == 0 {
		t.Fatalf("after retiring: flags %#x, retired %d", m.Flags, m.Retired)
	}
	if _, err := f.RetireBefore(0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.RetireBefore(1000); !errors.Is(err, ErrClosed) {
		t.Fatalf("RetireBefore after Close: %v, want ErrClosed", err)
	}
	ro, err := Open(path, &OpenOptions{ReadOnly: true, AllowUnclean: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.RetireBefore(1000); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("RetireBefore read-only: %v, want ErrReadOnly", err)
	}
}

// kKey is key i of these tests, added with id i (addKeys).
func kKey(i int) []byte { return fmt.Appendf(nil, "k%d", i) }

// addKeys adds kKey(i) with id i for every i in [lo, hi).
func addKeys(t testing.TB, f *Filter, lo, hi int) {
	t.Helper()
	for i := lo; i < hi; i++ {
		if err := f.Add(kKey(i), uint64(i)); err != nil {
			t.Fatalf("Add of key %d: %v", i, err)
		}
	}
}

// readMetaOf decodes the newest valid metadata copy of the file at path.
func readMetaOf(t *testing.T, path string) *header.Meta {
	t.Helper()
	b := mustRead(t, path)
	p, err := header.Pick(b, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return p.Meta
}

// TestRetireCutShortFinishedByOpen: a retirement whose process died after
// raising the hot retired word and before rewriting the directory is
// already in force for readers (a read-only handle skips the filters) and
// is finished by the next read-write Open. (The retirement marked the file
// dirty first: the last Add, not flushed, stands for that mark.)
func TestRetireCutShortFinishedByOpen(t *testing.T) {
	f, path := newStore(t, inFile, &Options{Capacity: 100, GrowthFactor: 1})
	addKeys(t, f, 0, 499)
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	addKeys(t, f, 499, 500)
	before := f.Stats()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// The dead retirement: two filters retired in the hot page only.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint64(b[header.RetiredOffset:], 2)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(path, &OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if st := ro.Stats(); st.Retired != 2 || len(st.Filters) != len(before.Filters)-2 {
		t.Fatalf("read-only handle: %d retired, %d filters; want 2, %d", st.Retired, len(st.Filters), len(before.Filters)-2)
	}
	ro.Close()
	if m := readMetaOf(t, path); m.Retired != 0 {
		t.Fatalf("a read-only open wrote the directory: retired %d", m.Retired)
	}
	g, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if m := readMetaOf(t, path); m.Retired != 2 || len(m.Filters) != len(before.Filters)-2 || m.Flags&header.FlagRing == 0 {
		t.Fatalf("after a read-write open: retired %d, %d filters, flags %#x", m.Retired, len(m.Filters), m.Flags)
	}
	from := before.Filters[2].FirstID
	for i := int(from); i < 500; i++ {
		if !g.Contains(kKey(i)) {
			t.Fatalf("key %d lost", i)
		}
	}
}

// TestRetireConcurrent: goroutines add keys with ids from a shared clock
// (so ids arrive a little out of order: late Adds), a retirer keeps
// retiring everything older than a window, and checkers look up keys whose
// Add returned: a key whose id is at or above every cut passed to
// RetireBefore so far must be found. Runs under -race in memory mode.
func TestRetireConcurrent(t *testing.T) {
	for _, mode := range []storeMode{inMemory, inFile} {
		t.Run(string(mode), func(t *testing.T) {
			f, _ := newStore(t, mode, &Options{Capacity: 200, GrowthFactor: 1})
			const writers, window = 4, 1500
			perWriter := 6000
			if mode == inFile {
				perWriter = 3000 // every retirement syncs the directory twice
			}
			var clock, cut atomic.Uint64
			type added struct {
				key []byte
				id  uint64
			}
			var mu sync.Mutex
			var recent []added
			var wg sync.WaitGroup
			done := make(chan struct{})
			errs := make(chan error, 16)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range perWriter {
						// Writers may not run more than a few windows ahead
						// of the retirer (an hour is long next to a growth):
						// a chain that outruns its retirements ends at 64
						// filters with ErrFull, as it should.
						for clock.Load() > cut.Load()+4*window {
							time.Sleep(10 * time.Microsecond)
						}
						id := clock.Add(1)
						k := fmt.Appendf(nil, "w%d-%d", w, i)
						if err := f.Add(k, id); err != nil {
							errs <- fmt.Errorf("Add: %v", err)
							return
						}
						mu.Lock()
						recent = append(recent, added{k, id})
						mu.Unlock()
					}
				}()
			}
			var aux sync.WaitGroup
			aux.Add(2)
			retired := 0
			go func() { // the retirer
				defer aux.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					if c := clock.Load(); c > window {
						cut.Store(c - window) // before the call: an upper bound on every cut used
						n, err := f.RetireBefore(c - window)
						if err != nil {
							errs <- fmt.Errorf("RetireBefore: %v", err)
							return
						}
						retired += n
					}
					time.Sleep(100 * time.Microsecond)
				}
			}()
			go func() { // the checker
				defer aux.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					c := cut.Load()
					mu.Lock()
					tail := recent[max(0, len(recent)-500):]
					mu.Unlock()
					for _, a := range tail {
						if a.id >= c && !f.Contains(a.key) {
							if a.id >= cut.Load() { // still inside the window
								errs <- fmt.Errorf("key %s (id %d, cut %d) missing", a.key, a.id, c)
								return
							}
						}
					}
				}
			}()
			wg.Wait()
			close(done)
			aux.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			st := f.Stats()
			if st.Retired == 0 || retired == 0 {
				t.Fatalf("nothing retired (%d filters)", len(st.Filters))
			}
			c := cut.Load()
			for _, a := range recent {
				if a.id >= c && !f.Contains(a.key) {
					t.Fatalf("at the end: key %s (id %d ≥ cut %d) missing", a.key, a.id, c)
				}
			}
			t.Logf("%d filters retired, %d in the chain, file %d bytes", st.Retired, len(st.Filters), st.FileSize)
		})
	}
}

// TestRetireWidenRace: an Add that has widened the newest filter's max id
// to X but not yet its min id, when that filter is sealed by a growth and
// RetireBefore(X) runs, must keep the filter: the max id alone decides.
// (Found by review: deciding by "empty" (min > max) retired the filter
// and lost the key.) The Add is driven through the calls add makes.
func TestRetireWidenRace(t *testing.T) {
	f, _ := newStore(t, inMemory, &Options{Capacity: 100, GrowthFactor: 1})
	addKeys(t, f, 0, 100)
	c, _ := f.current()
	if err := f.grow(c.end, growFull); err != nil { // an empty newest filter
		t.Fatal(err)
	}
	c, _ = f.current()
	const id = 500
	key := []byte("the-key")
	h := f.hash(c, key)
	m, late, sh := route(f.w, c, id, h.native)
	if m == nil || late || m != c.f[len(c.f)-1] {
		t.Fatalf("route: %v %v", m, late)
	}
	kh := m.keyHash(h)
	r := f.w.claimRecord(f, kh, header.OpAdd, m)
	if m.gone() {
		t.Fatal("retired already")
	}
	if err := f.ensureDirty(&m.line.Mark); err != nil {
		t.Fatal(err)
	}
	// widen's first half: the max id.
	if v := atomic.LoadUint64(&m.line.MaxID); v&header.Sealed != 0 || !atomic.CompareAndSwapUint64(&m.line.MaxID, v, id) {
		t.Fatal("max CAS")
	}
	vmin := atomic.LoadUint64(&m.line.MinID)
	// Preempted here: other Adds fill the filter and a growth seals it.
	atomic.AddUint64(&m.line.Pending, 99)
	if err := f.grow(c.end, growFull); err != nil {
		t.Fatal(err)
	}
	atomic.AddUint64(&m.line.Pending, ^uint64(98))
	type res struct {
		n   int
		err error
	}
	rc := make(chan res, 1)
	go func() { n, err := f.RetireBefore(id); rc <- res{n, err} }()
	deadline := time.Now().Add(2 * time.Second)
	for atomic.LoadUint64(f.retired) < 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // a retirement of the filter would now wait for the record
	if !atomic.CompareAndSwapUint64(&m.line.MinID, vmin, id) {
		t.Fatal("min CAS failed")
	}
	var pos [counting4.MaxK]uint64
	p := pos[:m.desc.K]
	m.cf.Positions(kh, p)
	m.cf.AddAt(p, &counting4.Record{Changed: &r.rec.Changed, Doubt: &r.rec.Doubt, Word: &r.rec.Word, New: &r.rec.New})
	f.w.count(m, r, 1)
	f.w.release(m, sh)
	f.w.finish(r, true) // the Add returns nil
	got := <-rc
	if got.err != nil || got.n != 1 {
		t.Fatalf("RetireBefore(%d) = %d, %v; want 1 (the first filter only)", id, got.n, got.err)
	}
	if !f.Contains(key) {
		t.Fatalf("key with id %d (= the cut) lost", id)
	}
}

// TestRetireForgedWord: a hot retired word raised past the newest filter
// under an open handle is corruption: operations fail, and the chain does
// not grow to its end. (Found by review: each Add backed out, leaked an
// admission, grew the chain, and repeated until ErrFull at 64 filters.)
func TestRetireForgedWord(t *testing.T) {
	f, _ := newStore(t, inMemory, &Options{Capacity: 100, GrowthFactor: 1})
	addKeys(t, f, 0, 300)
	n := len(f.Stats().Filters)
	atomic.StoreUint64(f.retired, 1<<40)
	err := f.Add([]byte("x"), 1000)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Add with a forged retired word: %v, want ErrCorrupt", err)
	}
	if !f.Contains([]byte("k1")) {
		t.Fatal("Contains must not rule a key out when the chain cannot be read")
	}
	atomic.StoreUint64(f.retired, 0)
	if st := f.Stats(); len(st.Filters) != n {
		t.Fatalf("%d filters after the forged word, was %d", len(st.Filters), n)
	}
}

// TestRetireVersion10File: a file written by version 1.0 (filters without
// extra pages) retires like any other and becomes a 1.2 ring file whose
// window's keys all survive a reopen.
func TestRetireVersion10File(t *testing.T) {
	requireFiles(t)
	// The first 500 keys in filters as version 1.0 laid them out.
	path := copyFixture(t, "v10-retire.dbl")
	if m := readMetaOf(t, path); m.Flags != 0 || m.Filters[0].Extra != 0 {
		t.Fatalf("a 1.0-layout file carries flags %#x, filter 0 extra %d bytes", m.Flags, m.Filters[0].Extra)
	}
	f, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if !f.Contains(kKey(i)) {
			t.Fatalf("the fixture lacks key %d", i)
		}
	}
	if n, err := f.RetireBefore(250); err != nil || n == 0 {
		t.Fatalf("RetireBefore = %d, %v", n, err)
	}
	addKeys(t, f, 500, 800) // the new filters have extra pages
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if m := readMetaOf(t, path); m.Flags&header.FlagRing == 0 || m.Retired == 0 {
		t.Fatalf("after retiring: flags %#x, retired %d", m.Flags, m.Retired)
	}
	g, err := Open(path, &OpenOptions{AllowUnclean: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for i := 250; i < 800; i++ {
		if !g.Contains(kKey(i)) {
			t.Fatalf("key %d lost", i)
		}
	}
}
