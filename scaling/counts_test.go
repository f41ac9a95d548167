package scaling

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"unsafe"

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
	ca, cb := slotCount(m, a.slot), slotCount(m, b.slot)
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

// slotCount is writer slot s's item count on m: the sum of its count
// line's words (header.FlagRecordCounts).
func slotCount(m *member, s int) int64 {
	var n int64
	for w := range header.CountWords {
		n += int64(atomic.LoadUint64(&m.counts[s*countStride+w]))
	}
	return n
}

// TestRecordCountWords: with header.FlagRecordCounts (every file Create
// and NewMemory make) a shared handle's goroutines count in the words of
// their records (header.CountWord), several of its line's words end up
// holding counts, and the item count is their sum; in a file without the
// flag (a 1.5 file) every record counts in the first word, and the other
// words, whatever they hold, do not count. Heap-backed, so that -race
// sees the plain stores of the records' own words.
func TestRecordCountWords(t *testing.T) {
	f, err := NewMemory(&Options{Capacity: 100_000, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const workers, per = 8, 2000
	run := func(op func(w, i int) error) {
		t.Helper()
		errs := make(chan error, workers)
		for w := range workers {
			go func() {
				for i := range per {
					if err := op(w, i); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range workers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
	key := func(w, i int) string { return fmt.Sprint(w, "/", i) }
	run(func(w, i int) error { return f.AddString(key(w, i), uint64(i)) })
	run(func(w, i int) error {
		if i%2 == 0 {
			return f.RemoveString(key(w, i), uint64(i))
		}
		return nil
	})
	m := f.chain.Load().f[0]
	if !m.recWords {
		t.Fatal("a new store's filter does not count in record words")
	}
	want := int64(workers * per / 2)
	if got := slotCount(m, f.slot); got != want {
		t.Fatalf("slot %d's count line sums to %d, want %d", f.slot, got, want)
	}
	if c := f.Stats().Count; c != uint64(want) {
		t.Fatalf("item count %d, want %d", c, want)
	}
	used := 0
	for w := range header.CountWords {
		if atomic.LoadUint64(&m.counts[f.slot*countStride+w]) != 0 {
			used++
		}
	}
	if used < 2 {
		t.Fatalf("%d word(s) of the count line hold counts: the records did not count in their own words", used)
	}

	// The same words read by the 1.5 rule and by the 1.6 rule.
	requireFiles(t)
	for _, recCounts := range []bool{false, true} {
		t.Run(fmt.Sprint("flag=", recCounts), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.dbl")
			g, err := Create(path, &Options{Capacity: 10_000, Seed: 9})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			if !recCounts {
				setMetaFlags(t, path, func(fl uint64) uint64 { return fl &^ header.FlagRecordCounts })
			}
			h, err := Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			for i := range 100 {
				if err := h.AddString(fmt.Sprint("k", i), uint64(i)); err != nil {
					t.Fatal(err)
				}
			}
			m := h.chain.Load().f[0]
			if m.recWords != recCounts {
				t.Fatalf("recWords %v in a file with the flag %v", m.recWords, recCounts)
			}
			line := m.counts[h.slot*countStride:][:header.CountWords]
			if !recCounts && (line[0] != 100 || slotCount(m, h.slot) != 100) {
				t.Fatalf("a 1.5 file's count line %v, want 100 in the first word alone", line)
			}
			// A word past the first: counted by the 1.6 rule alone.
			atomic.AddUint64(&line[3], 5)
			want := uint64(100)
			if recCounts {
				want = 105
			}
			if c := h.Stats().Count; c != want {
				t.Fatalf("item count %d with the fourth word raised by 5, want %d", c, want)
			}
		})
	}
}

// metaFlags returns the feature flags of the quiet file at path (its
// metadata copy A).
func metaFlags(t testing.TB, path string) uint64 {
	t.Helper()
	_, m := readMetaA(t, path)
	return m.Flags
}

// setMetaFlags rewrites both metadata copies of the quiet file at path
// with the flags fl returns, as an older version would have written them
// (a 1.5 file: FlagRecordCounts cleared).
func setMetaFlags(t testing.TB, path string, fl func(uint64) uint64) {
	t.Helper()
	b, m := readMetaA(t, path)
	m.Flags = fl(m.Flags)
	header.EncodeBoth(b, m)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readMetaA returns the bytes of the quiet file at path and its metadata
// copy A.
func readMetaA(t testing.TB, path string) ([]byte, *header.Meta) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b, metaA(t, b)
}

// metaA decodes metadata copy A of file image b.
func metaA(t testing.TB, b []byte) *header.Meta {
	t.Helper()
	m, err := header.Decode(b[header.MetaAOffset:header.MetaAOffset+header.MetaSize], header.MetaAOffset, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRecordFillsALine: a handle's records take a cache line each, so that
// goroutines claiming neighbouring records do not contend for one line,
// with 8-byte pointers and with 4-byte ones (GOARCH=386 runs this too).
func TestRecordFillsALine(t *testing.T) {
	if s := unsafe.Sizeof(record{}); s != 64 {
		t.Fatalf("a record is %d bytes, want 64", s)
	}
}
