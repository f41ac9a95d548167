package scaling

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/seqnum"
)

// checkSums checks the check pages of every filter of f's chain: every
// covered page not marked changed has the checksum of its bytes (every
// page, marked or not, in a file that reads clean: Verify's rule), and
// with strict no page is marked (a file a quiet Flush marked clean). It
// returns the pages checked.
func checkSums(t *testing.T, f *Filter, strict bool) int {
	t.Helper()
	n, errs := sumErrors(f, strict)
	for _, e := range errs {
		t.Error(e)
	}
	if n < 0 {
		t.FailNow()
	}
	return n
}

// sumErrors is checkSums without a test: it returns the pages checked (-1
// if a filter has no check pages) and what is wrong.
func sumErrors(f *Filter, strict bool) (n int, errs []string) {
	c := f.chain.Load()
	_, ph := f.words.Phase()
	clean := ph == seqnum.Clean // (read before the pages)
	var buf [pageWords]uint64
	for _, m := range c.f {
		if m.ps.pages == nil {
			return -1, append(errs, fmt.Sprintf("filter %d has no check pages", m.idx))
		}
		for p := range m.ps.n {
			marked := m.ps.pages.Changed(p)
			if strict && marked {
				errs = append(errs, fmt.Sprintf("filter %d page %d still marked changed after a quiet flush", m.idx, p))
			}
			if got, want := m.ps.sums.Get(p), m.ps.sum(p, &buf); (clean || !marked) && got != want {
				errs = append(errs, fmt.Sprintf("filter %d page %d (of %d): marked changed %v in a file that reads clean %v, checksum %08x, page's %08x",
					m.idx, p, m.ps.n, marked, clean, got, want))
			}
			n++
		}
	}
	return n, errs
}

// TestFlushKeepsPageSums: a file written through the whole write path
// (growth, late Adds into the index, Removes, per-writer counts), by a
// shared handle and by the exclusive writer, has after a quiet Flush
// every page's checksum right and no page marked, as read back from the
// file by another handle.
func TestFlushKeepsPageSums(t *testing.T) {
	for _, excl := range []bool{false, true} {
		t.Run(fmt.Sprintf("exclusive=%v", excl), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.bloom")
			f, err := Create(path, &Options{Capacity: 2000, ErrorRate: 0.01, Seed: 5, Exclusive: excl})
			if err != nil {
				t.Fatal(err)
			}
			checkSums(t, f, true) // a new file
			for i := range 9000 {
				if err := f.Add(fmt.Appendf(nil, "k%d", i), uint64(i)); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 300 { // late Adds: ids of older filters
				if err := f.Add(fmt.Appendf(nil, "late%d", i), uint64(i)); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 9000; i += 3 {
				if err := f.Remove(fmt.Appendf(nil, "k%d", i), uint64(i)); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 300; i += 2 {
				if err := f.Remove(fmt.Appendf(nil, "late%d", i), uint64(i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.Flush(); err != nil {
				t.Fatal(err)
			}
			if len(f.chain.Load().f) < 3 || f.DiskSeqnum() == 0 {
				t.Fatalf("%d filters, disk seqnum %d: want a grown, clean file", len(f.chain.Load().f), f.DiskSeqnum())
			}
			late := false
			for _, m := range f.chain.Load().f {
				late = late || m.indexAllocated()
			}
			if !late {
				t.Fatal("no late-add index was used")
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			r, err := Open(path, &OpenOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if n := checkSums(t, r, true); n == 0 {
				t.Fatal("no page checked")
			}
		})
	}
}

// TestFlushLeavesLateChangesMarked pins the order of a flush's steps
// (docs/FORMAT.md, "Why a change after its checksum stays marked"): while
// writers change a small filter's pages without pause, flushes take the
// marks and checksums (takeSums) over and over; once the writers stop,
// every page not marked changed must have the checksum of its bytes.
// Negative control (docs/PROTOCOLS.md): a flush that reads a page before
// it takes the page's mark (testknobs.Knobs.PageSumsReadFirst) leaves a
// change that landed in between unmarked under an old checksum, and the
// same rounds must find one. Shared handles only: the exclusive writer's
// changes never run beside a flush's take (Flush holds its mutex, I18),
// and its stores are plain, which a later load may pass, so racing them
// here (as this test would, calling takeSums without the mutex) tests
// nothing the library does (docs/FORMAT.md, "Why a change after its
// checksum stays marked").
func TestFlushLeavesLateChangesMarked(t *testing.T) {
	// (The subtests keep the names PROTOCOLS.md cites.)
	t.Run("exclusive=false", func(t *testing.T) {
		if round, errs := lateChanges(t, false, 400); round >= 0 {
			t.Fatalf("round %d:\n%s", round, strings.Join(errs, "\n"))
		}
	})
	t.Run("control/exclusive=false", func(t *testing.T) {
		if runtime.GOMAXPROCS(0) < 2 {
			t.Skip("the control needs the writers and the flush running at once: GOMAXPROCS < 2")
		}
		// A broken order mostly shows within a few rounds, but on a
		// busy machine the threads seldom run at once: 40 runs of
		// both handles under a load of 22 on 2 cores needed a median
		// of 2 rounds, at most 5367 (1.3 s). The bound is generous,
		// so that the control does not flake.
		const bound = 50000
		round, errs := lateChanges(t, true, bound)
		if round < 0 {
			t.Fatalf("no stale checksum in %d rounds with the page read before its mark is taken: the test cannot see a broken order", bound)
		}
		t.Logf("round %d found the broken order: %s", round, errs[0])
	})
}

// lateChanges runs up to rounds rounds of TestFlushLeavesLateChangesMarked
// on a memory filter, with the flush's page reads before the mark swaps if
// readFirst: in each, a short burst of changes races the flush steps, then
// the check. Only the last change to a page in a round can be left
// unmarked by a broken order (a later one marks it again), so the check
// comes after every round. It returns the first round whose check found
// something wrong, and what, or -1.
func lateChanges(t *testing.T, readFirst bool, rounds int) (int, []string) {
	t.Helper()
	o := &Options{Capacity: 3000, ErrorRate: 0.01, Seed: 9}
	testknobs.Set(o, &testknobs.Knobs{PageSumsReadFirst: readFirst})
	f, err := NewMemory(o)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	writers := 3
	for round := range rounds {
		var stop atomic.Bool
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 200 {
					k := fmt.Appendf(nil, "w%d-%d", w, (round*200+i)%700)
					if (round+i/100)%2 == 0 {
						f.Add(k, 1)
					} else {
						f.Remove(k, 1)
					}
				}
			}()
		}
		done := make(chan error)
		go func() {
			var err error
			for !stop.Load() && err == nil {
				f.mu.Lock()
				err = f.takeSums() // Flush's step, with its knob
				f.mu.Unlock()
			}
			done <- err
		}()
		wg.Wait()
		stop.Store(true)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if _, errs := sumErrors(f, false); len(errs) > 0 {
			return round, errs
		}
	}
	return -1, nil
}

// TestCleanFlushReadsRecordsBeforeSums: a flush that claims clean has
// taken every page's checksum after the page's last change (I3), so a
// file that reads clean has every page's checksum right. A writer that
// passed its dirty check before the flush froze the writers may change a
// page after the flush read it; its record is in flight from before that
// check until after its change, so a flush that reads the records before
// it takes the checksums sees it and claims nothing. Scripted: the
// writer's record is claimed and its dirty check passed before Flush; its
// change, mark, count and finish run in the flush's step hook once the
// checksums are taken (or after Flush, if the flush never took them).
// Found by TestStress in CI (seed 15399692385984315250): the flush read
// the records after the take, missed the writer that had finished in
// between, and the file read clean with the old checksums of the
// writer's counters and count pages. Checked: that order fails here.
func TestCleanFlushReadsRecordsBeforeSums(t *testing.T) {
	var change func()
	o := &Options{Capacity: 1000, ErrorRate: 0.01, Seed: 3}
	testknobs.Set(o, &testknobs.Knobs{FlushStep: func(step string) {
		if step == "taken" && change != nil {
			change()
			change = nil
		}
	}})
	f, err := NewMemory(o)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Add([]byte("a"), 1); err != nil { // the file dirty, the filter marked
		t.Fatal(err)
	}
	// The writer, as sharedFastAdd's steps: claim, gate, dirty; then the
	// rest from the hook.
	c := f.chain.Load()
	m := c.f[len(c.f)-1]
	kh := header.HashKey(f.params.Seed, []byte("b")) + m.salt
	pr := m.cf.Prepare(kh)
	r := f.w.claimRecord(f, kh, header.OpAdd, m)
	if m.gone() || !f.writable(&m.line.Mark) {
		t.Fatal("the scripted writer's gate or dirty check failed")
	}
	change = func() {
		rc := r.counters()
		m.cf.AddProbe(pr, &rc)
		f.w.count(m, r, 1)
		f.w.finish(r, true)
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change() // the flush took no checksum
		change = nil
	}
	if _, errs := sumErrors(f, false); len(errs) > 0 {
		t.Errorf("after the flush that raced the writer:\n%s", strings.Join(errs, "\n"))
	}
	if !f.Contains([]byte("b")) {
		t.Error("the scripted Add is not there")
	}
	// A quiet flush then claims clean, every page right and none marked.
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, ph := f.words.Phase(); ph != seqnum.Clean {
		t.Errorf("a quiet flush left phase %v", ph)
	}
	checkSums(t, f, true)
}

// TestCountStoreBeforeMarkLoad: a count's plain store (a record's own
// word, header.FlagRecordCounts) must be visible before its mark of the
// counts page reads the changed map, wherever a take of the marks may
// run between the two: for a writer that began after a Flush's BeginFlush
// and marked the file dirty again (I3's second case), which is the
// general path (sharedWriter.count: its fence) or the straight Add's
// ensureDirty (its admission's release is the barrier). x86 lets the
// load pass the store: without a barrier the take swaps the map in
// between, reads the old count, and the writer, having read the mark
// still set, does not set it again, leaving the counts page unmarked
// under a stale checksum that the next quiet Flush claims clean over.
// Each round an Add marks the counts page, then a writer of the general
// path (a Remove) or the straight Add (an Add of a second copy, removed
// after the round) races the take itself, the writer's start moving
// across the take's first steps from round to round; after both, no
// unmarked page may hold a wrong checksum. Checked: it fails within a
// few thousand rounds with count's fence removed, and with the straight
// Add's mark moved before its release; with an atomic store (-race,
// arm64, 386, purego) it cannot fail. (The straight Remove needs no
// barrier, and races a whole Flush in TestFlushRacesCounts.)
func TestCountStoreBeforeMarkLoad(t *testing.T) {
	take := func(f *Filter) { f.mu.Lock(); defer f.mu.Unlock(); _ = f.takeSums() }
	t.Run("general remove", func(t *testing.T) { countMarkRace(t, generalRemove, take) })
	t.Run("straight add", func(t *testing.T) { countMarkRace(t, straightAdd, take) })
}

// TestFlushRacesCounts: TestCountStoreBeforeMarkLoad's rounds with a
// whole Flush in place of the take, racing the straight Remove (which
// has no barrier between its count and its mark: a writer that passed its
// dirty check before the Flush began is in flight when the Flush reads the
// records, and the Flush then takes nothing) and the straight Add. An
// end-to-end check of that argument, not a proven trap: the straight
// Add's mark moved before its release, which the take-level test catches,
// passed 100,000 rounds here too (a whole Flush's window is narrower).
func TestFlushRacesCounts(t *testing.T) {
	flush := func(f *Filter) {
		if err := f.Flush(); err != nil {
			t.Error(err)
		}
	}
	t.Run("straight remove", func(t *testing.T) { countMarkRace(t, straightRemove, flush) })
	t.Run("straight add", func(t *testing.T) { countMarkRace(t, straightAdd, flush) })
}

// The racers of countMarkRace.
const (
	straightRemove = iota // f.Remove: the straight path
	generalRemove         // f.modifySlow: the general path's Remove
	straightAdd           // f.Add of a key added once already (its second copy)
)

// countMarkRace runs the rounds of TestCountStoreBeforeMarkLoad: take is
// the test goroutine's side, racer the other's (straightRemove,
// generalRemove, straightAdd; an added second copy is removed after the
// round with the first).
func countMarkRace(t *testing.T, racer int, take func(f *Filter)) {
	f, err := NewMemory(&Options{Capacity: 3000, ErrorRate: 0.01, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rounds := 100000
	if testing.Short() {
		rounds = 10000
	}
	// They meet each round at a spin barrier (start: the round that may
	// begin), the racer after a delay that moves from round to round.
	var start, raced atomic.Int64
	var rerr error
	k := func(i int) []byte { return fmt.Appendf(nil, "k%d", i%1000) }
	go func() {
		for i := 1; i <= rounds; i++ {
			for start.Load() < int64(i) {
			}
			spin(i * 7 % 700)
			var err error
			switch racer {
			case straightAdd:
				err = f.Add(k(i), uint64(i%1000))
			case generalRemove:
				err = f.modifySlow(k(i), uint64(i%1000), header.OpRemove)
			default:
				err = f.Remove(k(i), uint64(i%1000))
			}
			if err != nil && rerr == nil {
				rerr = err
			}
			raced.Store(int64(i))
		}
	}()
	for i := 1; i <= rounds; i++ {
		if err := f.Add(k(i), uint64(i%1000)); err != nil {
			t.Fatal(err)
		}
		start.Store(int64(i))
		take(f)
		for raced.Load() < int64(i) {
		}
		if rerr != nil {
			t.Fatalf("round %d: the racer: %v", i, rerr)
		}
		if _, errs := sumErrors(f, false); len(errs) > 0 {
			t.Fatalf("round %d: %v", i, errs)
		}
		if racer == straightAdd {
			for range 2 {
				if err := f.Remove(k(i), uint64(i%1000)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// spin busy-waits for about n steps.
func spin(n int) {
	x := uint64(n)
	for j := range n {
		x = x*6364136223846793005 + uint64(j)
	}
	spinSink.Store(x)
}
