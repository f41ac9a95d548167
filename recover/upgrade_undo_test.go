package recover

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
)

// TestUpgradeAddsUndoBlock: a file of format 1.4 (page checksums, no undo
// block) opens, its exclusive writer keeps the per-position steps, and
// Upgrade gives it the undo block by writing its metadata again: the
// result verifies clean, keeps its keys, and a second Upgrade changes
// nothing.
func TestUpgradeAddsUndoBlock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v14.dbl")
	f, err := scaling.Create(path, &scaling.Options{Capacity: 1000, ErrorRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Make it a 1.4 file: both metadata copies without the flags of 1.5
	// and 1.6, before anything counted in a record's word.
	setFlags(t, path, func(fl uint64) uint64 { return fl &^ (header.FlagUndoBlock | header.FlagRecordCounts) })
	if f, err = scaling.Open(path, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := f.AddString(string(rune('a'+i%26))+string(rune('a'+i/26)), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	flags := func() uint64 { return readMetaT(t, path).Flags }
	ex, err := scaling.Open(path, &scaling.OpenOptions{Exclusive: true})
	if err != nil {
		t.Fatalf("an exclusive handle on a 1.4 file: %v", err)
	}
	if err := ex.AddString("on 1.4", 1000); err != nil {
		t.Fatal(err)
	}
	if err := ex.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := ex.Close(); err != nil {
		t.Fatal(err)
	}
	// Verify finds the hot page's tail zero: the writer left the undo
	// block alone.
	if r, err := Verify(path); err != nil || r.State != Clean {
		t.Fatalf("the 1.4 file after an exclusive writer: %v, %v", r.State, err)
	}
	if _, err := Upgrade(path, &RepairOptions{NoBackup: true}); err != nil {
		t.Fatal(err)
	}
	if fl := flags(); fl&header.FlagUndoBlock == 0 || fl&header.FlagPageSums == 0 || fl&header.FlagRecordCounts == 0 {
		t.Fatalf("after Upgrade the flags are %#x", fl)
	}
	if r, err := Verify(path); err != nil || r.State != Clean {
		t.Fatalf("after Upgrade: %v, %v", r.State, err)
	}
	before, _ := os.ReadFile(path)
	if _, err := Upgrade(path, &RepairOptions{NoBackup: true}); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("a second Upgrade changed the file")
	}
	g, err := scaling.Open(path, &scaling.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, k := range []string{"aa", "zc", "on 1.4"} {
		if !g.ContainsString(k) {
			t.Fatalf("%q is gone after Upgrade", k)
		}
	}
}
