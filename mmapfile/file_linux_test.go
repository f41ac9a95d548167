package mmapfile

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dablooms/dablooms/internal/failpoint"
	"golang.org/x/sys/unix"
)

const testReserve = 1 << 20

func tmpPath(t *testing.T) string { return filepath.Join(t.TempDir(), "f.dablooms") }

func mustCreate(t *testing.T, path string, size int64, o *Options) *File {
	t.Helper()
	f, err := Create(path, size, o)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Publish(); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	return f
}

func mustOpen(t *testing.T, path string, o *Options) *File {
	t.Helper()
	f, err := Open(path, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestCreate(t *testing.T) {
	path := tmpPath(t)
	var fsyncs atomic.Int32
	fp := &failpoint.Points{Fsync: func() error { fsyncs.Add(1); return nil }}
	const size = 5 * 4096
	f := mustCreate(t, path, size, &Options{Reserve: testReserve, failpoints: fp})
	if fsyncs.Load() < 1 {
		t.Fatal("Create did not fsync the file")
	}
	if f.Size() != size || f.Path() != path || f.ReadOnly() {
		t.Fatalf("Size %d Path %q ReadOnly %v", f.Size(), f.Path(), f.ReadOnly())
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != size {
		t.Fatalf("file has %d bytes, want %d", st.Size, size)
	}
	if st.Blocks*512 < size {
		t.Fatalf("only %d bytes allocated of %d: the file is sparse (a full disk would SIGBUS later)", st.Blocks*512, size)
	}
	if st.Mode&0o777 != 0o644 {
		t.Errorf("mode %o, want 644", st.Mode&0o777)
	}
	b, err := f.Bytes(0, size)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range b {
		if c != 0 {
			t.Fatalf("byte %d of a new file = %d", i, c)
		}
	}
	// Writes through the mapping reach the file.
	copy(b[100:], "hello")
	if err := f.Sync(0, size); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil || string(raw[100:105]) != "hello" {
		t.Fatalf("file content %q, %v", raw[100:105], err)
	}
}

func TestCreateRefusesExisting(t *testing.T) {
	path := tmpPath(t)
	if err := os.WriteFile(path, []byte("precious data"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path, 4096, nil)
	if !errors.Is(err, ErrExists) || f != nil {
		t.Fatalf("Create over an existing file = %v, %v; want ErrExists", f, err)
	}
	if raw, _ := os.ReadFile(path); string(raw) != "precious data" {
		t.Fatalf("existing file changed to %q", raw)
	}
	f = mustCreate(t, path, 8192, &Options{Overwrite: true, Reserve: testReserve})
	if f.Size() != 8192 {
		t.Fatalf("Size %d", f.Size())
	}
	raw, _ := os.ReadFile(path)
	if len(raw) != 8192 || raw[0] != 0 {
		t.Fatalf("overwritten file: %d bytes, first %d", len(raw), raw[0])
	}
}

// Create makes the file aside: nothing is at the path until Publish, a
// Close before it leaves the path as it was, and an overwrite is refused
// while a handle holds the old file's open lock (issue 11 item 12: create
// --force truncated a file other processes had open).
func TestCreateAsideAndPublish(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	f, err := Create(path, 4096, &Options{Reserve: testReserve, OpenLock: 100})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("before Publish the path exists: %v", err)
	}
	b, _ := f.Bytes(0, 4)
	copy(b, "made")
	if err := f.Publish(); err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(path); string(raw[:4]) != "made" {
		t.Fatalf("published file holds %q", raw[:4])
	}
	f.Close()
	// A reader holds the open lock: an overwrite is refused, the file kept.
	r, err := Open(path, &Options{ReadOnly: true, Reserve: testReserve, OpenLock: 100})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Create(path, 8192, &Options{Overwrite: true, OpenLock: 100}); !errors.Is(err, ErrBusy) {
		t.Fatalf("overwrite of an open file = %v, want ErrBusy", err)
	}
	if raw, _ := os.ReadFile(path); len(raw) != 4096 || string(raw[:4]) != "made" {
		t.Fatalf("refused overwrite changed the file: %d bytes", len(raw))
	}
	r.Close()
	// Unpublished: Close leaves nothing behind and the old file whole.
	g, err := Create(path, 8192, &Options{Overwrite: true, OpenLock: 100})
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	if raw, _ := os.ReadFile(path); len(raw) != 4096 || string(raw[:4]) != "made" {
		t.Fatalf("unpublished overwrite changed the file: %d bytes", len(raw))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("directory holds %d entries, want only the file", len(ents))
	}
	// An Open that waited while the file was replaced opens the new one.
	h, err := Create(path, 8192, &Options{Overwrite: true, OpenLock: 100, Reserve: testReserve})
	if err != nil {
		t.Fatal(err)
	}
	opened := make(chan *File)
	go func() {
		o, err := Open(path, &Options{ReadOnly: true, Reserve: testReserve, OpenLock: 100, LockTimeout: 10 * time.Second})
		if err != nil {
			t.Error(err)
		}
		opened <- o
	}()
	time.Sleep(50 * time.Millisecond)
	if err := h.Publish(); err != nil {
		t.Fatal(err)
	}
	o := <-opened
	if o == nil || o.Size() != 8192 {
		t.Fatalf("Open during the replacement got the old file")
	}
	o.Close()
	h.Close()
}

func TestCreateMissingDirectory(t *testing.T) {
	if _, err := Create(filepath.Join(t.TempDir(), "no", "such", "dir", "f"), 4096, nil); err == nil {
		t.Fatal("Create in a missing directory succeeded")
	}
}

func TestOpen(t *testing.T) {
	path := tmpPath(t)
	w := mustCreate(t, path, 3*4096, &Options{Reserve: testReserve})
	b, _ := w.Bytes(0, 10)
	copy(b, "0123456789")
	f := mustOpen(t, path, &Options{Reserve: testReserve})
	if f.Size() != 3*4096 {
		t.Fatalf("Size %d", f.Size())
	}
	b2, err := f.Bytes(0, 10)
	if err != nil || string(b2) != "0123456789" {
		t.Fatalf("second mapping sees %q, %v", b2, err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open of a missing file: %v", err)
	}
	if _, err := Open(t.TempDir(), nil); err == nil {
		t.Fatal("Open of a directory succeeded")
	}
}

func TestReadOnly(t *testing.T) {
	path := tmpPath(t)
	mustCreate(t, path, 4096, &Options{Reserve: testReserve})
	f := mustOpen(t, path, &Options{ReadOnly: true, Reserve: testReserve})
	if !f.ReadOnly() {
		t.Fatal("ReadOnly() false")
	}
	if err := f.Grow(8192); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Grow = %v, want ErrReadOnly", err)
	}
	if err := f.Sync(0, 4096); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Sync = %v, want ErrReadOnly", err)
	}
	if f.Size() != 4096 {
		t.Fatal("read-only Grow changed the size")
	}
	// The mapping itself refuses writes: a write faults (caught by Guard).
	b, err := f.Bytes(0, 4096)
	if err != nil {
		t.Fatal(err)
	}
	err = Guard(func() error { b[0] = 1; return nil })
	if !errors.Is(err, ErrFault) {
		t.Fatalf("write to a read-only mapping: %v, want ErrFault", err)
	}
}

func TestRanges(t *testing.T) {
	f := mustCreate(t, tmpPath(t), 4096, &Options{Reserve: 64 << 10})
	res := int64(64 << 10)
	for _, tc := range []struct {
		name   string
		off, n int64
		words  bool
		ok     bool
	}{
		{"whole file", 0, 4096, false, true},
		{"empty", 100, 0, false, true},
		{"reservation end", res - 8, 8, false, true},
		{"past reservation", res - 8, 9, false, false},
		{"at reservation", res, 1, false, false},
		{"negative offset", -1, 1, false, false},
		{"negative length", 0, -1, false, false},
		{"overflow", 1 << 62, 1 << 62, false, false},
		{"max int64", 8, 1<<63 - 1, false, false},
		{"words", 4096, 512, true, true},
		{"words misaligned", 4, 1, true, false},
		{"words past reservation", res - 8, 2, true, false},
		{"words negative", 0, -1, true, false},
		{"words overflow", 8, 1 << 61, true, false},
	} {
		var err error
		var got int
		if tc.words {
			var w []uint64
			w, err = f.Words(tc.off, tc.n)
			got = len(w) * 8
		} else {
			var b []byte
			b, err = f.Bytes(tc.off, tc.n)
			got = len(b)
			if err == nil && cap(b) != len(b) {
				t.Errorf("%s: cap %d > len %d lets callers run past the range", tc.name, cap(b), len(b))
			}
		}
		if tc.ok && (err != nil || int64(got) != tc.n*map[bool]int64{true: 8, false: 1}[tc.words]) {
			t.Errorf("%s: %d bytes, %v", tc.name, got, err)
		}
		if !tc.ok && !errors.Is(err, ErrRange) {
			t.Errorf("%s: err = %v, want ErrRange", tc.name, err)
		}
	}
	// Words and Bytes alias the same memory.
	w, _ := f.Words(8, 1)
	b, _ := f.Bytes(8, 8)
	w[0] = 0x0807060504030201
	if b[0] != 1 || b[7] != 8 {
		t.Fatalf("words are not little-endian views of the bytes: % x", b)
	}
	// Sync checks against the file size, not the reservation.
	if err := f.Sync(0, 4097); !errors.Is(err, ErrRange) {
		t.Fatalf("Sync past the file: %v", err)
	}
	if err := f.Sync(4096, 0); err != nil {
		t.Fatalf("empty Sync at the end: %v", err)
	}
}

// TestGrowWithoutRemap: a slice taken before Grow stays valid and sees
// data written into the grown region through another File on the same
// path, which proves both that the mapping did not move and that it is
// MAP_SHARED across handles.
func TestGrowWithoutRemap(t *testing.T) {
	path := tmpPath(t)
	a := mustCreate(t, path, 4096, &Options{Reserve: testReserve})
	early, err := a.Bytes(0, 64<<10) // reserved, not yet backed
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Grow(64 << 10); err != nil {
		t.Fatal(err)
	}
	if a.Size() != 64<<10 {
		t.Fatalf("Size %d after Grow", a.Size())
	}
	var st unix.Stat_t
	unix.Stat(path, &st)
	if st.Size != 64<<10 || st.Blocks*512 < 64<<10 {
		t.Fatalf("after Grow: size %d, %d bytes allocated", st.Size, st.Blocks*512)
	}
	b := mustOpen(t, path, &Options{Reserve: testReserve})
	bb, err := b.Bytes(40000, 5)
	if err != nil {
		t.Fatal(err)
	}
	copy(bb, "grown")
	if string(early[40000:40005]) != "grown" {
		t.Fatalf("slice from before Grow sees %q", early[40000:40005])
	}
	copy(early[50000:], "back")
	if bb2, _ := b.Bytes(50000, 4); string(bb2) != "back" {
		t.Fatalf("other handle sees %q", bb2)
	}
	// Growing to a smaller size never shrinks.
	if err := a.Grow(4096); err != nil || a.Size() != 64<<10 {
		t.Fatalf("Grow smaller: %v, size %d", err, a.Size())
	}
	// The other handle learns the size.
	if n, err := b.Refresh(); err != nil || n != 64<<10 {
		t.Fatalf("Refresh = %d, %v", n, err)
	}
}

// A file that outgrows a handle's reservation is mapped again: slices of
// the old mapping stay valid and see the same pages (issue 11 item 5: a
// handle whose reservation was outgrown answered false for every key).
func TestGrowBeyondReserve(t *testing.T) {
	f := mustCreate(t, tmpPath(t), 4096, &Options{Reserve: 64 << 10})
	early, err := f.Bytes(0, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Grow(64<<10 + 4096); err != nil {
		t.Fatalf("Grow past the reservation: %v", err)
	}
	if f.Size() != 64<<10+4096 {
		t.Fatalf("size %d after Grow", f.Size())
	}
	late, err := f.Bytes(0, 64<<10+4096)
	if err != nil {
		t.Fatalf("Bytes of the grown file: %v", err)
	}
	copy(early, "old mapping")
	if string(late[:11]) != "old mapping" {
		t.Fatalf("new mapping sees %q, want what the old one wrote", late[:11])
	}
	copy(late[64<<10:], "tail")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRefreshBeyondReserve(t *testing.T) {
	path := tmpPath(t)
	small := mustCreate(t, path, 4096, &Options{Reserve: 16 << 10})
	big := mustOpen(t, path, &Options{Reserve: testReserve})
	if err := big.Grow(32 << 10); err != nil {
		t.Fatal(err)
	}
	tail, _ := big.Bytes(30<<10, 4)
	copy(tail, "tail")
	if n, err := small.Refresh(); err != nil || n != 32<<10 {
		t.Fatalf("Refresh past the reservation = %d, %v; want 32 KiB, nil", n, err)
	}
	b, err := small.Bytes(30<<10, 4)
	if err != nil || string(b) != "tail" {
		t.Fatalf("after Refresh: %q, %v", b, err)
	}
}

// Opening a FIFO neither blocks nor succeeds (issue 11 item 7).
func TestOpenFIFO(t *testing.T) {
	path := tmpPath(t)
	if err := unix.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{true, false} {
		done := make(chan error, 1)
		go func() {
			_, err := Open(path, &Options{ReadOnly: ro})
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) {
				t.Errorf("Open(FIFO, read-only %v) = %v, want ErrNotRegular", ro, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Open(FIFO, read-only %v) blocked", ro)
		}
	}
	if _, err := Create(path, 4096, &Options{Overwrite: true}); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Create(FIFO, Overwrite) = %v, want ErrNotRegular", err)
	}
}

func TestFailpoints(t *testing.T) {
	fail := func() error { return errInjected }
	for _, tc := range []struct {
		name string
		fp   failpoint.Points
	}{
		{"create fallocate", failpoint.Points{Fallocate: fail}},
		{"create fsync", failpoint.Points{Fsync: fail}},
		{"create mmap", failpoint.Points{Mmap: fail}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tmpPath(t)
			f, err := Create(path, 8192, &Options{Reserve: testReserve, failpoints: &tc.fp})
			if !errors.Is(err, errInjected) || f != nil {
				t.Fatalf("Create = %v, %v; want the injected error", f, err)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("failed Create left the file behind: %v", err)
			}
		})
	}
	t.Run("open mmap", func(t *testing.T) {
		path := tmpPath(t)
		mustCreate(t, path, 4096, &Options{Reserve: testReserve})
		if _, err := Open(path, &Options{failpoints: &failpoint.Points{Mmap: fail}}); !errors.Is(err, errInjected) {
			t.Fatalf("Open = %v", err)
		}
	})
	t.Run("sync and grow", func(t *testing.T) {
		fp := &failpoint.Points{}
		f := mustCreate(t, tmpPath(t), 4096, &Options{Reserve: testReserve, failpoints: fp})
		fp.Msync = fail
		if err := f.Sync(0, 4096); !errors.Is(err, errInjected) {
			t.Fatalf("Sync with msync failing: %v", err)
		}
		fp.Msync, fp.Fsync = nil, fail
		if err := f.Sync(0, 4096); !errors.Is(err, errInjected) {
			t.Fatalf("Sync with fsync failing: %v", err)
		}
		fp.Fsync, fp.Fallocate = nil, fail
		if err := f.Grow(8192); !errors.Is(err, errInjected) {
			t.Fatalf("Grow with fallocate failing: %v", err)
		}
		if f.Size() != 4096 {
			t.Fatalf("failed Grow changed the size to %d", f.Size())
		}
		fp.Fallocate = nil
		if err := f.Sync(0, 4096); err != nil {
			t.Fatalf("Sync after clearing the failpoints: %v", err)
		}
		if err := f.Grow(8192); err != nil || f.Size() != 8192 {
			t.Fatalf("Grow after clearing the failpoints: %v", err)
		}
	})
}

var sink byte

// TestGuardTruncated: reading a mapped page whose file was truncated
// underneath raises SIGBUS; Guard turns it into ErrFault and the process
// goes on.
func TestGuardTruncated(t *testing.T) {
	path := tmpPath(t)
	f := mustCreate(t, path, 3*4096, &Options{Reserve: testReserve})
	b, err := f.Bytes(0, 3*4096)
	if err != nil {
		t.Fatal(err)
	}
	b[2*4096+7] = 42
	if err := Guard(func() error { sink = b[2*4096+7]; return nil }); err != nil || sink != 42 {
		t.Fatalf("Guard around a good read: %v, %d", err, sink)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	err = Guard(func() error { sink = b[2*4096+7]; return nil })
	if !errors.Is(err, ErrFault) {
		t.Fatalf("read of a truncated page: %v, want ErrFault", err)
	}
	// Guard passes fn's own errors through and re-panics other panics.
	if err := Guard(func() error { return errInjected }); !errors.Is(err, errInjected) {
		t.Fatalf("Guard(fn returning an error) = %v", err)
	}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("Guard swallowed a panic: %v", r)
			}
		}()
		Guard(func() error { panic("boom") })
	}()
}

func lockPair(t *testing.T) (*File, *File, string) {
	path := tmpPath(t)
	a := mustCreate(t, path, 4096, &Options{Reserve: 64 << 10})
	b := mustOpen(t, path, &Options{Reserve: 64 << 10})
	return a, b, path
}

// TestLocks: open-file-description locks conflict between two Files even
// in one process.
func TestLocks(t *testing.T) {
	a, b, _ := lockPair(t)
	if err := a.Lock(0, true, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(0, true, 0); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("second exclusive lock = %v, want ErrLockTimeout", err)
	}
	if err := b.Lock(0, false, 0); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("shared lock against an exclusive one = %v", err)
	}
	if held, err := b.Held(0); err != nil || !held {
		t.Fatalf("b.Held(0) = %v, %v; want true", held, err)
	}
	if held, err := a.Held(0); err != nil || held {
		t.Fatalf("a.Held(0) = %v, %v; the holder's own lock does not conflict", held, err)
	}
	// Locks are per byte.
	if err := b.Lock(1, true, 0); err != nil {
		t.Fatalf("lock on another byte: %v", err)
	}
	if held, _ := b.Held(2); held {
		t.Fatal("unlocked byte reported held")
	}
	// Re-locking one's own byte is fine.
	if err := a.Lock(0, true, 0); err != nil {
		t.Fatalf("relock by the holder: %v", err)
	}
	if err := a.Unlock(0); err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(0, true, 0); err != nil {
		t.Fatalf("lock after Unlock: %v", err)
	}
	b.Unlock(0)
	// Shared locks coexist and exclude an exclusive one.
	if err := a.Lock(10, false, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(10, false, 0); err != nil {
		t.Fatalf("two shared locks: %v", err)
	}
	c := mustOpen(t, a.Path(), &Options{Reserve: 64 << 10})
	if err := c.Lock(10, true, 0); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("exclusive against shared: %v", err)
	}
}

// TestLockFileFunctions: LockFile, HeldFile and UnlockFile on plain
// *os.File handles (recover's) take the same locks as a File's methods.
func TestLockFileFunctions(t *testing.T) {
	a, _, path := lockPair(t)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := LockFile(f, 3, true, 0); err != nil {
		t.Fatal(err)
	}
	if held, err := a.Held(3); err != nil || !held {
		t.Fatalf("a.Held(3) = %v, %v; want true", held, err)
	}
	if err := a.Lock(3, false, 0); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("shared lock against LockFile's exclusive one = %v", err)
	}
	if err := a.Lock(4, true, 0); err != nil {
		t.Fatal(err)
	}
	if held, err := HeldFile(f, 4); err != nil || !held {
		t.Fatalf("HeldFile(4) = %v, %v; want true", held, err)
	}
	if held, err := HeldFile(f, 3); err != nil || held {
		t.Fatalf("HeldFile(3) = %v, %v; its own lock does not conflict", held, err)
	}
	if err := UnlockFile(f, 3); err != nil {
		t.Fatal(err)
	}
	if held, err := a.Held(3); err != nil || held {
		t.Fatalf("a.Held(3) after UnlockFile = %v, %v; want false", held, err)
	}
	if err := LockFile(f, 4, false, 20*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("LockFile against a's exclusive lock = %v, want ErrLockTimeout", err)
	}
	f.Close()
	if _, err := HeldFile(f, 4); err == nil {
		t.Fatal("HeldFile on a closed file: no error")
	}
	if err := LockFile(f, 5, true, time.Second); err == nil || errors.Is(err, ErrLockTimeout) {
		t.Fatalf("LockFile on a closed file = %v, want the system's error at once", err)
	}
}

func TestLockTimeout(t *testing.T) {
	a, b, _ := lockPair(t)
	if err := a.Lock(5, true, 0); err != nil {
		t.Fatal(err)
	}
	const timeout = 150 * time.Millisecond
	start := time.Now()
	err := b.Lock(5, true, timeout)
	el := time.Since(start)
	if !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("Lock = %v, want ErrLockTimeout", err)
	}
	if el < timeout || el > timeout+500*time.Millisecond {
		t.Fatalf("timed out after %v, want about %v", el, timeout)
	}
	// A waiter gets the lock soon after it is released.
	unlocked := make(chan error, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		unlocked <- a.Unlock(5)
	}()
	start = time.Now()
	err = b.Lock(5, true, 5*time.Second)
	if uerr := <-unlocked; uerr != nil {
		t.Fatalf("Unlock: %v", uerr)
	}
	if err != nil {
		t.Fatalf("waiting Lock: %v", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("got the lock only after %v", el)
	}
}

// TestLockSurvivesOtherClose: closing another descriptor of the same file
// drops classic POSIX locks of the whole process, but not OFD locks.
func TestLockSurvivesOtherClose(t *testing.T) {
	a, b, path := lockPair(t)
	if err := a.Lock(0, true, 0); err != nil {
		t.Fatal(err)
	}
	c := mustOpen(t, path, &Options{Reserve: 64 << 10})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	if held, err := b.Held(0); err != nil || !held {
		t.Fatalf("lock lost after another handle closed: held %v, %v", held, err)
	}
	// Closing the holder releases it.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(0, true, time.Second); err != nil {
		t.Fatalf("lock not released by the holder's Close: %v", err)
	}
}

func TestClose(t *testing.T) {
	f := mustCreate(t, tmpPath(t), 4096, &Options{Reserve: testReserve})
	checkClose(t, f)
	if _, err := f.Refresh(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Refresh after Close: %v", err)
	}
}

// TestWordsAfterClose: Words must report ErrClosed like Bytes. A check of n
// against len(mf.m) before Bytes takes the lock would return ErrRange after
// Close (m = nil), and read mf.m unsynchronized (a data race with a
// concurrent Close).
func TestWordsAfterClose(t *testing.T) {
	f := mustCreate(t, tmpPath(t), 4096, &Options{Reserve: testReserve})
	f.Close()
	if _, err := f.Words(0, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Words after Close: %v, want ErrClosed", err)
	}
}

func TestCheckFS(t *testing.T) {
	var st unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		t.Skip("no tmpfs at /dev/shm")
	}
	if err := checkFS("/dev/shm", false); err != nil {
		t.Fatalf("checkFS(tmpfs) = %v", err)
	}
	if err := checkFS(t.TempDir(), false); err != nil {
		t.Fatalf("checkFS(temp dir) = %v", err)
	}
	if err := checkFS("/no/such/path", false); err == nil || errors.Is(err, ErrNetworkFS) {
		t.Fatalf("checkFS(missing) = %v, want a statfs error", err)
	}
	if err := checkFS("/no/such/path", true); err != nil {
		t.Fatalf("checkFS with AllowNetworkFS = %v", err)
	}
	// A file on tmpfs works end to end.
	dir, err := os.MkdirTemp("/dev/shm", "mmapfile-test")
	if err != nil {
		t.Skip(err)
	}
	defer os.RemoveAll(dir)
	f, err := Create(filepath.Join(dir, "f"), 8192, &Options{Reserve: testReserve})
	if err != nil {
		t.Fatalf("Create on tmpfs: %v", err)
	}
	if err := f.Publish(); err != nil {
		t.Fatalf("Publish on tmpfs: %v", err)
	}
	f.Close()
	g, err := Open(filepath.Join(dir, "f"), &Options{Reserve: testReserve})
	if err != nil {
		t.Fatalf("Open on tmpfs: %v", err)
	}
	g.Close()
}

func TestNetworkFSMagicsAreKnown(t *testing.T) {
	// The kernel's magic numbers (linux/magic.h) of file systems shared
	// between hosts.
	for magic, name := range map[int64]string{unix.NFS_SUPER_MAGIC: "nfs", unix.SMB_SUPER_MAGIC: "smb", unix.CIFS_SUPER_MAGIC: "cifs",
		unix.SMB2_SUPER_MAGIC: "smb2", unix.FUSE_SUPER_MAGIC: "fuse", unix.AFS_SUPER_MAGIC: "afs", unix.CODA_SUPER_MAGIC: "coda",
		unix.V9FS_MAGIC: "9p"} {
		if networkFS[magic] != name {
			t.Errorf("magic %#x: %q, want %q", magic, networkFS[magic], name)
		}
	}
	for _, local := range []int64{unix.TMPFS_MAGIC, unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC} {
		if _, ok := networkFS[local]; ok {
			t.Errorf("local file system %#x listed as network", local)
		}
	}
}

func TestSyncDir(t *testing.T) {
	if err := SyncDir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir("/no/such/dir"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("SyncDir(missing) = %v", err)
	}
}

func TestPageSize(t *testing.T) {
	if PageSize() != int64(os.Getpagesize()) || PageSize()&(PageSize()-1) != 0 {
		t.Fatalf("PageSize %d", PageSize())
	}
}

// TestGrowSparse: GrowSparse leaves the tail a hole (its blocks are not
// allocated), maps all of it even past the reservation, and Allocate then
// allocates the hole so stores into it are safe.
func TestGrowSparse(t *testing.T) {
	path := tmpPath(t)
	f := mustCreate(t, path, 4096, &Options{Reserve: 16 << 10})
	defer f.Close()
	const size, alloc = 1 << 20, 8192
	if err := f.GrowSparse(size, alloc); err != nil {
		t.Fatal(err)
	}
	if f.Size() != size {
		t.Fatalf("size %d, want %d", f.Size(), size)
	}
	blocks := func() int64 {
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks * 512
	}
	if b := blocks(); b >= size/2 {
		t.Fatalf("%d bytes allocated after GrowSparse(%d, %d): the tail is not a hole", b, size, alloc)
	}
	tail, err := f.Bytes(alloc, size-alloc)
	if err != nil {
		t.Fatalf("the hole is not mapped: %v", err)
	}
	if err := f.Allocate(alloc, size-alloc); err != nil {
		t.Fatal(err)
	}
	if b := blocks(); b < size {
		t.Fatalf("%d bytes allocated after Allocate, want %d", b, size)
	}
	copy(tail[size-alloc-4:], "end!")
	if err := f.Allocate(size-4096, 8192); err == nil {
		t.Fatal("Allocate past the end of the file succeeded")
	}
}

func TestDiscard(t *testing.T) {
	path := tmpPath(t)
	f := mustCreate(t, path, 4096, &Options{Reserve: 1 << 20})
	defer f.Close()
	const size = 1 << 20
	if err := f.Grow(size); err != nil {
		t.Fatal(err)
	}
	b, err := f.Bytes(0, size)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 0xAB
	}
	blocks := func() int64 {
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks * 512
	}
	before := blocks()
	if err := f.Discard(64<<10, 512<<10); err != nil {
		t.Fatal(err)
	}
	if f.Size() != size {
		t.Fatalf("size %d after Discard, want %d", f.Size(), size)
	}
	for i, c := range b {
		want := byte(0xAB)
		if i >= 64<<10 && i < 576<<10 {
			want = 0
		}
		if c != want {
			t.Fatalf("byte %d = %#x after Discard, want %#x", i, c, want)
		}
	}
	if after := blocks(); after > before-256<<10 {
		t.Fatalf("%d bytes allocated after discarding 512 KiB of %d: no hole", after, before)
	}
	if err := f.Allocate(64<<10, 512<<10); err != nil {
		t.Fatal(err)
	}
	b[100<<10] = 1 // the range is writable again
	if err := f.Discard(size-4096, 8192); err == nil {
		t.Fatal("Discard past the end of the file succeeded")
	}
}
