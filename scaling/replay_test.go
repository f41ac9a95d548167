package scaling

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
)

// Replays (issue 38, item 3): a consumer with at-least-once delivery adds
// pairs (key, id) it added before. A late copy of a pair whose copies
// saturate (header.IndexSaturated) takes no index entry: before, every
// copy took one, and every 64 copies of one pair filled its probe window
// and sealed the newest filter.

func replayKey(i int) string { return fmt.Sprint("k", i) }

// chainShape is what a replay must not change: the filters and the file.
type chainShape struct {
	filters int
	size    int64
}

func shapeOf(t *testing.T, f *Filter, path string) chainShape {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return chainShape{len(f.Stats().Filters), st.Size()}
}

// replayLog loads pairs (k1, 1) … (k150000, 150000) into a new file of
// capacity 100,000 (two filters), then replays the first filter's first 50
// pairs 200 times over (10,000 Adds of pairs already there). It returns
// the chain's shape before and after the replay.
func replayLog(t *testing.T, k *testknobs.Knobs) (f *Filter, path string, before, after chainShape) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "replay.dbl")
	f, err := Create(path, &Options{Capacity: 100_000, ErrorRate: 0.01, Seed: 3, knobs: k})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	for i := 1; i <= 150_000; i++ {
		if err := f.AddString(replayKey(i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	before = shapeOf(t, f, path)
	if before.filters != 2 {
		t.Fatalf("%d filters after the load, want 2", before.filters)
	}
	for range 200 {
		for i := 1; i <= 50; i++ {
			if err := f.AddString(replayKey(i), uint64(i)); err != nil {
				t.Fatalf("replay of pair %d: %v", i, err)
			}
		}
	}
	return f, path, before, shapeOf(t, f, path)
}

// lateCopies is how many entries of filter j's index hold the pair (key, id).
func lateCopies(f *Filter, j int, key string, id uint64) int {
	c := f.chain.Load()
	m := c.f[j]
	e, _ := m.ix.find(m.keyHash(f.hash(c, []byte(key))), id)
	return e.copies
}

// TestReplayedPairsCostNoGrowth: replaying pairs 200 times over leaves the
// chain and the file as they were, every key present, and the Removes as
// exact as counters make them: a pair whose copies saturate stays present
// and every Remove of it succeeds (as for a saturated key); a pair
// replayed fewer times is removed once per Add, and then ErrNotPresent.
// Its negative control (testknobs.Knobs.LateRepeatsSeal: every copy takes
// an entry, as before) must grow the chain.
func TestReplayedPairsCostNoGrowth(t *testing.T) {
	t.Run("control", func(t *testing.T) {
		_, _, before, after := replayLog(t, &testknobs.Knobs{LateRepeatsSeal: true})
		t.Logf("without saturation: %+v → %+v", before, after)
		if after == before {
			t.Fatal("the replay grew nothing without saturation: the test does not reach the window it checks")
		}
	})
	f, path, before, after := replayLog(t, nil)
	t.Logf("%+v → %+v", before, after)
	if after != before {
		t.Fatalf("the replay grew the store: %+v → %+v", before, after)
	}
	for i := 1; i <= 150_000; i++ {
		if !f.ContainsString(replayKey(i)) {
			t.Fatalf("false negative k%d", i)
		}
	}
	// Replays past the first filter's slack are late Adds of filter 1,
	// whose index counts each pair's copies up to the bound.
	for i := 1; i <= 50; i++ {
		if n := lateCopies(f, 1, replayKey(i), uint64(i)); n != header.IndexSaturated {
			t.Fatalf("pair %d has %d entries in filter 1's index, want %d", i, n, header.IndexSaturated)
		}
	}
	// Pairs replayed fewer times than saturate.
	const few = 5
	for range few {
		for i := 51; i <= 100; i++ {
			if err := f.AddString(replayKey(i), uint64(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := shapeOf(t, f, path); got != before {
		t.Fatalf("the second replay grew the store: %+v → %+v", before, got)
	}
	for i := 51; i <= 100; i++ {
		if n := lateCopies(f, 1, replayKey(i), uint64(i)); n != few {
			t.Fatalf("pair %d has %d entries in filter 1's index, want %d", i, n, few)
		}
	}
	for i := 51; i <= 100; i++ {
		for n := range 1 + few {
			if err := f.RemoveString(replayKey(i), uint64(i)); err != nil {
				t.Fatalf("Remove %d of the %d copies of pair %d: %v", n+1, 1+few, i, err)
			}
		}
		if err := f.RemoveString(replayKey(i), uint64(i)); !errors.Is(err, ErrNotPresent) {
			t.Fatalf("Remove of pair %d past its %d copies: %v, want ErrNotPresent", i, 1+few, err)
		}
	}
	for i := 1; i <= 50; i++ {
		for n := range 201 {
			if err := f.RemoveString(replayKey(i), uint64(i)); err != nil {
				t.Fatalf("Remove %d of the 201 copies of pair %d: %v", n+1, i, err)
			}
		}
		if !f.ContainsString(replayKey(i)) {
			t.Fatalf("saturated pair %d is gone", i)
		}
	}
	for i := 101; i <= 150_000; i++ {
		if err := f.RemoveString(replayKey(i), uint64(i)); err != nil {
			t.Fatalf("Remove of pair %d: %v", i, err)
		}
	}
	for _, fs := range f.Stats().Filters {
		if fs.Count > header.ItemLimit(fs.Capacity) {
			t.Fatalf("filter %d holds %d items, over its limit", fs.Index, fs.Count)
		}
	}
}

// TestReplayedPairsConcurrent: goroutines replay the same pairs at once,
// then remove them at once. The chain does not grow, each pair takes at
// most one entry past the bound per goroutine racing it, and every Remove
// succeeds; pairs replayed once per goroutine are removed exactly.
func TestReplayedPairsConcurrent(t *testing.T) {
	const gor, pairs, rounds = 4, 20, 60
	f := fillFirstInternal(t)
	before := len(f.Stats().Filters)
	var wg sync.WaitGroup
	errs := make(chan error, 2*gor)
	run := func(op func(i int) error, n int) {
		for range gor {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range n {
					for i := range 2 * pairs {
						if i >= pairs && n > 1 {
							break // pairs ≥ pairs: once per goroutine
						}
						if err := op(i); err != nil {
							errs <- err
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
	}
	add := func(i int) error { return f.Add(seamPair(i), uint64(i)) }
	remove := func(i int) error {
		if err := f.Remove(seamPair(i), uint64(i)); err != nil {
			return fmt.Errorf("Remove of pair %d: %w", i, err)
		}
		return nil
	}
	run(add, rounds) // pairs 0 … pairs-1, rounds times each per goroutine
	run(add, 1)      // every pair once per goroutine
	if got := len(f.Stats().Filters); got != before {
		t.Fatalf("the replays grew the chain from %d to %d filters", before, got)
	}
	for i := range pairs {
		if n := lateCopies(f, 1, string(seamPair(i)), uint64(i)); n < header.IndexSaturated || n > header.IndexSaturated-1+gor {
			t.Fatalf("pair %d has %d entries, want %d to %d", i, n, header.IndexSaturated, header.IndexSaturated-1+gor)
		}
	}
	run(remove, rounds+1)
	run(remove, 1) // pairs ≥ pairs: their gor late copies
	for i := range 2 * pairs {
		if i < pairs {
			if !f.Contains(seamPair(i)) {
				t.Fatalf("saturated pair %d is gone", i)
			}
			continue
		}
		if err := f.Remove(seamPair(i), uint64(i)); err != nil {
			t.Fatalf("Remove of pair %d's copy by range: %v", i, err)
		}
		if err := f.Remove(seamPair(i), uint64(i)); !errors.Is(err, ErrNotPresent) {
			t.Fatalf("Remove of pair %d past its copies: %v, want ErrNotPresent", i, err)
		}
	}
}

func seamPair(i int) []byte { return fmt.Appendf(nil, "pair-%06d", i) }

// fillFirstInternal makes a store of capacity 2000 whose filter 0 holds
// ids 0…1999 (pairs seamPair(i), i) and is full to its slack, and whose
// filter 1 holds ids from 2000 on: Adds of filter 0's pairs are late Adds
// of filter 1.
func fillFirstInternal(t *testing.T) *Filter {
	t.Helper()
	f, err := NewMemory(&Options{Capacity: 2000, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	for i := range 2000 {
		if err := f.Add(seamPair(i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 1000 {
		if err := f.AddString(fmt.Sprint("second-", i), uint64(2000+i)); err != nil {
			t.Fatal(err)
		}
	}
	// Filter 0's slack, to its item limit.
	for i := range int(header.Slack(2000)) {
		if err := f.AddString(fmt.Sprint("slack-", i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	st := f.Stats()
	if len(st.Filters) != 2 || st.Filters[0].Count != header.ItemLimit(2000) {
		t.Fatalf("setup: want 2 filters, the first at its item limit; have %+v", st.Filters)
	}
	return f
}
