package main

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/dablooms/dablooms/scaling"
)

// The single-key load adds every line's key with its id.
func TestLoadSingle(t *testing.T) {
	dir := t.TempDir()
	lines, store := filepath.Join(dir, "lines.txt"), filepath.Join(dir, "x.dbl")
	if err := writeLines(lines, 5000); err != nil {
		t.Fatal(err)
	}
	f, err := scaling.Create(store, &scaling.Options{Capacity: 5000, ErrorRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := loadSingle(lines, store); err != nil {
		t.Fatal(err)
	}
	if f, err = scaling.Open(store, &scaling.OpenOptions{ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 5000 {
		if !f.Contains(fmt.Appendf(nil, "key-%d", i)) {
			t.Fatalf("key-%d was loaded; Contains is false", i)
		}
	}
	var n uint64
	for _, fs := range f.Stats().Filters {
		n += fs.Count
	}
	if n != 5000 {
		t.Fatalf("%d items, want 5000", n)
	}
}
