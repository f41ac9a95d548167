package scaling

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/childproc"
	"github.com/dablooms/dablooms/internal/testknobs"
)

// Late Adds (route, lateindex.go): several writers, each with its own
// increasing ids, at their own pace. Every Remove must succeed and leave
// nothing behind; today's routing without the index (legacyRouting) refuses
// some, which is the negative control.

// writerStream is writer w's i-th key and id in a workload.
type writerStream func(w, i int) (key string, id uint64)

// The streams of the multi-process tests (childproc.WriterKey, WriterID),
// and ids going backwards at random.
func interleavedIDs(writers int) writerStream {
	return func(w, i int) (string, uint64) {
		return string(childproc.WriterKey(w, i)), childproc.WriterID("interleaved", w, i, writers)
	}
}

func disjointBlocks(w, i int) (string, uint64) {
	return string(childproc.WriterKey(w, i)), childproc.WriterID("blocks", w, i, 0)
}

func randomIDs(w, i int) (string, uint64) {
	return string(childproc.WriterKey(w, i)), header.Fmix64(uint64(i)+1) % 1_000_000
}

// lateWorkload runs writers streams of n keys each on f: writer 0 first adds
// skew keys alone, then all take turns, writer w doing w+1 adds per turn (so
// the lag grows), until each has added n. Then every key is removed with its
// id. It returns the failed Removes by error.
func lateWorkload(t *testing.T, f *Filter, writers, n, skew int, s writerStream) map[string]int {
	t.Helper()
	next := make([]int, writers)
	add := func(w int) {
		key, id := s(w, next[w])
		if err := f.AddString(key, id); err != nil {
			t.Fatalf("Add(%s, %d): %v", key, id, err)
		}
		next[w]++
	}
	for range skew {
		add(0)
	}
	for done := false; !done; {
		done = true
		for w := range writers {
			for range w + 1 {
				if next[w] < n {
					add(w)
					done = false
				}
			}
		}
	}
	for w := range writers {
		for i := range n {
			if key, _ := s(w, i); !f.ContainsString(key) {
				t.Fatalf("false negative: %s", key)
			}
		}
	}
	failed := map[string]int{}
	for w := range writers {
		for i := range n {
			key, id := s(w, i)
			if err := f.RemoveString(key, id); err != nil {
				failed[errName(err)]++
			}
		}
	}
	return failed
}

func errName(err error) string {
	switch {
	case errors.Is(err, ErrAmbiguous):
		return "ErrAmbiguous"
	case errors.Is(err, ErrNotPresent):
		return "ErrNotPresent"
	}
	return err.Error()
}

func TestLateAddsRemoveExactly(t *testing.T) {
	const capacity = 500
	for _, tc := range []struct {
		name    string
		writers int
		n       int // keys per writer
		skew    int
		s       writerStream
	}{
		{"interleaved, skew of a capacity", 3, 6000, capacity, interleavedIDs(3)},
		{"disjoint blocks, 8 writers", 8, 4000, 0, disjointBlocks},
		// Ids that go backwards at random: every Add below the frontier is
		// late, and the index (two entries per item) never fills.
		{"random ids", 1, 20000, 0, randomIDs},
	} {
		for _, legacy := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/legacy=%v", tc.name, legacy), func(t *testing.T) {
				f, err := NewMemory(&Options{Capacity: capacity, ErrorRate: 0.05, GrowthFactor: 2, Seed: 1, knobs: &testknobs.Knobs{LegacyRouting: legacy}})
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				failed := lateWorkload(t, f, tc.writers, tc.n, tc.skew, tc.s)
				st := f.Stats()
				if len(st.Filters) < 6 {
					t.Fatalf("%d filters: the workload must grow the chain at least 5 times", len(st.Filters))
				}
				if legacy {
					// The negative control: the same workload without the
					// index refuses some Removes.
					if failed["ErrAmbiguous"] == 0 {
						t.Fatalf("legacy routing refused no Remove (%v): the workload does not exercise late Adds", failed)
					}
					t.Logf("legacy routing: %v", failed)
					return
				}
				if len(failed) > 0 {
					t.Fatalf("Removes failed: %v", failed)
				}
				for _, fs := range st.Filters {
					if fs.Count != 0 {
						t.Errorf("filter %d holds %d items after every key was removed", fs.Index, fs.Count)
					}
				}
			})
		}
	}
}

// TestLateAddsConcurrent runs writers as goroutines on one handle in memory
// (so the race detector sees the index), each adding then removing its own
// keys while the others add.
func TestLateAddsConcurrent(t *testing.T) {
	f, err := NewMemory(&Options{Capacity: 300, ErrorRate: 0.05, GrowthFactor: 1.5})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const writers, n = 4, 3000
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range n {
				key, id := disjointBlocks(w, i)
				if err := f.AddString(key, id); err != nil {
					errs <- err
					return
				}
			}
			for i := range n {
				key, id := disjointBlocks(w, i)
				if err := f.RemoveString(key, id); err != nil {
					errs <- fmt.Errorf("Remove(%s, %d): %w", key, id, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, fs := range f.Stats().Filters {
		if fs.Count != 0 {
			t.Errorf("filter %d holds %d items after every key was removed", fs.Index, fs.Count)
		}
	}
}

// TestVersion10FileOpensAndGrows: a file written as version 1.0 (minor 0,
// no feature flag, no index) opens; the filters appended to it get a
// late-add index and item counts, and the file then carries FlagExtras.
func TestVersion10FileOpensAndGrows(t *testing.T) {
	requireFiles(t)
	// One filter holding k0…k49, as version 1.0 wrote it.
	path := copyFixture(t, "v10-minor0.dbl")
	if m := readMetaOf(t, path); m.Minor != 0 || m.Flags != 0 || len(m.Filters) != 1 {
		t.Fatalf("the fixture: version 1.%d, flags %#x, %d filters", m.Minor, m.Flags, len(m.Filters))
	}
	f, err := Open(path, nil)
	if err != nil {
		t.Fatalf("a version 1.0 file: %v", err)
	}
	defer f.Close()
	added := 50
	for ; len(f.Stats().Filters) < 3; added++ {
		if err := f.AddString(fmt.Sprint("k", added), uint64(added)); err != nil {
			t.Fatal(err)
		}
	}
	// Ids inside filter 0's range: its slack first, then late Adds.
	for i := range 40 {
		if err := f.AddString(fmt.Sprint("late", i), 10); err != nil {
			t.Fatal(err)
		}
	}
	if !f.Stats().Filters[2].LateIndex {
		t.Fatal("no late Add went to the newest filter's index")
	}
	for i := range 40 {
		if err := f.RemoveString(fmt.Sprint("late", i), 10); err != nil {
			t.Fatalf("Remove of late%d: %v", i, err)
		}
	}
	p := readMetaOf(t, path)
	if p.Minor != header.VersionMinor || p.Flags != header.FlagExtras || p.Filters[0].Extra != 0 || p.Filters[1].IndexBytes() == 0 || !p.Filters[1].HasCounts() {
		t.Fatalf("after growth: version 1.%d, flags %#x, filter 0 extra %d bytes, filter 1 index %d bytes", p.Minor, p.Flags, p.Filters[0].Extra, p.Filters[1].IndexBytes())
	}
	// The 1.0 filter counts in its line, the new ones per writer: both add up.
	var total uint64
	for _, fs := range f.Stats().Filters {
		total += fs.Count
	}
	if total != uint64(added) {
		t.Fatalf("item counts add up to %d, want %d", total, added)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLateIndexChurn: late Adds and their Removes cycled far more often
// than the index has entries (every entry ends up cleared, none empty)
// still route exactly: lookups stop after header.IndexMaxProbe entries, and
// inserts reuse cleared entries within that bound.
func TestLateIndexChurn(t *testing.T) {
	f, err := NewMemory(&Options{Capacity: 100, ErrorRate: 0.05, GrowthFactor: 1, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 150 {
		if err := f.AddString(fmt.Sprint("k", i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	m := f.chain.Load().f[1]
	entries := len(m.ix.e)
	for round := range 20 * entries / 50 {
		for j := range 50 {
			if err := f.AddString(fmt.Sprint("r", round, "-", j), 10); err != nil {
				t.Fatal(err)
			}
		}
		for j := range 50 {
			if err := f.RemoveString(fmt.Sprint("r", round, "-", j), 10); err != nil {
				t.Fatalf("round %d: Remove: %v", round, err)
			}
		}
	}
	if !m.indexAllocated() {
		t.Fatal("no late Add went to filter 1's index")
	}
	empty := 0
	for i := range m.ix.e {
		if m.ix.e[i] == header.IndexEmpty {
			empty++
		}
	}
	if empty != 0 {
		t.Fatalf("%d of %d entries still empty: the churn did not reach the state it tests", empty, entries)
	}
	for i := range 150 {
		if !f.ContainsString(fmt.Sprint("k", i)) {
			t.Fatalf("false negative k%d", i)
		}
	}
	if n := f.Stats().Filters[1].Count; n != 50 {
		t.Fatalf("filter 1 holds %d items, want 50", n)
	}
}
