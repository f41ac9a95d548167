package scaling

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/mmapfile"
)

// TestLookupsSurviveReplacement: a lookup that read its chain before the
// file was replaced, and reads the counters after another goroutine of the
// same handle moved it and the old mapping was detached, reads zero pages.
// Its "absent" must not stand: the detached mark says so, and Contains
// asks again on the successor. Negative control: without the mark
// (SkipDetachedMark) the answer read from zeros would stand, a false
// negative for a key whose Add returned (issue 27, item 1).
func TestLookupsSurviveReplacement(t *testing.T) {
	for _, control := range []bool{false, true} {
		t.Run(fmt.Sprintf("control=%v", control), func(t *testing.T) {
			w, path := createFile(t, &Options{Capacity: 5000, Seed: 1})
			key := replKey(0, 7)
			for i := range 1000 {
				if err := w.Add(replKey(0, i), uint64(i)); err != nil {
					t.Fatal(err)
				}
			}
			r := openFile(t, path, &OpenOptions{ReadOnly: true, knobs: &testknobs.Knobs{SkipDetachedMark: control}})
			c, err := r.current() // the chain a lookup in flight holds
			if err != nil {
				t.Fatal(err)
			}
			h := r.hash(c, key)
			if !containsIn(c, h) || !c.keep.answered() {
				t.Fatal("before the replacement the key is not found on the handle's chain")
			}
			replaceWithKeys(t, path, 1000)
			// Another goroutine's lookup meets the replacement: the handle
			// moves, and its old mapping is detached in the background.
			if !r.Contains(key) {
				t.Fatal("the moved handle does not find the key in the new file")
			}
			deadline := time.Now().Add(10 * time.Second)
			for containsIn(c, h) {
				if time.Now().After(deadline) {
					t.Fatal("the old mapping was not detached within 10s")
				}
				time.Sleep(time.Millisecond)
			}
			// The lookup in flight now reads zeros: "absent".
			stands := c.keep.answered()
			if control {
				if !stands {
					t.Fatal("negative control: the unmarked detach was seen anyway")
				}
				return
			}
			if stands {
				t.Fatal(`an "absent" read from the detached mapping stands: a false negative`)
			}
			if !r.Contains(key) {
				t.Fatal("Contains after the detach does not find the key")
			}
		})
	}
}

// replaceWithKeys replaces the file at path as a live rewrite does
// (Freeze, a new file made aside, renamed over the path, Done), the new
// file holding keys replKey(0, 0…n-1).
func replaceWithKeys(t testing.TB, path string, n int) {
	fz, err := Freeze(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(path), "next.dbl")
	nf, err := Create(tmp, &Options{Capacity: 5000, Seed: 2, Overwrite: true})
	if err != nil {
		fz.Abort()
		t.Fatal(err)
	}
	for i := range n {
		if err := nf.Add(replKey(0, i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := nf.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := nf.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if err := fz.Done(); err != nil {
		t.Fatal(err)
	}
}

// TestSharedHandleLookupsDuringRewrites: goroutines sharing one handle
// look keys up with Contains and ContainsBatch while the file is replaced
// again and again, each new file holding every key: no lookup may answer
// false. (Before the detached mark, ContainsBatch lost thousands of keys
// in a second of this and Contains a few: issue 27, item 1.)
func TestSharedHandleLookupsDuringRewrites(t *testing.T) {
	const n = 1000
	rounds := 60
	if testing.Short() {
		rounds = 20
	}
	w, path := createFile(t, &Options{Capacity: 5000, Seed: 1})
	keys := make([][]byte, n)
	for i := range n {
		keys[i] = replKey(0, i)
		if err := w.Add(keys[i], uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := openFile(t, path, &OpenOptions{ReadOnly: true})
	var stop atomic.Bool
	var misses, lookups atomic.Int64
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make([]bool, n)
			for !stop.Load() {
				if g%2 == 0 {
					r.ContainsBatch(keys, out)
					for _, v := range out {
						if !v {
							misses.Add(1)
						}
					}
					lookups.Add(n)
					continue
				}
				for _, k := range keys {
					if !r.Contains(k) {
						misses.Add(1)
					}
				}
				lookups.Add(n)
			}
		}()
	}
	for range rounds {
		replaceWithKeys(t, path, n)
	}
	stop.Store(true)
	wg.Wait()
	if m := misses.Load(); m != 0 {
		t.Fatalf("%d of %d lookups answered false for a key every file held", m, lookups.Load())
	}
}

// TestMoveFollowsAnInterruptedSuccessor: a handle whose file was replaced
// follows the new file even when a writer died there first (another
// process moved, began an operation and was killed before this handle
// moved). A handle goes on with its own file when a writer dies beside it;
// the file that replaced it is no different. (Before, every operation of
// the handle failed with "the handle cannot follow … file is
// interrupted".)
func TestMoveFollowsAnInterruptedSuccessor(t *testing.T) {
	w, path := createFile(t, &Options{Capacity: 5000, Seed: 1})
	if err := w.Add(replKey(0, 1), 1); err != nil {
		t.Fatal(err)
	}
	fz, err := Freeze(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(path), "next.dbl")
	nf, err := Create(tmp, &Options{Capacity: 5000, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := nf.Add(replKey(0, 1), 1); err != nil {
		t.Fatal(err)
	}
	nf.Close()
	// A dead writer in slot 9 with an Add in flight.
	b, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	rec := header.RecordOffset(9, 0)
	binary.LittleEndian.PutUint64(b[header.SlotOffset(9)+header.SlotOwnerOffset:], 0x1234)
	binary.LittleEndian.PutUint64(b[rec+header.RecOpOffset:], uint64(header.OpWord(0).Begin(header.OpAdd, 1)))
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if g, err := Open(tmp, nil); err == nil {
		g.Close()
		t.Fatal("setup: the new file opens as clean")
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if err := fz.Done(); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(replKey(0, 2), 2); err != nil {
		t.Fatalf("Add on the handle after the replacement: %v", err)
	}
	if p := w.Params(); p.Seed != 2 {
		t.Fatalf("the handle did not move: seed %d", p.Seed)
	}
}

// TestLookupsDoNotWaitForAFlushLock: a Flush waiting for the flush lock
// (another process's flush, or an exclusive writer's) must not hold up
// the lookups of its handle that need the chain refreshed. Before, the
// waiting Flush held the handle's mutex, and a Contains after another
// handle's growth waited for the whole lock timeout: in the whole-API
// stress test, an exclusive writer's goroutine then waited for the Flush
// that was waiting for it, and every writer timed out.
func TestLookupsDoNotWaitForAFlushLock(t *testing.T) {
	w, path := createFile(t, &Options{Capacity: 100, Seed: 1})
	h := openFile(t, path, &OpenOptions{LockTimeout: 3 * time.Second})
	h.Contains(replKey(0, 0)) // h holds the one-filter chain
	for i := range 400 {      // grows the chain: h's is stale
		if err := w.Add(replKey(0, i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	holder, err := mmapfile.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := holder.Lock(header.FlushLockOffset, true, 0); err != nil {
		t.Fatal(err)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- h.Flush() }()
	// The Flush must be waiting for the lock before the lookup, or the
	// test proves nothing: its goroutine is seen inside the lock's wait.
	waitForStack(t, "(*Filter).flush", "mmapfile.lockFD")
	if !h.Contains(replKey(0, 399)) {
		t.Fatal("a key of the grown chain is not found")
	}
	select {
	case err := <-flushed:
		t.Fatalf("Contains returned only after the Flush waiting for the lock gave up (%v)", err)
	default:
	}
	holder.Unlock(header.FlushLockOffset)
	if err := <-flushed; err != nil {
		t.Fatalf("Flush once the lock is free: %v", err)
	}
}

// waitForStack waits (at most 10 s) until one goroutine's stack holds
// every one of frames.
func waitForStack(t *testing.T, frames ...string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			all := true
			for _, f := range frames {
				all = all && strings.Contains(g, f)
			}
			if all {
				return
			}
		}
	}
	t.Fatalf("no goroutine reached %q in 10 s", frames)
}
