package scaling_test

import (
	"errors"
	"fmt"
	"log"
	"math"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dablooms/dablooms/scaling"
)

// sameAsStats fails unless s says what st says of the same store.
func sameAsStats(t *testing.T, s scaling.Snapshot, st scaling.Stats) {
	t.Helper()
	if s.FileSize != st.FileSize || s.DiskSeqnum != st.DiskSeqnum || s.Retired != st.Retired || s.Clean != (st.Condition == scaling.Clean) {
		t.Fatalf("snapshot size %d disk_seqnum %d retired %d clean %v, stats %d %d %d %v",
			s.FileSize, s.DiskSeqnum, s.Retired, s.Clean, st.FileSize, st.DiskSeqnum, st.Retired, st.Condition)
	}
	if len(s.Filters) != len(st.Filters) {
		t.Fatalf("snapshot has %d filters, stats %d", len(s.Filters), len(st.Filters))
	}
	for i, fs := range st.Filters {
		want := scaling.FilterSnapshot{
			Index: fs.Index, FirstID: fs.FirstID, LastID: fs.LastID, Sealed: fs.Sealed, Count: fs.Count,
			Capacity: fs.Capacity, ErrorTarget: fs.ErrorTarget, K: fs.K, Counters: fs.Counters,
			Bytes: fs.Bytes, Offset: fs.Offset,
		}
		if s.Filters[i] != want {
			t.Fatalf("filter %d: snapshot %+v, stats %+v", i, s.Filters[i], want)
		}
	}
}

// TestSnapshotMatchesStats: on a quiet store, Snapshot reports what Stats
// does, including what another handle on the file added (filters it
// appended), removed, flushed and retired.
func TestSnapshotMatchesStats(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap.dbl")
	f, err := scaling.Create(path, &scaling.Options{Capacity: 100, ErrorRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := scaling.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()

	var s scaling.Snapshot
	check := func(step string, wantFilters int) {
		t.Helper()
		if err := f.Snapshot(&s); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		sameAsStats(t, s, f.Stats())
		if len(s.Filters) != wantFilters {
			t.Fatalf("%s: %d filters, want %d", step, len(s.Filters), wantFilters)
		}
	}
	check("new", 1)
	if s.Filters[0].FirstID != math.MaxUint64 || s.Filters[0].Count != 0 || !s.Clean || s.DiskSeqnum != 0 {
		t.Fatalf("new file: %+v", s)
	}
	for i := range 50 {
		if err := f.Add(fmt.Appendf(nil, "key-%d", i), uint64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	check("50 adds", 1)
	if s.Filters[0].Count != 50 || s.Filters[0].FirstID != 1 || s.Filters[0].LastID != 50 {
		t.Fatalf("after 50 adds: %+v", s.Filters[0])
	}
	// The other handle grows the chain: f's snapshot picks the new
	// filters up, as its Stats does.
	for i := 50; i < 400; i++ {
		if err := g.Add(fmt.Appendf(nil, "key-%d", i), uint64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 400; i += 7 {
		if err := g.Remove(fmt.Appendf(nil, "key-%d", i), uint64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	n := len(f.Stats().Filters)
	if n < 2 {
		t.Fatalf("400 adds at capacity 100 made %d filters", n)
	}
	check("another handle's adds and removes", n)
	var total uint64
	for _, fs := range s.Filters {
		total += fs.Count
	}
	if total != 400-58 {
		t.Fatalf("items %d, want %d", total, 400-58)
	}
	if s.DiskSeqnum != 0 || s.Clean {
		t.Fatalf("after changes: disk_seqnum %d, clean %v; want 0, false", s.DiskSeqnum, s.Clean)
	}
	if err := g.Flush(); err != nil {
		t.Fatal(err)
	}
	check("flushed", n)
	if mem := f.MemSeqnum(); !s.Clean || s.DiskSeqnum != mem || mem != 400+58 {
		t.Fatalf("after flush: disk_seqnum %d, mem_seqnum %d, want both %d", s.DiskSeqnum, mem, 400+58)
	}
	if k, err := g.RetireBefore(s.Filters[1].FirstID); err != nil || k != 1 {
		t.Fatalf("RetireBefore: %d, %v", k, err)
	}
	check("retired", n-1)
	if s.Retired != 1 {
		t.Fatalf("retired %d, want 1", s.Retired)
	}
}

// TestSnapshotAllocatesNothing: with the same Snapshot passed again, the
// steady path allocates nothing.
func TestSnapshotAllocatesNothing(t *testing.T) {
	f, err := scaling.NewMemory(&scaling.Options{Capacity: 10, ErrorRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 100 {
		if err := f.Add(fmt.Appendf(nil, "key-%d", i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	var s scaling.Snapshot
	if err := f.Snapshot(&s); err != nil {
		t.Fatal(err)
	}
	if len(s.Filters) < 3 {
		t.Fatalf("%d filters, want several", len(s.Filters))
	}
	if a := testing.AllocsPerRun(100, func() { f.Snapshot(&s) }); a != 0 {
		t.Fatalf("Snapshot allocates %v times per call", a)
	}
}

// TestSnapshotClosed: a closed Filter says so and describes nothing.
func TestSnapshotClosed(t *testing.T) {
	f, err := scaling.NewMemory(&scaling.Options{Capacity: 10, ErrorRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.AddString("a", 1); err != nil {
		t.Fatal(err)
	}
	s := scaling.Snapshot{FileSize: 1, DiskSeqnum: 2, Retired: 3}
	if err := f.Snapshot(&s); err != nil || len(s.Filters) != 1 {
		t.Fatalf("open: %v, %d filters", err, len(s.Filters))
	}
	f.Close()
	if err := f.Snapshot(&s); !errors.Is(err, scaling.ErrClosed) {
		t.Fatalf("closed: %v, want ErrClosed", err)
	}
	if s.FileSize != 0 || s.DiskSeqnum != 0 || s.Retired != 0 || len(s.Filters) != 0 {
		t.Fatalf("closed: %+v, want zero", s)
	}
}

// TestSnapshotConcurrent: snapshots taken while other goroutines add (and
// grow the chain) and then close the Filter see counts that only grow and
// never pass the adds begun, and end with ErrClosed.
func TestSnapshotConcurrent(t *testing.T) {
	f, err := scaling.NewMemory(&scaling.Options{Capacity: 50, ErrorRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	const writers, per = 4, 500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				if err := f.Add(fmt.Appendf(nil, "w%d-%d", w, i), uint64(i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); f.Close(); close(done) }()
	var s scaling.Snapshot
	var last uint64
	lastFilters := 0
	for {
		err := f.Snapshot(&s)
		if errors.Is(err, scaling.ErrClosed) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var total uint64
		for _, fs := range s.Filters {
			total += fs.Count
		}
		if total < last || total > writers*per || len(s.Filters) < lastFilters {
			t.Fatalf("items %d after %d (of %d adds), filters %d after %d", total, last, writers*per, len(s.Filters), lastFilters)
		}
		last, lastFilters = total, len(s.Filters)
	}
	<-done
	if last > writers*per {
		t.Fatalf("items %d", last)
	}
}

// BenchmarkSnapshot compares Snapshot with Stats on a file-backed store of
// a few filters.
func BenchmarkSnapshot(b *testing.B) {
	f, err := scaling.Create(filepath.Join(b.TempDir(), "bench.dbl"), &scaling.Options{Capacity: 1000, ErrorRate: 0.01})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for i := range 5000 {
		if err := f.Add(fmt.Appendf(nil, "key-%d", i), uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("Snapshot", func(b *testing.B) {
		var s scaling.Snapshot
		for b.Loop() {
			f.Snapshot(&s)
		}
		b.ReportMetric(float64(len(s.Filters)), "filters")
	})
	b.Run("Stats", func(b *testing.B) {
		var n int
		for b.Loop() {
			n = len(f.Stats().Filters)
		}
		b.ReportMetric(float64(n), "filters")
	})
}

// Snapshot reads the cheap numbers of a store (item counts, id ranges, file
// size, disk_seqnum) into a struct the caller keeps, for a caller that
// wants them after every write.
func ExampleFilter_Snapshot() {
	f, err := scaling.NewMemory(&scaling.Options{Capacity: 2, ErrorRate: 0.01})
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	var s scaling.Snapshot // reused: no allocation once it holds the chain
	for id := uint64(10); id <= 14; id++ {
		if err := f.AddString(fmt.Sprint("key-", id), id); err != nil {
			log.Fatal(err)
		}
		if err := f.Snapshot(&s); err != nil {
			log.Fatal(err)
		}
		newest := s.Filters[len(s.Filters)-1]
		fmt.Printf("id %d: %d filters, newest holds %d items, ids %d-%d\n",
			id, len(s.Filters), newest.Count, newest.FirstID, newest.LastID)
	}
	// Output:
	// id 10: 1 filters, newest holds 1 items, ids 10-10
	// id 11: 1 filters, newest holds 2 items, ids 10-11
	// id 12: 2 filters, newest holds 1 items, ids 12-12
	// id 13: 2 filters, newest holds 2 items, ids 12-13
	// id 14: 2 filters, newest holds 3 items, ids 12-14
}
