package scaling

import (
	"fmt"
	"testing"
)

// TestContainsBatchMatchesContains: ContainsBatch answers exactly as
// Contains, for chains short enough to keep a group's probes and longer
// ones, for batch lengths that are not a multiple of the group, and with
// zero false negatives.
func TestContainsBatchMatchesContains(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		n    int
	}{
		{"one filter", Options{Capacity: 20_000, Seed: 1}, 10_000},
		{"four filters", Options{Capacity: 1_000, Seed: 2}, 10_000},
		{"eleven filters", Options{Capacity: 1_000, GrowthFactor: 1, Seed: 3}, 10_500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := NewMemory(&tc.o)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var keys [][]byte
			for i := 0; i < tc.n; i++ {
				k := []byte(fmt.Sprint("in-", i))
				if err := f.Add(k, uint64(i)); err != nil {
					t.Fatal(err)
				}
				keys = append(keys, k, []byte(fmt.Sprint("out-", i)))
			}
			t.Logf("%d filters", len(f.Stats().Filters))
			for _, size := range []int{0, 1, 15, 16, 17, 257} {
				out := make([]bool, size+3)
				for start := 0; start+size <= len(keys); start += max(size, 1) * 37 {
					batch := keys[start : start+size]
					f.ContainsBatch(batch, out)
					for i, k := range batch {
						if want := f.Contains(k); out[i] != want {
							t.Fatalf("batch of %d, key %q: ContainsBatch %v, Contains %v", size, k, out[i], want)
						}
						if (start+i)%2 == 0 && !out[i] {
							t.Fatalf("false negative for %q", k)
						}
					}
				}
			}
		})
	}
	f, _ := NewMemory(nil)
	f.Add([]byte("x"), 1)
	f.Close()
	out := []bool{true}
	f.ContainsBatch([][]byte{[]byte("x")}, out)
	if out[0] {
		t.Fatal("ContainsBatch on a closed filter answered true")
	}
}
