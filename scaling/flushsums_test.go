package scaling

import (
	"path/filepath"
	"testing"
	"time"
)

// TestFlushSumsWaitForGrowth: a Flush takes its page checksums only while
// no growth or retirement holds the growth lock, since those place filters
// in released space and release retired filters' blocks (a checksum stored
// into a hole would allocate it again or fault on a full disk, one stored
// into reused space would clobber the new filter's). Here another handle
// holds the growth lock: the Flush must not finish until it lets go.
// Checked: a Flush that took its checksums under the flush lock alone
// finished at once.
func TestFlushSumsWaitForGrowth(t *testing.T) {
	requireFiles(t)
	path := filepath.Join(t.TempDir(), "s.dbl")
	f, err := Create(path, &Options{Capacity: 1000, ErrorRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := Open(path, &OpenOptions{LockTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := f.Add([]byte("k"), 1); err != nil {
		t.Fatal(err)
	}
	unlock, err := g.lockGrowth()
	if err != nil {
		t.Fatal(err)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- f.Flush() }()
	select {
	case err := <-flushed:
		unlock()
		t.Fatalf("Flush finished (%v) while another handle held the growth lock", err)
	case <-time.After(300 * time.Millisecond):
	}
	unlock()
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if f.Condition() != Clean {
		t.Fatal("the file is not clean after the Flush")
	}
}
