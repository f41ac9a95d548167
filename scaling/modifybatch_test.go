package scaling

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/dablooms/dablooms/header"
)

func batchKeys(prefix string, n int) ([][]byte, []uint64) {
	keys := make([][]byte, n)
	ids := make([]uint64, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("%s-%08d", prefix, i))
		ids[i] = uint64(i + 1)
	}
	return keys, ids
}

// AddBatch and RemoveBatch leave the store exactly as Add and Remove in a
// loop do, through several growths in the middle of the batch.
func TestModifyBatchEqualsLoop(t *testing.T) {
	o := &Options{Capacity: 500, GrowthFactor: 1.5, Seed: 7}
	loop, err := NewMemory(o)
	if err != nil {
		t.Fatal(err)
	}
	defer loop.Close()
	batch, err := NewMemory(o)
	if err != nil {
		t.Fatal(err)
	}
	defer batch.Close()
	keys, ids := batchKeys("k", 5000)
	for i := range keys {
		if err := loop.Add(keys[i], ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := batch.AddBatch(keys, ids); err != nil {
		t.Fatal(err)
	}
	same := func(what string) {
		t.Helper()
		a, b := loop.Stats(), batch.Stats()
		if len(a.Filters) != len(b.Filters) || len(a.Filters) < 3 {
			t.Fatalf("%s: %d filters in the loop's store, %d in the batch's (want ≥ 3, equal)", what, len(a.Filters), len(b.Filters))
		}
		for i := range a.Filters {
			fa, fb := a.Filters[i], b.Filters[i]
			if fa.Count != fb.Count || fa.FirstID != fb.FirstID || fa.LastID != fb.LastID {
				t.Fatalf("%s: filter %d: loop %+v, batch %+v", what, i, fa, fb)
			}
			wa, _ := loop.r.Words(fa.Offset, fa.Bytes/8)
			wb, _ := batch.r.Words(fb.Offset, fb.Bytes/8)
			// (The counts page aside: which word of its count line an
			// operation counts in depends on the record it held; Count
			// compares the sums.)
			d := loop.chain.Load().f[i].desc
			cp := (d.CountsOffset() - d.Offset) / 8
			for w := range wa {
				if d.HasCounts() && int64(w) >= cp && int64(w) < cp+header.CountsBytes/8 {
					continue
				}
				if wa[w] != wb[w] {
					t.Fatalf("%s: filter %d counter word %d: loop %#x, batch %#x", what, i, w, wa[w], wb[w])
				}
			}
		}
	}
	same("after adds")
	if m := batch.MemSeqnum(); m != uint64(len(keys)) {
		t.Fatalf("MemSeqnum %d after the batch, want %d", m, len(keys))
	}

	half := len(keys) / 2
	for i := range half {
		if err := loop.Remove(keys[i], ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	results := make([]error, half)
	n, err := batch.RemoveBatch(keys[:half], ids[:half], results)
	if err != nil || n != half {
		t.Fatalf("RemoveBatch = %d, %v; want %d, nil", n, err, half)
	}
	for i, e := range results {
		if e != nil {
			t.Fatalf("result %d: %v", i, e)
		}
	}
	same("after removes")
	// Removing them again: every key reports ErrNotPresent, nothing changes.
	n, err = batch.RemoveBatch(keys[:half], ids[:half], results)
	if err != nil || n != 0 {
		t.Fatalf("second RemoveBatch = %d, %v; want 0, nil", n, err)
	}
	for i, e := range results {
		if !errors.Is(e, ErrNotPresent) {
			t.Fatalf("second removal of key %d: %v, want ErrNotPresent", i, e)
		}
	}
	same("after removes of absent keys")
	for i := half; i < len(keys); i++ {
		if !batch.Contains(keys[i]) {
			t.Fatalf("key %d lost", i)
		}
	}
}

func TestAddBatchStopsAtTheFailingKey(t *testing.T) {
	f, err := NewMemory(&Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys, ids := batchKeys("s", 20)
	ids[5] = header.MaxID + 1
	err = f.AddBatch(keys, ids)
	var be *BatchError
	if !errors.As(err, &be) || be.Index != 5 || !errors.Is(err, ErrInvalidID) {
		t.Fatalf("AddBatch = %v, want a *BatchError at index 5 wrapping ErrInvalidID", err)
	}
	for i := range 5 {
		if !f.Contains(keys[i]) {
			t.Fatalf("key %d, added before the failing one: Contains = false", i)
		}
	}
	if n := f.Stats().Count; n != 5 {
		t.Fatalf("%d items, want the 5 before the failing key", n)
	}
}

func TestModifyBatchRefusals(t *testing.T) {
	requireFiles(t)
	keys, ids := batchKeys("r", 4)
	path := filepath.Join(t.TempDir(), "r.dbl")
	w, err := Create(path, &Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := Open(path, &OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"ids shorter", w.AddBatch(keys, ids[:3]), ErrInvalidOption},
		{"read-only add", r.AddBatch(keys, ids), ErrReadOnly},
		{"results shorter", func() error { _, err := w.RemoveBatch(keys, ids, make([]error, 3)); return err }(), ErrInvalidOption},
		{"read-only remove", func() error { _, err := r.RemoveBatch(keys, ids, nil); return err }(), ErrReadOnly},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	w.Close()
	if err := w.AddBatch(keys, ids); !errors.Is(err, ErrClosed) {
		t.Errorf("AddBatch after Close: %v, want ErrClosed", err)
	}
}

func TestModifyBatchAllocs(t *testing.T) {
	for _, excl := range []bool{false, true} {
		f, err := NewMemory(&Options{Capacity: 1_000_000, Seed: 1, Exclusive: excl})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		keys, ids := batchKeys("a", 256)
		results := make([]error, len(keys))
		if a := testing.AllocsPerRun(20, func() {
			if err := f.AddBatch(keys, ids); err != nil {
				t.Fatal(err)
			}
			f.RemoveBatch(keys, ids, results)
			f.Add(keys[0], ids[0])
			f.Remove(keys[0], ids[0])
		}); a != 0 {
			t.Fatalf("exclusive %v: Add, Remove and the batches allocate %v times per run", excl, a)
		}
	}
}

// BenchmarkModifyBatch compares AddBatch and RemoveBatch with Add and
// Remove in a loop on a file-backed store pre-sized for the keys (one
// filter), per key: go test ./scaling -run '^$' -bench ModifyBatch.
func BenchmarkModifyBatch(b *testing.B) {
	requireFiles(b)
	for _, n := range []int{1_000_000, 10_000_000} {
		if testing.Short() && n > 1_000_000 {
			continue
		}
		keys, ids := batchKeys("b", n)
		for _, mode := range []string{"loop", "batch"} {
			b.Run(fmt.Sprintf("%s/%dM", mode, n/1_000_000), func(b *testing.B) {
				f, err := Create(filepath.Join(b.TempDir(), "b.dbl"), &Options{Capacity: uint64(n), Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				results := make([]error, n)
				b.ResetTimer()
				for range b.N {
					if mode == "loop" {
						for i := range keys {
							f.Add(keys[i], ids[i])
						}
						for i := range keys {
							f.Remove(keys[i], ids[i])
						}
					} else {
						f.AddBatch(keys, ids)
						f.RemoveBatch(keys, ids, results)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2*n), "ns/op-key")
			})
		}
	}
}
