package scaling

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/dablooms/dablooms/header"
)

// TestSweptBatchIsTheBatch: an exclusive handle's AddBatch, which sweeps
// long runs in block order (sweep.go), leaves the store as the same keys
// added one by one in the batch's order: the same chain, the same counter
// words, ranges and item counts, and the same BatchError. Each case checks
// that a run is swept at all (sweepRun), so that it cannot pass vacuously.
func TestSweptBatchIsTheBatch(t *testing.T) {
	keys := func(from, n int) [][]byte {
		ks := make([][]byte, n)
		for i := range ks {
			ks[i] = fmt.Appendf(nil, "swept key %d", from+i)
		}
		return ks
	}
	seq := func(from uint64, n int) []uint64 {
		ids := make([]uint64, n)
		for i := range ids {
			ids[i] = from + uint64(i)
		}
		return ids
	}
	type batch struct {
		keys [][]byte
		ids  []uint64
	}
	late := seq(1000, 120_000)
	for i := 60_000; i < 60_010; i++ {
		late[i] = 5 // below the newest filter's range, within the sealed ones'
	}
	bad := seq(1, 70_000)
	bad[50_000] = header.MaxID + 1
	for _, tc := range []struct {
		name     string
		capacity uint64
		batches  []batch
		errAt    int // the last batch's BatchError index, -1 for none
	}{
		{"one run", 100_000, []batch{{keys(0, 80_000), seq(1, 80_000)}}, -1},
		{"growths", 40_000, []batch{{keys(0, 300_000), seq(1, 300_000)}}, -1},
		{"unordered ids", 100_000, []batch{{keys(0, 50_000), func() []uint64 {
			ids := seq(1, 50_000)
			slices.Reverse(ids)
			return ids
		}()}}, -1},
		{"late ids", 40_000, []batch{{keys(0, 100_000), seq(1, 100_000)}, {keys(100_000, 120_000), late}}, -1},
		{"bad id", 100_000, []batch{{keys(0, 70_000), bad}}, 50_000},
	} {
		for _, mode := range []storeMode{inMemory, inFile} {
			t.Run(fmt.Sprintf("%s/%s", tc.name, mode), func(t *testing.T) {
				o := Options{Capacity: tc.capacity, ErrorRate: 0.01, Seed: 7, Exclusive: true}
				swept, _ := newStore(t, mode, &o)
				oneByOne, _ := newStore(t, mode, &o)
				sweeps := 0
				for bi, b := range tc.batches {
					if _, _, _, s := swept.sweepRun(swept.chain.Load(), b.ids); s {
						sweeps++
					}
					err := swept.AddBatch(b.keys, b.ids)
					var want error
					for i := range b.keys {
						if want = oneByOne.Add(b.keys[i], b.ids[i]); want != nil {
							want = &BatchError{Index: i, Err: want}
							break
						}
					}
					if bi == len(tc.batches)-1 && tc.errAt >= 0 {
						var be *BatchError
						if !errors.As(err, &be) || be.Index != tc.errAt || !errors.Is(err, ErrInvalidID) {
							t.Fatalf("AddBatch = %v, want a BatchError at %d", err, tc.errAt)
						}
					}
					if fmt.Sprint(err) != fmt.Sprint(want) {
						t.Fatalf("batch %d: AddBatch = %v, Add one by one = %v", bi, err, want)
					}
				}
				if sweeps == 0 {
					t.Fatal("no batch started with a swept run")
				}
				sameStore(t, swept, oneByOne)
				for _, b := range tc.batches {
					for i, k := range b.keys {
						if i == tc.errAt {
							break
						}
						if !swept.Contains(k) {
							t.Fatalf("key %q is missing", k)
						}
					}
				}
			})
		}
	}
}

// sameStore fails unless a and b have the same chain: filters, counter
// words, id ranges and item counts.
func sameStore(t *testing.T, a, b *Filter) {
	t.Helper()
	ca, cb := a.chain.Load(), b.chain.Load()
	if len(ca.f) != len(cb.f) {
		t.Fatalf("%d filters, want %d", len(ca.f), len(cb.f))
	}
	for i := range ca.f {
		ma, mb := ca.f[i], cb.f[i]
		la := [3]uint64{atomic.LoadUint64(&ma.line.MinID), atomic.LoadUint64(&ma.line.MaxID), ma.itemCount()}
		lb := [3]uint64{atomic.LoadUint64(&mb.line.MinID), atomic.LoadUint64(&mb.line.MaxID), mb.itemCount()}
		if la != lb {
			t.Errorf("filter %d: min id, max id, items %v, want %v", i, la, lb)
		}
		wa, wb := ma.cf.Words(), mb.cf.Words()
		if len(wa) != len(wb) {
			t.Fatalf("filter %d: %d words, want %d", i, len(wa), len(wb))
		}
		for j := range wa {
			if x, y := atomic.LoadUint64(&wa[j]), atomic.LoadUint64(&wb[j]); x != y {
				t.Fatalf("filter %d: word %d is %#x, want %#x", i, j, x, y)
			}
		}
	}
}

// TestBulkBatch: a 64th of the capacity, at least a swept run, and an int
// on every platform.
func TestBulkBatch(t *testing.T) {
	for _, tc := range []struct {
		capacity uint64
		want     int
	}{
		{0, sweepMin}, {64 * sweepMin, sweepMin}, {64*sweepMin + 64, sweepMin + 1}, {1e9, 15625000},
		{1 << 63, 1<<31 - 1},
	} {
		if got := BulkBatch(tc.capacity); got != tc.want {
			t.Errorf("BulkBatch(%d) = %d, want %d", tc.capacity, got, tc.want)
		}
	}
}
