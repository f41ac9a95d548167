package scaling

import (
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestMoveDoesNotWaitForAHolder: a handle whose file was replaced moves to
// the new one in move, which opens it while the handle's lookups wait for
// the move. If the new file is held — here by an exclusive handle, in the
// middle of a growth (the directory lists a filter not yet published) —
// Open must not wait for the holder: the holder's own goroutine may be one
// of those lookups, and would then wait for the mover's lock timeout (the
// whole-API stress test met this as 10 s lock timeouts). Checked: the code
// that finished the growth in Open whatever the lock held fails it (the
// lookup waits until the mover gives up).
func TestMoveDoesNotWaitForAHolder(t *testing.T) {
	requireFiles(t)
	path := filepath.Join(t.TempDir(), "m.dbl")
	o := &Options{Capacity: 1000, ErrorRate: 0.01}
	first, err := Create(path, o)
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	const timeout = 20 * time.Second
	s, err := Open(path, &OpenOptions{LockTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Replace the file: s moves at its next operation.
	ow := *o
	ow.Overwrite = true
	repl, err := Create(path, &ow)
	if err != nil {
		t.Fatal(err)
	}
	repl.Close()
	x, err := Open(path, &OpenOptions{Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	keys, ids := batchKeys("m", 1100) // two filters
	if err := x.AddBatch(keys, ids); err != nil {
		t.Fatal(err)
	}
	if n := atomic.LoadUint64(x.published); n != 2 {
		t.Fatalf("%d filters published, want 2", n)
	}
	// The holder's growth in progress: listed, not yet published.
	atomic.AddUint64(x.published, ^uint64(0))

	// Another goroutine of s writes: it moves s (and then waits for the
	// exclusive handle, as every other writer does).
	added := make(chan error, 1)
	go func() { added <- s.Add([]byte("moved"), 5000) }()
	deadline := time.Now().Add(10 * time.Second)
	for s.succ.next.Load() == nil {
		if s.succ.mu.TryLock() {
			s.succ.mu.Unlock()
		} else {
			break // the writer is moving s
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer did not start moving the handle")
		}
		time.Sleep(time.Millisecond)
	}

	// The holder's goroutine looks a key up through s.
	found := make(chan bool, 1)
	go func() { found <- s.Contains(keys[0]) }()
	select {
	case ok := <-found:
		if !ok {
			t.Fatal("a key the exclusive handle added is absent through the moved handle")
		}
	case <-time.After(timeout / 2):
		t.Fatalf("a lookup waited over %v for a move that waits for the exclusive handle (held by the lookup's own goroutine)", timeout/2)
	}
	select {
	case err := <-added:
		t.Fatalf("the writer's Add returned (%v) while the exclusive handle was open", err)
	default:
	}
	atomic.AddUint64(x.published, 1) // the growth ends
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-added; err != nil {
		t.Fatalf("the writer's Add after the exclusive handle closed: %v", err)
	}
	if !s.Contains([]byte("moved")) || !s.Contains(keys[len(keys)-1]) {
		t.Fatal("the moved handle misses a key")
	}
}
