package scaling

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/dablooms/dablooms/header"
)

// TestPerWriterCounts: two handles add and remove on one filter; each
// changes only its own count (the line's items word stays 0 and the writers
// word names both slots), a Remove of a key the other handle added makes a
// count negative, and the item count every handle reads is the sum.
func TestPerWriterCounts(t *testing.T) {
	requireFiles(t)
	path := filepath.Join(t.TempDir(), "c.dbl")
	a, err := Create(path, &Options{Capacity: 10_000, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := range 300 {
		h := a
		if i%3 == 0 {
			h = b
		}
		if err := h.AddString(fmt.Sprint("k", i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	// b removes 150 keys, most of them added by a.
	for i := range 150 {
		if err := b.RemoveString(fmt.Sprint("k", i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []*Filter{a, b} {
		if n := h.Stats().Count; n != 150 {
			t.Errorf("item count %d, want 150", n)
		}
	}
	m := a.chain.Load().f[0]
	if w := atomic.LoadUint64(&header.LineAt(a.hot, 0).Items); w != 0 {
		t.Errorf("the line's items word is %d: writers should count in their own lines", w)
	}
	if w := atomic.LoadUint64(&m.line.Writers); w != 1<<a.slot|1<<b.slot {
		t.Errorf("writers word %#x, want slots %d and %d", w, a.slot, b.slot)
	}
	ca := int64(atomic.LoadUint64(&m.counts[a.slot*countStride]))
	cb := int64(atomic.LoadUint64(&m.counts[b.slot*countStride]))
	if ca != 200 || cb != 100-150 {
		t.Errorf("counts: slot %d %d (want 200), slot %d %d (want -50)", a.slot, ca, b.slot, cb)
	}
	// A reopened handle (another slot) reads the same sum.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := Open(path, &OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n := c.Stats().Count; n != 150 {
		t.Errorf("read-only handle: item count %d, want 150", n)
	}
}
