package scaling

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/dablooms/dablooms/counting4"
)

// checkBatch compares ContainsBatch with Contains on keys for batch lengths
// around the pipeline's group and depth, from several offsets, with out
// longer than the batch (the elements past it must not change).
func checkBatch(t *testing.T, f *Filter, keys [][]byte) {
	t.Helper()
	want := make([]bool, len(keys))
	positives := 0
	for i, k := range keys {
		want[i] = f.Contains(k)
		if want[i] {
			positives++
		}
	}
	if positives == 0 || positives == len(keys) {
		t.Fatalf("%d of %d keys present: the test needs both", positives, len(keys))
	}
	sizes := []int{0, 1, batchGroup - 1, batchGroup, batchGroup + 1, 15, 16, 17,
		batchDepth + batchGroup - 1, batchDepth + batchGroup, batchDepth + batchGroup + 1,
		batchChunk - 1, batchChunk, batchChunk + 1, 1000}
	for _, size := range sizes {
		out := make([]bool, size+5)
		for start := 0; start+size <= len(keys); start += max(size, 1)*3 + 1 {
			for i := range out {
				out[i] = i%3 == 0 // garbage: every element must be written
			}
			f.ContainsBatch(keys[start:start+size], out)
			for i := range size {
				if out[i] != want[start+i] {
					t.Fatalf("batch of %d from %d, key %q: ContainsBatch %v, Contains %v", size, start, keys[start+i], out[i], want[start+i])
				}
			}
			for i := size; i < len(out); i++ {
				if out[i] != (i%3 == 0) {
					t.Fatalf("batch of %d: out[%d] past the keys changed", size, i)
				}
			}
		}
	}
}

// TestContainsBatchPipeline: ContainsBatch answers exactly as Contains on
// chains of one filter, several, batchFilters and more, in the layouts of
// new filters.
func TestContainsBatchPipeline(t *testing.T) {
	for _, l := range []counting4.Layout{counting4.Blocked1024, counting4.Blocked512, counting4.Classic} {
		for _, nkeys := range []int{500, 2_500, 12_000, 40_000, 60_000} {
			t.Run(fmt.Sprintf("%v/%d", l, nkeys), func(t *testing.T) {
				f, err := NewMemory(&Options{Capacity: 1_000, GrowthFactor: 1.5, Layout: l, Seed: uint64(nkeys)})
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				var keys [][]byte
				step := max(1, nkeys/3000) // keys from every filter
				for i := range nkeys {
					k := []byte(fmt.Sprint("in-", i))
					if err := f.Add(k, uint64(i)); err != nil {
						t.Fatal(err)
					}
					if i%step == 0 {
						keys = append(keys, k, []byte(fmt.Sprint("out-", i)))
					}
				}
				t.Logf("%d filters", len(f.Stats().Filters))
				checkBatch(t, f, keys)
			})
		}
	}
}

// TestContainsBatchConverted: a chain whose first filters are converted
// from the original's file (its hash and layout) and whose later ones use
// the native hash.
func TestContainsBatchConverted(t *testing.T) {
	requireFiles(t)
	old := origFile(t, "scaling_1000_0.05.bin")
	f, _, err := ImportDablooms(filepath.Join(t.TempDir(), "new.dbl"), old, 1000, 0.05, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var keys [][]byte
	for i := range 3000 {
		keys = append(keys, []byte(fmt.Sprint("key-", i)), []byte(fmt.Sprint("other-", i)))
	}
	checkBatch(t, f, keys)
	for i := range 3000 {
		k := []byte(fmt.Sprint("new-", i))
		if err := f.Add(k, 1_000_000+uint64(i)); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	st := f.Stats()
	t.Logf("%d filters, first %s/%s, last %s/%s", len(st.Filters), st.Filters[0].Hash, st.Filters[0].Layout,
		st.Filters[len(st.Filters)-1].Hash, st.Filters[len(st.Filters)-1].Layout)
	checkBatch(t, f, keys)
	// Longer than batchFilters: the converted filters are in the last pass.
	for i := 3000; len(f.Stats().Filters) <= batchFilters; i++ {
		k := []byte(fmt.Sprint("new-", i))
		if err := f.Add(k, 1_000_000+uint64(i)); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			keys = append(keys, k)
		}
	}
	t.Logf("%d filters", len(f.Stats().Filters))
	checkBatch(t, f, keys)
}

// TestContainsBatchAllocs: ContainsBatch allocates nothing, on one filter,
// a chain of a few and one longer than batchFilters.
func TestContainsBatchAllocs(t *testing.T) {
	for _, n := range []int{1_000, 5_000, 20_000} {
		f, err := NewMemory(&Options{Capacity: 1_000, GrowthFactor: 1, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		keys := make([][]byte, 600)
		for i := range n {
			k := makeKey(nil, "in-", i)
			if err := f.Add(k, uint64(i+1)); err != nil {
				t.Fatal(err)
			}
			if i < len(keys) {
				keys[i] = k
			}
		}
		out := make([]bool, len(keys))
		filters := len(f.Stats().Filters)
		if a := testing.AllocsPerRun(20, func() { f.ContainsBatch(keys, out) }); a != 0 {
			t.Fatalf("%d filters: ContainsBatch allocates %v times per call", filters, a)
		}
		for i, v := range out {
			if !v {
				t.Fatalf("%d filters: false negative for key %d", filters, i)
			}
		}
	}
}
