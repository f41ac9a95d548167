package scaling

import (
	"errors"
	"fmt"
	"testing"
)

// TestRemoveAbsentKeepsClean: a Remove whose id one filter's range holds
// claims its record before it tests the key (so that the claim overlaps
// the block's miss); for a key that is not there it must still change
// nothing: the flushed file stays clean, the count of completed
// operations stays, and every record is idle again. A Remove of a
// present key then changes the file as before.
func TestRemoveAbsentKeepsClean(t *testing.T) {
	f, _ := newStore(t, inFile, &Options{Capacity: 5000, ErrorRate: 0.01})
	for i := range 1000 {
		if err := f.Add(fmt.Appendf(nil, "in-%d", i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if c, m, d := f.Condition(), f.MemSeqnum(), f.DiskSeqnum(); c != Clean || m != 1000 || d != 1000 {
		t.Fatalf("after Flush: %v, mem %d, disk %d", c, m, d)
	}
	tried := 0
	for i := range 1000 {
		key := fmt.Appendf(nil, "out-%d", i)
		if f.Contains(key) {
			continue // a false positive: its Remove would change counters
		}
		tried++
		// Ids inside the filter's range: the single-candidate path.
		if err := f.Remove(key, uint64(i)); !errors.Is(err, ErrNotPresent) {
			t.Fatalf("Remove of absent key %d: %v, want ErrNotPresent", i, err)
		}
		if c := f.Condition(); c != Clean {
			t.Fatalf("after the Remove of absent key %d the file is %v, want clean", i, c)
		}
	}
	if m, d := f.MemSeqnum(), f.DiskSeqnum(); tried < 900 || m != 1000 || d != 1000 {
		t.Fatalf("after %d Removes of absent keys: mem %d, disk %d, want 1000", tried, m, d)
	}
	if n := f.slotInFlight(f.slot); n != 0 {
		t.Fatalf("%d records left in flight", n)
	}
	if err := f.Remove([]byte("in-7"), 7); err != nil {
		t.Fatal(err)
	}
	if c, m := f.Condition(), f.MemSeqnum(); c == Clean || m != 1001 {
		t.Fatalf("after a Remove of a present key: %v, mem %d, want dirty and 1001", c, m)
	}
}
