package recover_test

import (
	"errors"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/internal/failpoint"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
)

// switchable returns a failpoint that fails with err while armed, and
// counts its calls.
type switchable struct {
	armed   atomic.Bool
	failOn  atomic.Int64 // when > 0: fail only the call with this number (from 1)
	calls   atomic.Int64
	failErr error
}

func (s *switchable) fn() error {
	n := s.calls.Add(1)
	if s.armed.Load() && (s.failOn.Load() == 0 || s.failOn.Load() == n) {
		return s.failErr
	}
	return nil
}

// fpOptions are the options of a handle whose file fails as fp says.
func fpOptions(fp *failpoint.Points) *scaling.OpenOptions {
	o := &scaling.OpenOptions{}
	testknobs.Set(o, &testknobs.Knobs{Failpoints: fp, BootID: recover.TestBoot})
	return o
}

func openFP(t *testing.T, path string, fp *failpoint.Points) *scaling.Filter {
	t.Helper()
	f, err := scaling.Open(path, fpOptions(fp))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFailpointGrowth: fallocate fails when the chain grows; Add returns the
// error, and the file stays valid and opens; once the disk has room, Add
// grows the chain.
func TestFailpointGrowth(t *testing.T) {
	path := recover.NewFile(t, 100, counting4.Classic, 100) // the first filter is full
	sw := &switchable{failErr: syscall.ENOSPC}
	sw.armed.Store(true)
	f := openFP(t, path, &failpoint.Points{Fallocate: sw.fn})
	err := f.Add(recover.Key(101), 101)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Add when growth fails: %v, want ENOSPC", err)
	}
	if n := len(f.Stats().Filters); n != 1 {
		t.Fatalf("%d filters after a failed growth", n)
	}
	if r := recover.VerifyT(t, path); r.State > recover.Unflushed {
		recover.DumpReport(t, r)
		t.Fatalf("after a failed growth: %s", r.State)
	}
	sw.armed.Store(false)
	if err := f.Add(recover.Key(101), 101); err != nil {
		t.Fatalf("Add once the disk has room: %v", err)
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r := recover.VerifyT(t, path)
	if r.State != recover.Clean || len(r.Filters) != 2 {
		t.Fatalf("after growth: %s with %d filters", r.State, len(r.Filters))
	}
}

// TestFailpointFlushSync: a failed msync or fsync during Flush is returned,
// the handle does not claim the file clean (DiskSeqnum stays 0), and a later
// Flush of the same handle does not turn the failure into a success.
func TestFailpointFlushSync(t *testing.T) {
	for _, which := range []string{"msync", "fsync"} {
		t.Run(which, func(t *testing.T) {
			path := recover.NewFile(t, 1000, counting4.Classic, 10)
			sw := &switchable{failErr: syscall.EIO}
			fp := &failpoint.Points{}
			if which == "msync" {
				fp.Msync = sw.fn
			} else {
				fp.Fsync = sw.fn
			}
			f := openFP(t, path, fp)
			defer f.Close()
			if err := f.Add(recover.Key(11), 11); err != nil {
				t.Fatal(err)
			}
			sw.armed.Store(true)
			if err := f.Flush(); !errors.Is(err, syscall.EIO) {
				t.Fatalf("Flush: %v, want EIO", err)
			}
			if d := f.DiskSeqnum(); d != 0 {
				t.Fatalf("DiskSeqnum %d after a failed Flush", d)
			}
			sw.armed.Store(false)
			if err := f.Flush(); !errors.Is(err, scaling.ErrSyncFailed) {
				t.Fatalf("Flush after a failed sync: %v, want ErrSyncFailed", err)
			}
			if d := f.DiskSeqnum(); d != 0 {
				t.Fatalf("DiskSeqnum %d after a failed Flush", d)
			}
			if r := recover.VerifyT(t, path); r.State == recover.Clean {
				t.Fatal("Verify says clean after a failed Flush")
			}
		})
	}
}

// TestFailpointFlushCleanRecord: the sync that records the clean state (the
// second of a Flush) fails. The data was made durable, but the clean state
// was not: the handle must not claim disk_seqnum.
func TestFailpointFlushCleanRecord(t *testing.T) {
	path := recover.NewFile(t, 1000, counting4.Classic, 10)
	sw := &switchable{failErr: syscall.EIO}
	f := openFP(t, path, &failpoint.Points{Msync: sw.fn})
	defer f.Close()
	if err := f.Add(recover.Key(11), 11); err != nil {
		t.Fatal(err)
	}
	sw.failOn.Store(sw.calls.Load() + 2) // the Flush's second msync
	sw.armed.Store(true)
	err := f.Flush()
	if err == nil {
		t.Fatal("Flush succeeded although its last sync failed")
	}
	if d := f.DiskSeqnum(); d != 0 {
		t.Fatalf("Flush must withdraw the clean state when the sync recording it fails: DiskSeqnum is %d after %v", d, err)
	}
}

// TestFailpointMarkDirty: the sync that makes the dirty mark durable fails:
// Add returns the error without changing the counters, and the handle no
// longer flushes.
func TestFailpointMarkDirty(t *testing.T) {
	path := recover.NewFile(t, 1000, counting4.Classic, 10)
	before := recover.VerifyT(t, path)
	sw := &switchable{failErr: syscall.EIO}
	sw.armed.Store(true)
	f := openFP(t, path, &failpoint.Points{Msync: sw.fn})
	defer f.Close()
	if err := f.Add(recover.Key(11), 11); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Add when the dirty mark cannot be synced: %v", err)
	}
	r := recover.VerifyT(t, path)
	if r.Filters[0].CounterSum != before.Filters[0].CounterSum || r.Filters[0].Items != before.Filters[0].Items {
		t.Fatal("a failed Add changed the counters")
	}
	if r.State == recover.Clean {
		t.Fatal("the file claims clean while a dirty mark is half made")
	}
	sw.armed.Store(false)
	if err := f.Flush(); !errors.Is(err, scaling.ErrSyncFailed) {
		t.Fatalf("Flush after a failed sync: %v, want ErrSyncFailed", err)
	}
}

// TestFailpointMmap: Open fails cleanly when the mapping fails.
func TestFailpointMmap(t *testing.T) {
	path := recover.NewFile(t, 1000, counting4.Classic, 10)
	sum := recover.Sum256(t, path)
	_, err := scaling.Open(path, fpOptions(&failpoint.Points{Mmap: func() error { return syscall.ENOMEM }}))
	if !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("Open: %v, want ENOMEM", err)
	}
	if recover.Sum256(t, path) != sum {
		t.Fatal("a failed Open changed the file")
	}
}
