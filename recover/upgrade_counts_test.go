package recover

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
)

// setFlags rewrites both metadata copies of the file at path with the
// flags fl, as an older version would have written them.
func setFlags(t *testing.T, path string, fl func(uint64) uint64) {
	t.Helper()
	m := readMetaT(t, path)
	m.Flags = fl(m.Flags)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	header.EncodeBoth(b, m)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// countLine returns the words of writer slot s's count line on the
// file's first filter.
func countLine(t *testing.T, path string, s int) [header.CountWords]uint64 {
	t.Helper()
	m := readMetaT(t, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var w [header.CountWords]uint64
	off := header.CountOffset(&m.Filters[0], s)
	for i := range w {
		w[i] = binary.LittleEndian.Uint64(b[off+int64(8*i):])
	}
	return w
}

// putCountWord stores v in word w of writer slot s's count line on the
// file's first filter, and the counts page's checksum with it (as a
// writer and the next flush would).
func putCountWord(t *testing.T, path string, s, w int, v uint64) {
	t.Helper()
	m := readMetaT(t, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := &m.Filters[0]
	binary.LittleEndian.PutUint64(b[header.CountOffset(d, s)+int64(8*w):], v)
	if l, ok := d.SumLayout(); ok {
		pg := (d.CountsOffset() - d.Offset) / header.PageSize
		l.PutSumIn(b[l.MapOffset:], pg, header.PageSum(b[d.CountsOffset():][:header.PageSize]))
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeAddsRecordCounts: a file of format 1.5 (no count word per
// record) opens, and its shared writers count in the first word of their
// lines alone, whatever the other words hold (a 1.5 library never wrote
// them; here one holds garbage, which Verify does not read). Upgrade folds
// the counts into the items word, zeroes every word of every count line
// (the garbage too, which would count once the flag is set) and sets
// FlagRecordCounts: the item count is kept, the result verifies clean,
// and a second Upgrade changes nothing.
func TestUpgradeAddsRecordCounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v15.dbl")
	f, err := scaling.Create(path, &scaling.Options{Capacity: 1000, ErrorRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	setFlags(t, path, func(fl uint64) uint64 { return fl &^ header.FlagRecordCounts })
	putCountWord(t, path, 5, 3, 77) // garbage in a word 1.5 never reads
	const n = 300
	for i := range n {
		g, err := scaling.Open(path, nil)
		if err != nil {
			t.Fatalf("a shared handle on a 1.5 file: %v", err)
		}
		if err := g.AddString(fmt.Sprint("key ", i), uint64(i)); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			if err := g.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Slot 0's handles counted in word 0 alone, whichever record they
	// held.
	if w := countLine(t, path, 0); w[0] != n || w[1]|w[2]|w[3]|w[4]|w[5]|w[6]|w[7] != 0 {
		t.Fatalf("slot 0's count line in a 1.5 file: %v, want [%d 0 …]", w, n)
	}
	if r, err := Verify(path); err != nil || r.State != Clean {
		t.Fatalf("the 1.5 file: %v, %v", r.State, err)
	}
	if fl := readMetaT(t, path).Flags; fl&header.FlagRecordCounts != 0 {
		t.Fatalf("a shared handle set the flag: %#x", fl)
	}
	if _, err := Upgrade(path, &RepairOptions{NoBackup: true}); err != nil {
		t.Fatal(err)
	}
	if fl := readMetaT(t, path).Flags; fl&header.FlagRecordCounts == 0 || fl&header.FlagUndoBlock == 0 {
		t.Fatalf("after Upgrade the flags are %#x", fl)
	}
	for s := range header.NumSlots {
		if w := countLine(t, path, s); w != [header.CountWords]uint64{} {
			t.Fatalf("after Upgrade slot %d's count line is %v, want zeros", s, w)
		}
	}
	if r, err := Verify(path); err != nil || r.State != Clean {
		t.Fatalf("after Upgrade: %v, %v %v", r.State, err, r.Findings)
	}
	before, _ := os.ReadFile(path)
	if _, err := Upgrade(path, &RepairOptions{NoBackup: true}); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("a second Upgrade changed the file")
	}
	g, err := scaling.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if c := g.Stats().Count; c != n {
		t.Fatalf("item count %d after Upgrade, want %d", c, n)
	}
	if !g.ContainsString("key 0") || !g.ContainsString(fmt.Sprint("key ", n-1)) {
		t.Fatal("keys gone after Upgrade")
	}
}

// TestRecordCountWordsVerify: in a file with FlagRecordCounts every word
// of a count line counts. Verify sums them (a count split over several
// words verifies clean), notes a word of a slot its filter's writers word
// does not name, and Repair zeroes it.
func TestRecordCountWordsVerify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v16.dbl")
	f, err := scaling.Create(path, &scaling.Options{Capacity: 1000, ErrorRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := f.AddString(fmt.Sprint("key ", i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	w := countLine(t, path, 0)
	var sum uint64
	for _, v := range w {
		sum += v
	}
	if sum != 200 {
		t.Fatalf("slot 0's count line %v sums to %d, want 200", w, sum)
	}
	// Move part of the count to another word: the sum is what counts.
	putCountWord(t, path, 0, 0, w[0]-50)
	putCountWord(t, path, 0, 6, w[6]+50)
	if r, err := Verify(path); err != nil || r.State != Clean {
		t.Fatalf("a count split over words: %v, %v", r.State, err)
	}
	// A word of a slot the writers word does not name.
	putCountWord(t, path, 9, 4, 5)
	r, err := Verify(path)
	if err != nil || r.State != Damaged || len(r.Findings) != 1 || r.Findings[0].Field != "item counts" {
		t.Fatalf("a stray count word: %v, %v %v; want damaged, the item counts", r.State, err, r.Findings)
	}
	if _, err := Repair(path, &RepairOptions{NoBackup: true}); err != nil {
		t.Fatal(err)
	}
	if w := countLine(t, path, 9); w != [header.CountWords]uint64{} {
		t.Fatalf("after Repair slot 9's count line is %v", w)
	}
	if r, err := Verify(path); err != nil || r.State != Clean {
		t.Fatalf("after Repair: %v, %v", r.State, err)
	}
}
