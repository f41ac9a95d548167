package scaling

import (
	"encoding/binary"
	"errors"
	"os"
	"sync/atomic"
	"testing"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/mmapfile"
	"github.com/dablooms/dablooms/seqnum"
)

// cutShortRetirement makes a file of 5 filters (keys 0..499, 100 a
// filter) whose last Add is not flushed, and raises the hot retired word
// to 2 under its handle: what a RetireBefore of another process that died
// between the word and the directory leaves (it marked the file dirty
// first).
func cutShortRetirement(t *testing.T, k *testknobs.Knobs) (*Filter, string) {
	t.Helper()
	o := &Options{Capacity: 100, GrowthFactor: 1}
	if k != nil {
		testknobs.Set(o, k)
	}
	f, path := newStore(t, inFile, o)
	addKeys(t, f, 0, 499)
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	addKeys(t, f, 499, 500)
	if n := len(f.Stats().Filters); n != 5 {
		t.Fatalf("fixture: %d filters", n)
	}
	atomic.StoreUint64(f.retired, 2)
	return f, path
}

// TestFlushFinishesRetirement (issue 38 item 2): a Flush over a
// retirement cut short finishes it before it marks the file clean, so a
// clean file never holds a hot retired word ahead of its directory, and
// Open of a clean file can refuse one as damage. The negative control
// (testknobs FlushSkipsRetirement, the flush of a library before) marks
// the file clean over it: Open then refuses the file.
func TestFlushFinishesRetirement(t *testing.T) {
	t.Run("finished", func(t *testing.T) {
		f, path := cutShortRetirement(t, nil)
		if err := f.Flush(); err != nil {
			t.Fatal(err)
		}
		if _, ph := f.words.Phase(); ph != seqnum.Clean {
			t.Fatalf("phase %v after the flush", ph)
		}
		if m := readMetaOf(t, path); m.Retired != 2 || len(m.Filters) != 3 || m.Flags&header.FlagRing == 0 {
			t.Fatalf("directory after the flush: %d retired, %d filters, flags %#x; want 2, 3, ring", m.Retired, len(m.Filters), m.Flags)
		}
		f.Close()
		g, err := Open(path, &OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatalf("the flushed file does not open: %v", err)
		}
		defer g.Close()
		for i := 200; i < 500; i++ {
			if !g.Contains(kKey(i)) {
				t.Fatalf("key %d of a filter kept is lost", i)
			}
		}
	})
	t.Run("negative control", func(t *testing.T) {
		f, path := cutShortRetirement(t, &testknobs.Knobs{FlushSkipsRetirement: true})
		if err := f.Flush(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if m := readMetaOf(t, path); m.Retired != 0 {
			t.Fatalf("the control finished the retirement: %d retired", m.Retired)
		}
		_, err := Open(path, &OpenOptions{ReadOnly: true})
		var ce *header.CorruptionError
		if !errors.As(err, &ce) || ce.Offset != header.RetiredOffset {
			t.Fatalf("Open of a clean file with the word ahead: %v, want a CorruptionError at %d", err, header.RetiredOffset)
		}
	})
	t.Run("lock busy", func(t *testing.T) {
		// Another descriptor holds the growth lock shared (as a flusher
		// waiting for the flush lock does): the flush cannot take it
		// exclusively, so it leaves the file dirty, not clean.
		f, path := cutShortRetirement(t, nil)
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if err := mmapfile.LockFile(fh, header.GrowthLockOffset, false, 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Flush(); err != nil {
			t.Fatal(err)
		}
		if _, ph := f.words.Phase(); ph == seqnum.Clean {
			t.Fatal("the flush marked the file clean over a retirement it could not finish")
		}
		mmapfile.UnlockFile(fh, header.GrowthLockOffset)
		if err := f.Flush(); err != nil {
			t.Fatal(err)
		}
		if _, ph := f.words.Phase(); ph != seqnum.Clean || readMetaOf(t, path).Retired != 2 {
			t.Fatalf("the next flush: phase %v, %d retired", ph, readMetaOf(t, path).Retired)
		}
	})
}

// TestOpenRefusesRetiredWordWhenClean (issue 38 item 2): one bit of the
// hot page, the retired word raised in a clean closed file, made every
// process skip filter 0 and a read-write Open retire it for good. Open,
// read-only or read-write, now refuses the file with a CorruptionError at
// the word, and leaves it as it was.
func TestOpenRefusesRetiredWordWhenClean(t *testing.T) {
	f, path := newStore(t, inFile, &Options{Capacity: 100, GrowthFactor: 1})
	addKeys(t, f, 0, 300)
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b := mustRead(t, path)
	binary.LittleEndian.PutUint64(b[header.RetiredOffset:], 1)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{true, false} {
		_, err := Open(path, &OpenOptions{ReadOnly: ro})
		var ce *header.CorruptionError
		if !errors.As(err, &ce) || ce.Offset != header.RetiredOffset || !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open (read-only %v): %v, want a CorruptionError at %d", ro, err, header.RetiredOffset)
		}
	}
	if m := readMetaOf(t, path); m.Retired != 0 || string(mustRead(t, path)) != string(b) {
		t.Fatal("a refused Open changed the file")
	}
}
