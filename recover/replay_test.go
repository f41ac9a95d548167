package recover

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
)

// Replays (issue 38, item 3): the log a Rebuild reads lists a replayed
// pair as often as it was added, more often than the store keeps copies of
// a pair whose copies saturate (header.IndexSaturated).

const (
	rpCapacity  = 2000
	rpSaturated = 20  // pairs 0 … 19 are replayed rpRounds times
	rpFew       = 20  // pairs 20 … 39 are replayed rpFewTimes times
	rpRounds    = 100 // past saturation
	rpFewTimes  = 5   // below it
)

// replayFile makes a flushed store of capacity 2000 whose filter 0 holds
// ids 0 … 1999 and is full to its slack, so that the replays of its pairs
// that follow are late Adds of filter 1. It returns the path, the log of
// every Add (replays included) and the chain's shape.
func replayFile(t *testing.T) (string, []lateRow, int, int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "replay.dbl")
	f, err := scaling.Create(path, booted(&scaling.Options{Capacity: rpCapacity, ErrorRate: 0.01, Seed: 11}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	var rows []lateRow
	add := func(key string, id uint64) {
		if err := f.AddString(key, id); err != nil {
			t.Fatalf("Add(%s, %d): %v", key, id, err)
		}
		rows = append(rows, lateRow{key, id})
	}
	for i := range rpCapacity {
		add(fmt.Sprint("pair-", i), uint64(i))
	}
	for i := range 1000 {
		add(fmt.Sprint("second-", i), uint64(rpCapacity+i))
	}
	for i := range int(header.Slack(rpCapacity)) {
		add(fmt.Sprint("slack-", i), uint64(i))
	}
	for r := range rpRounds {
		for i := range rpSaturated + rpFew {
			if i < rpSaturated || r < rpFewTimes {
				add(fmt.Sprint("pair-", i), uint64(i))
			}
		}
	}
	st := f.Stats()
	if len(st.Filters) != 2 || !st.Filters[1].LateIndex {
		t.Fatalf("setup: want 2 filters, the second with late Adds; have %+v", st.Filters)
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, rows, len(st.Filters), fi.Size()
}

// TestRebuildFromReplayedLog: Rebuild of filters whose lines are garbage,
// from a log that lists replayed pairs as often as they were added, keeps
// the chain and the file as they were and every key present, and leaves
// Removes as exact as the library left them: every Remove of a saturated
// pair succeeds and it stays present; a pair replayed fewer times is
// removed once per Add, then ErrNotPresent, but for one more copy where
// filter 1 was rebuilt (its Rebuild re-adds every listed copy of a pair
// its index holds, the one of filter 0's range too: a key is never lost
// to an entry a killed Remove took). (Before, Rebuild of filter 0 put
// every copy past the 15 of filter 1's index into filter 0, over its item
// limit, and Rebuild refused the log.)
func TestRebuildFromReplayedLog(t *testing.T) {
	for _, damaged := range [][]int{{0}, {1}, {0, 1}} {
		t.Run(fmt.Sprint(damaged), func(t *testing.T) {
			path, rows, filters, size := replayFile(t)
			rebuildGarbageLines(t, path, rows, damaged)
			checkPresent(t, path, rows)
			f, err := scaling.Open(path, booted(&scaling.OpenOptions{}, testBoot))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(f.Stats().Filters); n != filters || fi.Size() != size {
				t.Fatalf("after Rebuild: %d filters, %d bytes; before: %d, %d", n, fi.Size(), filters, size)
			}
			for i := range rpSaturated + rpFew {
				key, id := fmt.Sprint("pair-", i), uint64(i)
				copies := 1 + rpFewTimes
				if i < rpSaturated {
					copies = 1 + rpRounds
				}
				if i >= rpSaturated && slices.Contains(damaged, 1) {
					copies++
				}
				for n := range copies {
					if err := f.RemoveString(key, id); err != nil {
						t.Fatalf("Remove %d of the %d copies of %s: %v", n+1, copies, key, err)
					}
				}
				err := f.RemoveString(key, id)
				switch {
				case i < rpSaturated && (err != nil || !f.ContainsString(key)):
					t.Fatalf("saturated %s: Remove past its copies: %v; present: %v", key, err, f.ContainsString(key))
				case i >= rpSaturated && !errors.Is(err, scaling.ErrNotPresent):
					t.Fatalf("Remove of %s past its %d copies: %v, want ErrNotPresent", key, copies, err)
				}
			}
		})
	}
}
