package scaling

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dablooms/dablooms/internal/testknobs"
)

// items is the item count of the whole chain.
func items(f *Filter) (n uint64) {
	for _, fs := range f.Stats().Filters {
		n += fs.Count
	}
	return n
}

// An exclusive Filter, in memory and in a file, used by several goroutines
// at once (its modifications, Flush and lookups), with single operations
// and batches, ends with exactly the counters and item count of a shared
// Filter given the same operations one at a time.
func TestExclusiveEqualsShared(t *testing.T) {
	for _, mode := range []string{"memory", "file"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "file" {
				requireFiles(t)
			}
			const workers, per = 4, 3000
			opts := func(excl bool) *Options {
				return &Options{Capacity: 4 * workers * per, ErrorRate: 0.01, Seed: 42, Exclusive: excl}
			}
			mk := func(name string, excl bool) *Filter {
				var f *Filter
				var err error
				if mode == "memory" {
					f, err = NewMemory(opts(excl))
				} else {
					f, err = Create(filepath.Join(t.TempDir(), name), opts(excl))
				}
				if err != nil {
					t.Fatal(err)
				}
				if f.isExclusive() != excl {
					t.Fatalf("exclusive: %v, want %v", f.isExclusive(), excl)
				}
				return f
			}
			ex, sh := mk("ex.dbl", true), mk("sh.dbl", false)
			defer ex.Close()
			defer sh.Close()
			key := func(w, i int) []byte { return fmt.Appendf(nil, "w%d-%d", w, i) }
			var wg sync.WaitGroup
			errc := make(chan error, workers+1)
			var stop atomic.Bool
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Adds, one by one and in batches; then every third
					// key removed; ids rise per worker (one filter here).
					var keys [][]byte
					var ids []uint64
					for i := range per {
						if i%2 == 0 {
							if err := ex.Add(key(w, i), 1); err != nil {
								errc <- err
								return
							}
						} else {
							keys, ids = append(keys, key(w, i)), append(ids, 1)
						}
					}
					if err := ex.AddBatch(keys, ids); err != nil {
						errc <- err
						return
					}
					for i := 0; i < per; i += 3 {
						if err := ex.Remove(key(w, i), 1); err != nil {
							errc <- fmt.Errorf("remove %s: %w", key(w, i), err)
							return
						}
					}
				}()
			}
			flusher := make(chan struct{})
			go func() { // lookups and flushes beside them
				defer close(flusher)
				for !stop.Load() {
					ex.Contains(key(0, 1))
					if err := ex.Flush(); err != nil {
						errc <- err
						return
					}
				}
			}()
			wg.Wait()
			stop.Store(true)
			<-flusher
			close(errc)
			for err := range errc {
				t.Fatal(err)
			}
			for w := range workers {
				for i := range per {
					if err := sh.Add(key(w, i), 1); err != nil {
						t.Fatal(err)
					}
				}
				for i := 0; i < per; i += 3 {
					if err := sh.Remove(key(w, i), 1); err != nil {
						t.Fatal(err)
					}
				}
			}
			if !sameWords(counterWords(ex), counterWords(sh)) {
				t.Error("the exclusive Filter's counters differ from the shared one's")
			}
			if a, b := items(ex), items(sh); a != b {
				t.Errorf("items: exclusive %d, shared %d", a, b)
			}
			for w := range workers {
				for i := 1; i < per; i += 3 {
					if !ex.Contains(key(w, i)) {
						t.Fatalf("%s was added and not removed; Contains is false", key(w, i))
					}
				}
			}
		})
	}
}

// An exclusive Filter grows, through single Adds and batches, as a shared
// one does, and finds what it removes in the right filter.
func TestExclusiveGrowth(t *testing.T) {
	f, err := NewMemory(&Options{Capacity: 500, ErrorRate: 0.01, Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys, ids := batchKeys("g", 6000)
	for i := 0; i < 3000; i++ {
		if err := f.Add(keys[i], ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.AddBatch(keys[3000:], ids[3000:]); err != nil {
		t.Fatal(err)
	}
	if nf, n := len(f.Stats().Filters), items(f); nf < 4 || n != 6000 {
		t.Fatalf("%d filters, %d items; want several filters and 6000 items", nf, n)
	}
	res := make([]error, len(keys))
	if n, err := f.RemoveBatch(keys, ids, res); err != nil || n != len(keys) {
		t.Fatalf("RemoveBatch removed %d of %d: %v (first: %v)", n, len(keys), err, errors.Join(res...))
	}
	if n := items(f); n != 0 {
		t.Fatalf("%d items left after removing every key", n)
	}
}

// While an exclusive handle is open, the other writers of the file, in
// this process or any other, wait for it (up to their LockTimeout) and then
// go on; their lookups do not wait. Both add the same keys at the same
// time: the shared handle's first Add must return only after the
// exclusive handle closed, and no count may be lost to the exclusive
// handle's stores (no compare-and-swap) against the same Adds made one at
// a time. The negative control skips the freeze: the shared handle's Add
// then returns while the exclusive handle is open, which the test waits
// for (so it does not depend on the two goroutines overlapping) and the
// same check must flag.
func TestExclusiveHoldsOtherWriters(t *testing.T) {
	requireFiles(t)
	for _, control := range []bool{false, true} {
		t.Run(map[bool]string{false: "exclusive", true: "control-no-freeze"}[control], func(t *testing.T) {
			if control {
				r := exclusiveRound(t, true)
				if r.early == nil {
					t.Fatal("the check did not flag the control's shared Add, which returned while the exclusive handle was open")
				}
				return
			}
			rounds := 3
			if testing.Short() {
				rounds = 1
			}
			for round := 0; round < rounds; round++ {
				r := exclusiveRound(t, false)
				if r.early != nil {
					t.Fatalf("round %d: %v", round, r.early)
				}
				if r.lost {
					t.Fatalf("round %d: counts were lost with the exclusive handle holding the other writer", round)
				}
			}
		})
	}
}

// exclusiveResult is what exclusiveRound saw.
type exclusiveResult struct {
	// early: the shared handle's first Add returned before the exclusive
	// handle closed (nil: it waited).
	early error
	// lost: the counters are lower than those of the same Adds made one
	// at a time (only checked when not a control).
	lost bool
}

// waitedForClose reports an error if the shared handle's first Add
// returned (at first) before the exclusive handle closed (at closedAt).
func waitedForClose(first time.Time, closedAt int64) error {
	if first.UnixNano() < closedAt {
		return fmt.Errorf("the shared handle's first Add returned %v before the exclusive handle closed", time.Duration(closedAt-first.UnixNano()))
	}
	return nil
}

// exclusiveRound adds the same keys through an exclusive and a shared
// handle at once. With control (the exclusive handle without its freeze)
// it waits, up to 30 s, for the shared handle's first Add to return
// before the exclusive handle goes on, and does not compare counts.
func exclusiveRound(t *testing.T, control bool) exclusiveResult {
	const n = 20_000
	dir := t.TempDir()
	path := filepath.Join(dir, "x.dbl")
	o := &Options{Capacity: 4 * n, ErrorRate: 0.05, Seed: 7}
	f, err := Create(path, o)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	sh, err := Open(path, &OpenOptions{LockTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	ex, err := Open(path, &OpenOptions{Exclusive: true, knobs: &testknobs.Knobs{ExclusiveSkipFreeze: control}})
	if err != nil {
		t.Fatal(err)
	}
	keys, ids := batchKeys("s", n)
	var closedAt atomic.Int64
	defer func() {
		if closedAt.Load() == 0 { // a failure: let the shared handle go on
			ex.Close()
		}
	}()
	firstAdd := make(chan time.Time, 1)
	done := make(chan error, 1)
	go func() {
		for i := range keys {
			if err := sh.Add(keys[i], ids[i]); err != nil {
				done <- err
				return
			}
			if i == 0 {
				firstAdd <- time.Now()
			}
		}
		done <- nil
	}()
	var first time.Time
	if control {
		select {
		case first = <-firstAdd:
		case err := <-done:
			if err != nil {
				t.Fatalf("the shared handle's Add: %v", err)
			}
			first = <-firstAdd // sent before done
			done <- nil
		case <-time.After(30 * time.Second):
			t.Fatal("the control's shared Add did not return within 30 s beside the exclusive handle: the freeze was not skipped")
		}
	}
	for i := range keys {
		if err := ex.Add(keys[i], ids[i]); err != nil {
			t.Fatal(err)
		}
		if i == n/2 && !control {
			// Lookups go on beside the exclusive handle; the other
			// handle's writes do not (its first Add has not returned).
			if !sh.Contains(keys[0]) {
				t.Fatal("the shared handle does not see the exclusive handle's Add")
			}
			select {
			case at := <-firstAdd:
				t.Fatalf("the shared handle's Add returned at %v, while the exclusive handle was open", at)
			default:
			}
		}
	}
	closedAt.Store(time.Now().UnixNano())
	if err := ex.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !control {
		first = <-firstAdd
	}
	res := exclusiveResult{early: waitedForClose(first, closedAt.Load())}
	if control {
		return res
	}
	// The same Adds, one at a time, in memory.
	ref, err := NewMemory(o)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	for range 2 {
		for i := range keys {
			if err := ref.Add(keys[i], ids[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	res.lost = !sameWords(counterWords(sh), counterWords(ref))
	return res
}

// A second exclusive handle, a rewrite's freeze, and any writer whose
// LockTimeout runs out are told why; a read-only Flush says ErrReadOnly
// at once; read-only and 1.2 files are refused; a handle that closes lets
// the next exclusive one in.
func TestExclusiveRefusals(t *testing.T) {
	requireFiles(t)
	path := filepath.Join(t.TempDir(), "r.dbl")
	f, err := Create(path, &Options{Capacity: 1000, Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, &OpenOptions{Exclusive: true, LockTimeout: 100 * time.Millisecond}); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second exclusive handle: %v, want ErrBusy", err)
	}
	if !testing.Short() {
		// A whole-file rewrite waits for the exclusive handle too (Freeze
		// waits at least DefaultLockTimeout), and gives up with ErrBusy.
		t0 := time.Now()
		if fz, err := Freeze(path, 0); !errors.Is(err, ErrBusy) {
			if err == nil {
				fz.Abort()
			}
			t.Fatalf("a freeze beside an exclusive handle: %v, want ErrBusy", err)
		}
		if time.Since(t0) < DefaultLockTimeout {
			t.Fatalf("the freeze gave up after %v, before its wait", time.Since(t0))
		}
	}
	g, err := Open(path, &OpenOptions{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Add([]byte("k"), 1); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("a shared writer beside an exclusive handle: %v, want ErrLockTimeout", err)
	}
	if err := f.Add([]byte("k"), 1); err != nil {
		t.Fatal(err)
	}
	if !g.Contains([]byte("k")) {
		t.Fatal("a lookup beside an exclusive handle misses its Add")
	}
	ro, err := Open(path, &OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := ro.Flush(); !errors.Is(err, ErrReadOnly) || time.Since(start) > 50*time.Millisecond {
		t.Fatalf("a read-only Flush beside an exclusive handle: %v after %v, want ErrReadOnly at once", err, time.Since(start))
	}
	ro.Close()
	if _, err := Open(path, &OpenOptions{Exclusive: true, ReadOnly: true}); !errors.As(err, new(*OptionError)) {
		t.Fatalf("read-only and exclusive: %v, want an *OptionError", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal("a second Close:", err)
	}
	if err := g.Add([]byte("k2"), 2); err != nil {
		t.Fatalf("after the exclusive handle closed: %v", err)
	}
	g.Close()
	h, err := Open(path, &OpenOptions{Exclusive: true})
	if err != nil {
		t.Fatalf("an exclusive handle after the first closed: %v", err)
	}
	if !h.Contains([]byte("k")) || !h.Contains([]byte("k2")) {
		t.Fatal("keys lost")
	}
	h.Close()
	clearLiveReplace(t, path)
	if _, err := Open(path, &OpenOptions{Exclusive: true}); !errors.Is(err, ErrNotLive) {
		t.Fatalf("a 1.2 file: %v, want ErrNotLive", err)
	}
}

// A shared handle that closes while an exclusive handle holds the file
// gives back the admission room it reserved, as it does otherwise: the
// filter's pending word is 0 once every handle is closed.
func TestExclusiveLeavesNoReservation(t *testing.T) {
	requireFiles(t)
	path := filepath.Join(t.TempDir(), "p.dbl")
	f, err := Create(path, &Options{Capacity: 100_000, ErrorRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, withExcl := range []bool{false, true} {
		sh, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if err := sh.Add(fmt.Appendf(nil, "k%v%d", withExcl, i), 1); err != nil {
				t.Fatal(err)
			}
		}
		var ex *Filter
		if withExcl {
			if ex, err = Open(path, &OpenOptions{Exclusive: true}); err != nil {
				t.Fatal(err)
			}
		}
		sh.Close()
		if ex != nil {
			ex.Close()
		}
		g, err := Open(path, &OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		c := g.chain.Load()
		pend := atomic.LoadUint64(&c.f[len(c.f)-1].line.Pending)
		g.Close()
		if pend != 0 {
			t.Errorf("exclusive handle open while the shared one closed: %v; pending word %d after every handle closed, want 0", withExcl, pend)
		}
	}
}

// Create with Exclusive makes the file at the path before it holds it: if
// another file is put there in between, Create says so (ErrBusy), never
// with the package's internal retry error.
func TestExclusiveCreateReplacedFirst(t *testing.T) {
	requireFiles(t)
	path := filepath.Join(t.TempDir(), "c.dbl")
	replaceFirst := func(p string) {
		g, err := Create(p, &Options{Capacity: 1000, Overwrite: true})
		if err != nil {
			t.Fatal(err)
		}
		g.Close()
	}
	f, err := Create(path, &Options{Capacity: 1000, Exclusive: true, knobs: &testknobs.Knobs{CreateHook: replaceFirst}})
	if err == nil {
		f.Close()
		t.Fatal("Create held a file that was replaced before it was held")
	}
	if !errors.Is(err, ErrBusy) || errors.Is(err, errRetry) {
		t.Fatalf("Create: %v; want ErrBusy, not the internal retry error", err)
	}
	if g, err := Open(path, &OpenOptions{Exclusive: true}); err != nil {
		t.Fatalf("the file at the path: %v", err)
	} else {
		g.Close()
	}
}
