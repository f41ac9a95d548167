package scaling_test

import (
	"fmt"
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
