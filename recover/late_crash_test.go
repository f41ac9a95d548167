package recover

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
)

// lateChainFile builds a chain of keys with ids 0..209 (filter 0: 0..99, filter
// 1: 100..199 with its slack filled, filter 2, the newest: 200..209), then
// a late Add "LATE" with id 190 into filter 2's index. It returns the file
// as it is closed (flushed after the late Add if flushLate) and as the last
// flush before the late Add left it.
func lateChainFile(t *testing.T, flushLate bool) (path string, rows []lateRow, beforeLate []byte) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "r.dbl")
	f, err := scaling.Create(path, booted(&scaling.Options{Capacity: 100, ErrorRate: 0.01, GrowthFactor: 1, Seed: 7}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	add := func(k string, id uint64) {
		if err := f.AddString(k, id); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, lateRow{k, id})
	}
	for i := range 210 {
		add(fmt.Sprintf("k%d", i), uint64(i))
	}
	for i := range 40 { // fill filter 1's slack
		add(fmt.Sprintf("s%d", i), 150+uint64(i%50))
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	beforeLate, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	add("LATE", 190)
	if !f.Stats().Filters[2].LateIndex {
		t.Fatal("no late Add")
	}
	if flushLate {
		if err := f.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	return path, rows, beforeLate
}

// checkPresent opens path and fails for every row it does not contain.
func checkPresent(t *testing.T, path string, rows []lateRow) {
	t.Helper()
	f, err := scaling.Open(path, booted(&scaling.OpenOptions{}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, r := range rows {
		if !f.ContainsString(r.key) {
			t.Errorf("false negative: %s (id %d)", r.key, r.id)
		}
	}
}

// TestRebuildAfterRangeShrink: after the keys at the top of a sealed
// filter's range are removed, a Rebuild of that filter keeps its range, and
// a later Rebuild of the newer filter still finds its late Add (id 190,
// below the removed ids' top). Found by review: Rebuild shrank the range and
// asked the source for late Adds only up to the shrunk frontier.
func TestRebuildAfterRangeShrink(t *testing.T) {
	path, rows, _ := lateChainFile(t, true)
	// Remove every row of filter 1 with id >= 150 (not LATE) from the store and the source.
	f, err := scaling.Open(path, booted(&scaling.OpenOptions{}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	var keep []lateRow
	for _, r := range rows {
		if r.id >= 150 && r.id < 200 && r.key != "LATE" {
			if err := f.RemoveString(r.key, r.id); err != nil {
				t.Fatalf("remove %s: %v", r.key, err)
			}
			continue
		}
		keep = append(keep, r)
	}
	f.Flush()
	f.Close()
	putWord(t, path, header.FilterLineOffset(1)+header.FilterReservedOffset, 1)
	if _, err := Rebuild(path, rowsSource(keep), booted(&RepairOptions{}, testBoot)); err != nil {
		t.Fatal(err)
	}
	checkPresent(t, path, keep)
	putWord(t, path, header.FilterLineOffset(2)+header.FilterReservedOffset, 1)
	rep, err := Rebuild(path, rowsSource(keep), booted(&RepairOptions{}, testBoot))
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.Actions)
	checkPresent(t, path, keep)
}

// TestRebuildAfterLostIndexPage: an OS crash after a late Add lost the
// page of the index that held it (the file is dirty on another boot): the
// Rebuild of that filter still re-adds the key, which no other filter holds.
func TestRebuildAfterLostIndexPage(t *testing.T) {
	path, rows, snap := lateChainFile(t, false)
	// The Close above did not flush after LATE; the file is dirty. Simulate a lost index page.
	b, _ := os.ReadFile(path)
	m, err := header.Pick(b[:2*header.MetaSize], int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	d := m.Filters[len(m.Filters)-1]
	copy(b[d.IndexOffset():d.IndexOffset()+d.IndexBytes()], snap[d.IndexOffset():])
	os.WriteFile(path, b, 0o644)
	rep, err := Rebuild(path, rowsSource(rows), booted(&RepairOptions{}, "boot-after-crash"))
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.Actions)
	checkPresent(t, path, rows)
}
