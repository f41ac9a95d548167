package scaling

import (
	"fmt"
	"testing"
)

// TestContainsBatchMatchesContains: ContainsBatch answers exactly as
// Contains (checkBatch), for chains short enough to keep a group's probes
// and longer ones, with zero false negatives, and false after Close.
func TestContainsBatchMatchesContains(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		n    int
	}{
		{"one filter", Options{Capacity: 20_000, Seed: 1}, 10_000},
		{"four filters", Options{Capacity: 1_000, Seed: 2}, 10_000},
		{"eleven filters", Options{Capacity: 1_000, GrowthFactor: 1, Seed: 3}, 10_500},
		{"twenty-one filters (three passes)", Options{Capacity: 500, GrowthFactor: 1, Seed: 4}, 10_400},
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
			checkBatch(t, f, keys)
			for i := 0; i < len(keys); i += 2 {
				if !f.Contains(keys[i]) {
					t.Fatalf("false negative for %q", keys[i])
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
