package recover

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/childproc"
	"github.com/dablooms/dablooms/scaling"
)

// lateRow is one Add of the late-Add workloads: writer w's key with its id.
type lateRow struct {
	key string
	id  uint64
}

// lateFile makes a flushed store in which three writers with interleaved
// ids, the later ones a whole capacity behind, left late Adds in several
// filters. It returns the path and every Add.
func lateFile(t *testing.T) (string, []lateRow) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "late.dbl")
	const capacity, writers, n = 200, 3, 1500
	f, err := scaling.Create(path, booted(&scaling.Options{Capacity: capacity, ErrorRate: 0.05, GrowthFactor: 2, Seed: 7}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	var rows []lateRow
	next := make([]int, writers)
	add := func(w int) {
		r := lateRow{string(childproc.WriterKey(w, next[w])), childproc.WriterID("interleaved", w, next[w], writers)}
		if err := f.AddString(r.key, r.id); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
		next[w]++
	}
	for range capacity {
		add(0)
	}
	for len(rows) < writers*n {
		for w := range writers {
			for range w + 1 {
				if next[w] < n {
					add(w)
				}
			}
		}
	}
	late := 0
	for _, fs := range f.Stats().Filters {
		if fs.LateIndex {
			late++
		}
	}
	if late < 2 {
		t.Fatalf("%d filters with late Adds: the workload does not exercise them", late)
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, rows
}

func rowsSource(rows []lateRow) Source {
	return func(lo, hi uint64, add func([]byte, uint64) error) error {
		for _, r := range rows {
			if r.id >= lo && r.id <= hi {
				if err := add([]byte(r.key), r.id); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// removeAll opens path, checks every row is present, removes each with its
// id and checks that every Remove succeeds and leaves nothing behind.
func removeAll(t *testing.T, path string, rows []lateRow) {
	t.Helper()
	checkPresent(t, path, rows)
	if t.Failed() {
		t.FailNow()
	}
	f, err := scaling.Open(path, booted(&scaling.OpenOptions{}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	failed := map[string]int{}
	for _, r := range rows {
		if err := f.RemoveString(r.key, r.id); err != nil {
			switch {
			case errors.Is(err, scaling.ErrAmbiguous):
				failed["ErrAmbiguous"]++
			case errors.Is(err, scaling.ErrNotPresent):
				failed["ErrNotPresent"]++
			default:
				t.Fatal(err)
			}
		}
	}
	if len(failed) > 0 {
		t.Fatalf("Removes failed: %v", failed)
	}
	for _, fs := range f.Stats().Filters {
		if fs.Count != 0 {
			t.Errorf("filter %d holds %d items after every key was removed", fs.Index, fs.Count)
		}
	}
}

// TestRebuildKeepsLateAdds: Rebuild of filters whose lines are garbage puts
// each late Add back into the filter whose index holds it, and no other:
// afterwards every key is present and every Remove succeeds exactly.
func TestRebuildKeepsLateAdds(t *testing.T) {
	for _, damaged := range [][]int{{0}, {1}, {2}, {0, 1, 2, 3}} {
		t.Run(fmt.Sprint(damaged), func(t *testing.T) {
			path, rows := lateFile(t)
			rebuildGarbageLines(t, path, rows, damaged)
			removeAll(t, path, rows)
		})
	}
}

// rebuildGarbageLines makes the lines of the filters damaged garbage, and
// rebuilds them from rows: Verify must say corrupt before, clean after.
func rebuildGarbageLines(t *testing.T, path string, rows []lateRow, damaged []int) {
	t.Helper()
	for _, i := range damaged {
		putWord(t, path, header.FilterLineOffset(i)+header.FilterReservedOffset, 1)
	}
	if r := verifyT(t, path); r.State != Corrupt {
		dumpReport(t, r)
		t.Fatalf("garbage lines: state %v, want corrupt", r.State)
	}
	rep, err := Rebuild(path, rowsSource(rows), booted(&RepairOptions{}, testBoot))
	if err != nil || rep.State != Clean {
		t.Fatalf("Rebuild: %v, %v", err, rep)
	}
	if r := verifyT(t, path); r.State != Clean {
		dumpReport(t, r)
		t.Fatalf("after Rebuild: state %v", r.State)
	}
}

// TestLateAddsSurviveRepair: a clean file with late Adds goes through
// Repair unchanged in what it answers.
func TestLateAddsSurviveRepair(t *testing.T) {
	path, rows := lateFile(t)
	if r := verifyT(t, path); r.State != Clean {
		dumpReport(t, r)
		t.Fatalf("state %v, want clean", r.State)
	}
	if _, err := Repair(path, booted(&RepairOptions{}, testBoot)); err != nil {
		t.Fatal(err)
	}
	removeAll(t, path, rows)
}

// itemsInImage is filter i's item count in the file image b: its line's
// items word plus the writers' counts its writers word names.
func itemsInImage(b []byte, d *header.FilterDesc, i int) int64 {
	line := header.ReadLine(b, i)
	n := int64(line.Items)
	if d.HasCounts() {
		for s := range header.NumSlots {
			if line.Writers&(1<<s) != 0 {
				// (Every word of the line: the tests' files have
				// FlagRecordCounts, and a 1.5 file's other words are zero.)
				for w := range header.CountWords {
					n += int64(le.Uint64(b[header.CountOffset(d, s)+int64(8*w):]))
				}
			}
		}
	}
	return n
}

// TestRepairEndsCutShortLateAdd: a dead writer's record of a late Add that
// Repair undoes clears the index entry only when the record says its
// compare-and-swap happened (IndexDone); without it the entry (which may
// be another writer's Add of the same key and id) stays.
func TestRepairEndsCutShortLateAdd(t *testing.T) {
	for _, done := range []bool{true, false} {
		t.Run(fmt.Sprint("done=", done), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cut.dbl")
			b, _, kh, fp, s, entry, _ := lateEntryFile(t, path)
			// A dead writer in slot 9 with an Add of the same pair cut short
			// before any counter changed.
			slotWord := s + 1
			if done {
				slotWord |= header.IndexDone
			}
			sl := header.ReadSlot(b, 9)
			sl.Owner = 0x1234
			sl.Records[0] = header.Record{Op: uint64(header.OpWord(0).Begin(header.OpAdd, 1)), Hash: kh, IndexSlot: slotWord, IndexFP: uint64(fp)}
			header.PutSlot(b, 9, sl)
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if r := verifyT(t, path); r.State != Interrupted {
				dumpReport(t, r)
				t.Fatalf("state %v, want interrupted", r.State)
			}
			rep, err := Repair(path, booted(&RepairOptions{}, testBoot))
			if err != nil || rep.State != Clean {
				t.Fatalf("Repair: %v, %v", err, rep)
			}
			want := fp
			if done {
				want = header.IndexCleared
			}
			if got := le.Uint32(mustReadFile(t, path)[entry:]); got != want {
				t.Log(rep.Actions)
				t.Fatalf("entry %#x after Repair, want %#x", got, want)
			}
		})
	}
}

// lateEntryFile makes a store whose filter 1 took 40 late Adds ("late0"…
// "late39", id 10) and closes it unflushed (filter 1 marked dirty, as a
// cut-short operation leaves it). It returns the file's bytes, filter 1,
// the hash of "late39" for filter 1, its fingerprint and its entry's slot
// and file offset, and filter 1's item count.
func lateEntryFile(t *testing.T, path string) (b []byte, d header.FilterDesc, kh uint64, fp uint32, s uint64, entry int64, items uint64) {
	t.Helper()
	f, err := scaling.Create(path, booted(&scaling.Options{Capacity: 100, ErrorRate: 0.05, GrowthFactor: 1, Seed: 3}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 150 {
		if err := f.AddString(fmt.Sprint("k", i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 { // past filter 0's slack: late Adds into filter 1
		if err := f.AddString(fmt.Sprint("late", i), 10); err != nil {
			t.Fatal(err)
		}
	}
	if !f.Stats().Filters[1].LateIndex {
		t.Fatal("no late Add")
	}
	items = f.Stats().Filters[1].Count
	f.Close() // unflushed: filter 1 is marked dirty, as a cut-short operation would leave it
	b = mustReadFile(t, path)
	m, err := header.Pick(b[:2*header.MetaSize], int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	d = m.Filters[1]
	kh = header.HashKey(3, []byte("late39")) + counting4.Salt(1)
	n := uint64(d.IndexBytes() / header.IndexEntrySize)
	fp, s = header.IndexProbe(kh, 10, n)
	for le.Uint32(b[d.IndexOffset()+int64(s)*4:]) != fp {
		s = (s + 1) % n
	}
	return b, d, kh, fp, s, d.IndexOffset() + int64(s)*4, items
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBackupKeepsLateAdds: a backup of a file with late Adds answers and
// removes exactly like the original.
func TestBackupKeepsLateAdds(t *testing.T) {
	path, rows := lateFile(t)
	dst := filepath.Join(t.TempDir(), "copy.dbl")
	if _, err := Backup(context.Background(), path, dst, booted(&BackupOptions{}, testBoot)); err != nil {
		t.Fatal(err)
	}
	if r := verifyT(t, dst); r.State != Clean {
		dumpReport(t, r)
		t.Fatalf("backup: state %v, want clean", r.State)
	}
	removeAll(t, dst, rows)
}

// TestRepairPutsBackClaimedLateEntry: a Remove of a late Add claims the
// pair's index entry (clears it) before it changes the counters. A dead
// writer's Remove cut short after its claim and before any counter
// changed is undone by Repair, entry included: the entry holds the pair's
// fingerprint again, and the pair's Remove then succeeds, with exact item
// counts. (Without the put-back the copy stays in the counters with no
// entry, and its Remove goes to the filter whose range holds the id.)
func TestRepairPutsBackClaimedLateEntry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "claim.dbl")
	b, _, kh, fp, s, entry, items := lateEntryFile(t, path)
	// A dead writer in slot 9 whose Remove of the pair claimed the entry
	// and died before its first counter change.
	le.PutUint32(b[entry:], header.IndexCleared)
	sl := header.ReadSlot(b, 9)
	sl.Owner = 0x1234
	sl.Records[0] = header.Record{Op: uint64(header.OpWord(0).Begin(header.OpRemove, 1)), Hash: kh, IndexSlot: (s + 1) | header.IndexDone, IndexFP: uint64(fp)}
	header.PutSlot(b, 9, sl)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Repair(path, booted(&RepairOptions{}, testBoot))
	if err != nil || rep.State != Clean {
		t.Fatalf("Repair: %v, %v", err, rep)
	}
	if got := le.Uint32(mustReadFile(t, path)[entry:]); got != fp {
		t.Log(rep.Actions)
		t.Fatalf("entry %#x after Repair, want the pair's fingerprint %#x back", got, fp)
	}
	g, err := scaling.Open(path, booted(&scaling.OpenOptions{}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.RemoveString("late39", 10); err != nil {
		t.Fatalf("Remove of the pair after Repair: %v", err)
	}
	if got := g.Stats().Filters[1].Count; got != items-1 {
		t.Fatalf("filter 1 counts %d items after the Remove, want %d", got, items-1)
	}
}
