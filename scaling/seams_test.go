package scaling_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
)

// Where two mechanisms meet (issue 27): the late-add index and the id
// ranges, the late-add index and concurrent Removes.

func seamKey(s string, i int) []byte { return fmt.Appendf(nil, "%s-%06d", s, i) }

// fillFirst makes a store of capacity 2000 whose filter 0 holds ids
// 0…1999 and is full to its slack, and whose filter 1 holds ids from 2000
// on; add(i) gives filter 0's i-th key (nil: a key of its own).
func fillFirst(t *testing.T, pairs func(i int) []byte) *scaling.Filter {
	t.Helper()
	f, err := scaling.NewMemory(&scaling.Options{Capacity: 2000, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	for i := range 2000 {
		k := pairs(i)
		if k == nil {
			k = seamKey("first", i)
		}
		mustAdd(t, f, k, uint64(i))
	}
	for i := range 1000 {
		mustAdd(t, f, seamKey("second", i), uint64(2000+i))
	}
	// Filter 0's slack, to its item limit: every later Add with an id in
	// 0…1999 is a late Add of filter 1.
	for i := range int(header.Slack(2000)) {
		mustAdd(t, f, seamKey("slack", i), uint64(i))
	}
	st := f.Stats()
	if len(st.Filters) != 2 || st.Filters[0].Count != header.ItemLimit(2000) {
		t.Fatalf("setup: want 2 filters, the first at its item limit; have %+v", st.Filters)
	}
	return f
}

func mustAdd(t *testing.T, f *scaling.Filter, k []byte, id uint64) {
	t.Helper()
	if err := f.Add(k, id); err != nil {
		t.Fatalf("Add(%s, %d): %v", k, id, err)
	}
}

// checkRanges fails if two filters' id ranges overlap.
func checkRanges(t *testing.T, f *scaling.Filter) {
	t.Helper()
	fs := f.Stats().Filters
	for i := range fs {
		for j := i + 1; j < len(fs); j++ {
			a, b := fs[i], fs[j]
			if a.FirstID <= a.LastID && b.FirstID <= b.LastID && a.FirstID <= b.LastID && b.FirstID <= a.LastID {
				t.Fatalf("filters %d [%d, %d] and %d [%d, %d] overlap", a.Index, a.FirstID, a.LastID, b.Index, b.FirstID, b.LastID)
			}
		}
	}
}

// TestRepeatedLatePairKeepsRangesApart: one pair (key, id) added late far
// more often than its probe window in the late-add index holds
// (header.IndexMaxProbe). No range may widen over an older filter's, and
// every Remove, of the pair's copies and of every other key, succeeds.
// (Before: the copies past the window widened filter 1's range over filter
// 0's, and Removes of filter 0's keys returned ErrAmbiguous: issue 27,
// item 2.)
func TestRepeatedLatePairKeepsRangesApart(t *testing.T) {
	f := fillFirst(t, func(int) []byte { return nil })
	const copies = 3*header.IndexMaxProbe + 10
	k := []byte("repeated")
	for range copies {
		mustAdd(t, f, k, 777)
	}
	checkRanges(t, f)
	for i := range 2000 {
		if err := f.Remove(seamKey("first", i), uint64(i)); err != nil {
			t.Fatalf("Remove(first %d): %v", i, err)
		}
	}
	for i := range 1000 {
		if err := f.Remove(seamKey("second", i), uint64(2000+i)); err != nil {
			t.Fatalf("Remove(second %d): %v", i, err)
		}
	}
	for n := range copies {
		if err := f.Remove(k, 777); err != nil {
			t.Fatalf("Remove of copy %d of %d: %v", n+1, copies, err)
		}
	}
	for _, fs := range f.Stats().Filters {
		if fs.Count > header.ItemLimit(fs.Capacity) {
			t.Fatalf("filter %d holds %d items, over its limit %d", fs.Index, fs.Count, header.ItemLimit(fs.Capacity))
		}
	}
}

// TestConcurrentRemovesOfOneLatePair: each pair is present twice, once in
// filter 0 by its range and once as a late Add of filter 1; two goroutines
// remove every pair at the same moment. Both Removes of each pair must
// succeed and the item counts must come out exact. (Before, both picked
// the late copy and one failed with ErrNotPresent, leaving the key present
// and filter 0's count too high: issue 27, item 3.)
func TestConcurrentRemovesOfOneLatePair(t *testing.T) {
	const pairs = 1000
	f := fillFirst(t, func(i int) []byte {
		if i < pairs {
			return seamKey("pair", i)
		}
		return nil
	})
	for i := range pairs {
		mustAdd(t, f, seamKey("pair", i), uint64(i)) // late: filter 1's index
	}
	before := f.Stats().Filters
	ready := make([]atomic.Int32, pairs)
	var failed atomic.Int64
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range pairs {
				ready[i].Add(1)
				for ready[i].Load() < 2 { // both at the same pair
					runtime.Gosched()
				}
				if err := f.Remove(seamKey("pair", i), uint64(i)); err != nil {
					failed.Add(1)
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("Remove(pair %d): %w", i, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Fatalf("%d of %d concurrent Removes failed; first: %v", n, 2*pairs, first)
	}
	after := f.Stats().Filters
	if got, want := after[0].Count, before[0].Count-pairs; got != want {
		t.Fatalf("filter 0 counts %d items, want %d", got, want)
	}
	if got, want := after[1].Count, before[1].Count-pairs; got != want {
		t.Fatalf("filter 1 counts %d items, want %d", got, want)
	}
	for i := range pairs {
		if err := f.Remove(seamKey("pair", i), uint64(i)); !errors.Is(err, scaling.ErrNotPresent) && !errors.Is(err, scaling.ErrAmbiguous) && err != nil {
			t.Fatalf("a third Remove of pair %d: %v", i, err)
		}
	}
}
