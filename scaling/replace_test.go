package scaling

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/mmapfile"
)

// clearLiveReplace rewrites both metadata copies of the closed file at path
// without FlagLiveReplace, as version 1.2 wrote them.
func clearLiveReplace(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range []int{header.MetaAOffset, header.MetaBOffset} {
		m := b[base : base+header.MetaSize]
		flags := binary.LittleEndian.Uint64(m[16:])
		binary.LittleEndian.PutUint64(m[16:], flags&^header.FlagLiveReplace)
		binary.LittleEndian.PutUint16(m[10:], 2) // minor version 2
		binary.LittleEndian.PutUint32(m[header.MetaSize-4:], crc32.Checksum(m[:header.MetaSize-4], crc32.MakeTable(crc32.Castagnoli)))
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// replKey is key i of generation g of a replaced file.
func replKey(g, i int) []byte { return []byte(fmt.Sprintf("gen%d-%06d", g, i)) }

// oldOpenLockReleased waits until no handle holds the open lock of the file
// old (a descriptor kept on the replaced file): the handles that moved have
// let go of it.
func oldOpenLockReleased(t *testing.T, old *os.File) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		held, err := mmapfile.HeldFile(old, header.OpenLockOffset)
		if err != nil {
			t.Fatal(err)
		}
		if !held {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a handle still holds the replaced file open 10 s after the replacement")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOverwriteMovesOpenHandles: Create with Overwrite replaces a file
// that a writer and a reader have open; both move to the new file: the
// reader no longer sees the old keys and sees the new file's, the writer's
// Adds land in the new file, and neither keeps the old file open.
// Negative control: with the replaced word unwatched (SkipReplaceCheck),
// the reader keeps answering from the old copy and the check fails.
func TestOverwriteMovesOpenHandles(t *testing.T) {
	for _, control := range []bool{false, true} {
		t.Run(fmt.Sprintf("control=%v", control), func(t *testing.T) {
			stale := overwriteWhileOpen(t, control)
			if control && stale == 0 {
				t.Fatal("negative control: the unwatched reader did not answer from the old file")
			}
			if !control && stale != 0 {
				t.Fatalf("%d answers came from the replaced file", stale)
			}
		})
	}
}

// overwriteWhileOpen returns how many checks found a handle answering from
// the replaced file.
func overwriteWhileOpen(t *testing.T, control bool) (stale int) {
	k := &testknobs.Knobs{SkipReplaceCheck: control}
	w, path := createFile(t, &Options{Capacity: 5000, Seed: 1, knobs: k})
	for i := range 2000 {
		if err := w.Add(replKey(0, i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	r := openFile(t, path, &OpenOptions{ReadOnly: true, knobs: k})
	old, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()

	nf, err := Create(path, &Options{Capacity: 5000, Seed: 2, Overwrite: true})
	if err != nil {
		t.Fatalf("Create(Overwrite) with a writer and a reader open: %v", err)
	}
	defer nf.Close()
	for i := range 2000 {
		if err := nf.Add(replKey(1, i), uint64(i)); err != nil {
			t.Fatal(err)
		}
		if err := w.Add(replKey(2, i), uint64(i)); err != nil {
			t.Fatalf("Add on the moved writer: %v", err)
		}
	}
	for i := range 2000 {
		for _, h := range []*Filter{r, w, nf} {
			if !h.Contains(replKey(1, i)) || !h.Contains(replKey(2, i)) {
				stale++
			}
		}
	}
	oldKeys := 0
	for i := range 2000 {
		if r.Contains(replKey(0, i)) {
			oldKeys++
		}
	}
	if oldKeys > 100 { // false positives of the new file only
		stale++
	}
	if control {
		return stale
	}
	if p := r.Params(); p.Seed != 2 {
		t.Fatalf("the moved reader reports seed %d, want the new file's 2", p.Seed)
	}
	r.Close()
	w.Close()
	oldOpenLockReleased(t, old)
	return stale
}

// TestFreezeHoldsWriters: while Freeze holds a file, an Add waits (and
// lookups go on); after Done it lands in the file then at the path; after
// Abort, in the same file.
func TestFreezeHoldsWriters(t *testing.T) {
	for _, done := range []bool{true, false} {
		t.Run(fmt.Sprintf("done=%v", done), func(t *testing.T) {
			w, path := createFile(t, &Options{Capacity: 5000, Seed: 1})
			if err := w.Add(replKey(0, 0), 0); err != nil {
				t.Fatal(err)
			}
			fz, err := Freeze(path, 0)
			if err != nil {
				t.Fatal(err)
			}
			var added atomic.Bool
			var addErr error
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				addErr = w.Add(replKey(0, 1), 1)
				added.Store(true)
			}()
			time.Sleep(100 * time.Millisecond)
			if added.Load() {
				t.Fatalf("an Add returned (%v) while the file was frozen", addErr)
			}
			if !w.Contains(replKey(0, 0)) {
				t.Fatal("a lookup on the frozen file misses its key")
			}
			if done {
				nf, err := Create(path+".next", &Options{Capacity: 5000, Seed: 2})
				if err != nil {
					t.Fatal(err)
				}
				nf.Close()
				if err := os.Rename(path+".next", path); err != nil {
					t.Fatal(err)
				}
				fz.Done()
			} else {
				fz.Abort()
			}
			wg.Wait()
			if addErr != nil {
				t.Fatalf("the Add held by the freeze: %v", addErr)
			}
			r := openFile(t, path, &OpenOptions{ReadOnly: true})
			if !r.Contains(replKey(0, 1)) {
				t.Fatal("the Add held by the freeze is not in the file at the path")
			}
			if got := r.Contains(replKey(0, 0)); got == done {
				t.Fatalf("key 0 present in the file at the path: %v (replaced: %v)", got, done)
			}
		})
	}
}

// TestFreezeDiedIsThawed: a rewrite that dies with the file frozen (its
// process gone, so nobody holds the growth lock) does not stop the writers:
// the first one that finds the word clears it.
func TestFreezeDiedIsThawed(t *testing.T) {
	w, path := createFile(t, &Options{Capacity: 5000, Seed: 1})
	fz, err := Freeze(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Dies: the lock goes with the descriptor, the word stays.
	fz.f.file.Close()
	if err := w.Add(replKey(0, 1), 1); err != nil {
		t.Fatalf("Add after the rewrite died: %v", err)
	}
	if v := atomic.LoadUint64(w.replaced); v != header.ReplaceNone {
		t.Fatalf("replaced word %d after the thaw", v)
	}
}

// TestFreezeRefusesOldFile: a file without FlagLiveReplace is not frozen
// (its handles would not notice): ErrNotLive, and nothing changed.
func TestFreezeRefusesOldFile(t *testing.T) {
	w, path := createFile(t, &Options{Seed: 1})
	w.Close()
	clearLiveReplace(t, path)
	if _, err := Freeze(path, 0); !errors.Is(err, ErrNotLive) {
		t.Fatalf("Freeze of a 1.2 file = %v, want ErrNotLive", err)
	}
	f := openFile(t, path, nil)
	if err := f.Add([]byte("k"), 1); err != nil {
		t.Fatal(err)
	}
}

// TestReplacedMarkAtPathIsCorrupt: a file marked replaced that is still at
// its path (no rewrite leaves that) is refused, not reopened for ever.
func TestReplacedMarkAtPathIsCorrupt(t *testing.T) {
	w, path := createFile(t, &Options{Seed: 1})
	atomic.StoreUint64(w.replaced, header.ReplaceDone)
	w.Close()
	var ce *CorruptionError
	if _, err := Open(path, nil); !errors.As(err, &ce) || ce.Field != "replaced" {
		t.Fatalf("Open = %v, want a CorruptionError on the replaced word", err)
	}
}

// TestFreezeHoldsRemoves: a Remove that finds the file frozen waits and
// removes the key once the rewrite gives up; it does not report the key
// absent (the key's filter is not gone, only frozen). One filter's range
// holds the id: the path that claims the record before the presence test.
func TestFreezeHoldsRemoves(t *testing.T) {
	w, path := createFile(t, &Options{Capacity: 5000, Seed: 1})
	for i := range 10 {
		if err := w.Add(replKey(0, i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	fz, err := Freeze(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	go func() { errs <- w.Remove(replKey(0, 3), 3) }()
	select {
	case err := <-errs:
		fz.Abort()
		t.Fatalf("a Remove returned (%v) while the file was frozen", err)
	case <-time.After(100 * time.Millisecond):
	}
	fz.Abort()
	if err := <-errs; err != nil {
		t.Fatalf("the Remove held by the freeze: %v", err)
	}
	if w.Contains(replKey(0, 3)) {
		t.Fatal("the key is still there after its Remove")
	}
}
