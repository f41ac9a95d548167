package mmapfile

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/dablooms/dablooms/internal/failpoint"
)

// DefaultReserve is the address space reserved for a mapping when the
// options give none: the file can grow to this size without a remap. It is
// sized to the address space: 64 GiB where pointers have 64 bits, 256 MiB
// on 32-bit platforms (386, arm), whose 2-4 GiB of address space could not
// hold even one 64 GiB reservation.
const DefaultReserve = reserve32 + (reserve64-reserve32)*(bits.UintSize/64)

const (
	reserve64 = 64 << 30
	reserve32 = 256 << 20
	// MaxReserve32 is the largest reservation a 32-bit platform maps: a
	// larger Options.Reserve is reduced to it there (a file that outgrows
	// its reservation is mapped again, larger; see Options.Reserve). With
	// 1 GiB, a process that held a few files (or Detached ones not yet
	// unmapped) ran out of address space: recover's tests, under 386.
	MaxReserve32 = reserve32
)

// ErrTooLarge is returned for a file larger than this platform's address
// space can map (on 32-bit platforms, files of 2 GiB or more).
var ErrTooLarge = errors.New("mmapfile: file too large for this platform's address space")

// Options configure Create and Open. The zero value means the defaults.
type Options struct {
	ReadOnly  bool // map read-only (Open only)
	Overwrite bool // Create replaces an existing file
	// Reserve is the address space to reserve (0: DefaultReserve, which
	// depends on the platform's pointer size): the file grows to this size
	// without a remap, and past it each handle maps it again, twice as
	// large. On 32-bit platforms a Reserve above MaxReserve32 is reduced to
	// it, and a file of 2 GiB or more cannot be mapped (ErrTooLarge).
	Reserve        int64
	AllowNetworkFS bool // allow files on network file systems
	// OpenLock, if > 0, is a byte of the file on which every handle holds a
	// shared lock for its lifetime: Open takes it (waiting at most
	// LockTimeout) and then makes sure the path still names the file it
	// opened, opening again if the file was replaced meanwhile; Create with
	// Overwrite takes the old file's exclusively, without waiting, and
	// refuses with ErrBusy while any handle holds it.
	OpenLock    int64
	LockTimeout time.Duration
	// LiveOld, for Create with Overwrite: the caller tells the old file's
	// handles of the replacement another way (scaling.Freeze), so Create
	// does not take the old file's open lock and replaces it while it is
	// open.
	LiveOld bool
	// Populate (Create only) pre-faults every page of the new file,
	// writable, once its blocks are allocated: one madvise
	// (MADV_POPULATE_WRITE, Linux 5.14) instead of a page fault at each
	// page's first store. The pages are then in memory and dirty, so
	// Create takes as long as the kernel needs to take them (for a file
	// larger than its dirty limits, as long as writing them out). A
	// growth is not populated: it happens under the callers' locks, which
	// must not be held that long. Where the kernel refuses, the pages
	// fault one by one as without the option, and nothing fails.
	Populate bool
	// HugePages asks for transparent huge pages over the mapping
	// (MADV_HUGEPAGE): where the file system keeps large folios in the
	// page cache (ext4 from Linux 6.16, XFS) and THP is "always" or
	// "madvise", the file is mapped 2 MiB at a time, so random access
	// takes far fewer page faults and TLB misses. The cost is in writes
	// back: a change dirties its whole folio, so Sync after a few
	// scattered changes writes up to 512 times the bytes, and random
	// changes over a file larger than the kernel's dirty limits rewrite
	// 2 MiB per re-dirtied folio. Ignored where unsupported.
	HugePages bool

	noMapRetry bool // the package's tests: the negative control of TestMapRetriesAfterGC
	// failpoints inject failures: the module's tests (internal/failpoint).
	failpoints *failpoint.Points
}

func init() {
	failpoint.Attach = func(opts any, p *failpoint.Points) { opts.(*Options).failpoints = p }
}

// File is a file mapped MAP_SHARED.
type File struct {
	mu         sync.Mutex
	f          *os.File
	path       string
	m          []byte   // the whole reservation; after Detach, what Close unmaps
	outgrown   [][]byte // earlier, smaller reservations (see extend): unmapped only at Close
	size       int64
	readOnly   bool
	closed     bool // Detach or Close: no more file access
	fp         *failpoint.Points
	noMapRetry bool     // Options.noMapRetry
	hugePages  bool     // Options.HugePages
	aside      string   // Create: the temporary name until Publish
	old        *os.File // Create with Overwrite: the file to replace, locked until Publish
}

// Create creates a file of size bytes (all zero, blocks allocated) that is
// to replace path, and maps it. The file is made aside, under a temporary
// name in path's directory, so that nobody opens it half made and a crash
// leaves path as it was: the caller fills it and then calls Publish, which
// puts it at path. Create refuses an existing path unless o.Overwrite; with
// o.OpenLock set it also refuses (ErrBusy) to replace a file that a handle
// holds open, and keeps it from being opened until Publish (see Options).
// Close before Publish removes the temporary file.
func Create(path string, size int64, o *Options) (*File, error) {
	if o == nil {
		o = &Options{}
	}
	if err := unsupported(path); err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := checkFS(dir, o.AllowNetworkFS); err != nil {
		return nil, err
	}
	mf := &File{path: path, fp: o.failpoints, noMapRetry: o.noMapRetry, hugePages: o.HugePages}
	if err := mf.holdOld(path, o); err != nil {
		return nil, err
	}
	var tok [8]byte
	rand.Read(tok[:])
	mf.aside = filepath.Join(dir, fmt.Sprintf(".%s.new-%x", filepath.Base(path), tok))
	f, err := OpenRegular(mf.aside, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		mf.releaseOld()
		return nil, err
	}
	mf.f = f
	fail := func(err error) (*File, error) {
		mf.Close()
		return nil, err
	}
	if o.OpenLock > 0 {
		// Shared, like every handle's: it moves with the file at Publish.
		if err := LockFile(f, o.OpenLock, false, 0); err != nil {
			return fail(err)
		}
	}
	if err := mf.allocate(0, size); err != nil {
		return fail(err)
	}
	mf.size = size
	if err := mf.fsync(); err != nil {
		return fail(err)
	}
	if err := mf.mapIt(o.Reserve); err != nil {
		return fail(err)
	}
	if o.Populate {
		mf.populate(size)
	}
	return mf, nil
}

// holdOld checks what is at path before a Create: nothing, or (with
// Overwrite) a regular file, whose open lock it takes exclusively until
// Publish, so that no handle opens it meanwhile.
func (mf *File) holdOld(path string, o *Options) error {
	old, err := OpenRegular(path, os.O_RDWR, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !o.Overwrite:
		old.Close()
		return fmt.Errorf("%w: %s", ErrExists, path)
	}
	if o.OpenLock > 0 && !o.LiveOld {
		if err := LockFile(old, o.OpenLock, true, 0); err != nil {
			old.Close()
			if errors.Is(err, ErrLockTimeout) {
				return fmt.Errorf("%w: %s is open in another handle or process; close it first", ErrBusy, path)
			}
			return err
		}
	}
	mf.old = old
	return nil
}

func (mf *File) releaseOld() {
	if mf.old != nil {
		mf.old.Close() // drops its lock
		mf.old = nil
	}
}

// Publish puts a file made by Create at its path: it renames it over the
// file it replaces (Overwrite), or links it there only if the path is still
// free, and syncs the directory. Idempotent; a File from Open has nothing
// to publish.
func (mf *File) Publish() error {
	mf.mu.Lock()
	defer mf.mu.Unlock()
	if mf.aside == "" {
		return nil
	}
	if mf.closed {
		return ErrClosed
	}
	if mf.old != nil {
		if err := os.Rename(mf.aside, mf.path); err != nil {
			return err
		}
	} else {
		// Only if the path is still free, atomically.
		err := renameNoReplace(mf.aside, mf.path)
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%w: %s", ErrExists, mf.path)
		}
		if err != nil {
			return &os.LinkError{Op: "rename", Old: mf.aside, New: mf.path, Err: err}
		}
	}
	mf.aside = ""
	mf.releaseOld()
	return syncDir(filepath.Dir(mf.path))
}

// Open maps an existing regular file. Anything else (a FIFO, a device, a
// directory) is refused without blocking: the file is opened non-blocking
// and checked before anything reads it. With o.OpenLock set it holds the
// shared open lock (see Options) on the file that is at path once it has it.
func Open(path string, o *Options) (*File, error) {
	if o == nil {
		o = &Options{}
	}
	if err := unsupported(path); err != nil {
		return nil, err
	}
	for tries := 0; ; tries++ {
		mf, err := open(path, o)
		if err != nil || o.OpenLock <= 0 {
			return mf, err
		}
		if err := mf.Lock(o.OpenLock, false, o.LockTimeout); err != nil {
			mf.Close()
			if errors.Is(err, ErrLockTimeout) {
				err = fmt.Errorf("%w (a rewrite of the whole file holds it)", err)
			}
			return nil, err
		}
		// A whole-file rewrite holds the lock exclusively until it has
		// renamed the new file over the path: the lock may have been
		// granted on the file it replaced.
		same, err := mf.SamePath()
		if err == nil && same {
			return mf, nil
		}
		mf.Close()
		if err != nil {
			return nil, err
		}
		if tries == 10 {
			return nil, fmt.Errorf("%w: %s was replaced %d times while it was being opened", ErrBusy, path, tries+1)
		}
	}
}

// kindOf names what a file that is not a regular one is.
func kindOf(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m.IsDir():
		return "directory"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	case m&os.ModeSymlink != 0:
		return "symbolic link"
	}
	return m.Type().String()
}

// SamePath reports whether the file's path still names the open file.
func (mf *File) SamePath() (bool, error) {
	same, err := sameInode(mf.Fd(), mf.path)
	if errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("%s was removed while it was being opened: %w", mf.path, os.ErrNotExist)
	}
	return same, err
}

func open(path string, o *Options) (*File, error) {
	flag := os.O_RDWR
	if o.ReadOnly {
		flag = os.O_RDONLY
	}
	f, err := OpenRegular(path, flag, 0)
	if err != nil {
		return nil, err
	}
	mf := &File{f: f, path: path, readOnly: o.ReadOnly, fp: o.failpoints, noMapRetry: o.noMapRetry,
		hugePages: o.HugePages}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := checkFS(path, o.AllowNetworkFS); err != nil {
		f.Close()
		return nil, err
	}
	mf.size = fi.Size()
	if err := mf.mapIt(o.Reserve); err != nil {
		f.Close()
		return nil, err
	}
	return mf, nil
}

// OpenRegular opens path with O_NONBLOCK (an open(2) of a FIFO would
// otherwise wait for a writer for ever), refuses anything but a regular
// file (ErrNotRegular) before opening it (opening a device can act on it)
// and after (the path may have changed in between), and then turns
// blocking I/O back on.
func OpenRegular(path string, flag int, perm os.FileMode) (*os.File, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is a %s", ErrNotRegular, path, kindOf(st.Mode()))
	}
	f, err := os.OpenFile(path, flag|oNonblock, perm)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: %s is a %s", ErrNotRegular, path, kindOf(fi.Mode()))
	}
	if err := setBlocking(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (mf *File) mapIt(reserve int64) error {
	if reserve <= 0 {
		reserve = DefaultReserve
	}
	if bits.UintSize == 32 {
		reserve = min(reserve, MaxReserve32)
	}
	m, err := mf.mapReservation(max(reserve, mf.size))
	if err != nil {
		return err
	}
	mf.m = m
	return nil
}

// mapReservation maps the file over reserve bytes (rounded up to pages).
func (mf *File) mapReservation(reserve int64) ([]byte, error) {
	reserve = (reserve + PageSize() - 1) / PageSize() * PageSize()
	if reserve > math.MaxInt {
		// A mapping's length is an int: on 32-bit platforms less than 2 GiB.
		return nil, fmt.Errorf("%w: %s needs a mapping of %d bytes, and a %d-bit process maps at most %d: use a 64-bit build",
			ErrTooLarge, mf.path, reserve, bits.UintSize, math.MaxInt)
	}
	if err := mf.fp.Fail("mmap"); err != nil {
		return nil, fmt.Errorf("mmap %s: %w", mf.path, err)
	}
	m, err := mapShared(mf.f, int(reserve), mf.readOnly)
	for wait := time.Millisecond; isNoMemory(err) && !mf.noMapRetry && wait < time.Second; wait *= 2 {
		// Detached Files keep their address range until their last reader
		// is garbage (see Detach); a program that opens and closes many
		// files between collections can run out of address space or of
		// mappings. Collect, give the cleanups a moment, try again.
		runtime.GC()
		time.Sleep(wait)
		m, err = mapShared(mf.f, int(reserve), mf.readOnly)
	}
	if err != nil {
		if bits.UintSize == 32 && isNoMemory(err) {
			return nil, fmt.Errorf("%w: mmap %s (%d bytes reserved): %w: a 32-bit process has no free address range that large",
				ErrTooLarge, mf.path, reserve, err)
		}
		return nil, fmt.Errorf("mmap %s (%d bytes reserved): %w", mf.path, reserve, err)
	}
	// Lookups touch one block at random: read-ahead around a fault on a cold
	// file would only read pages nobody asked for.
	adviseRandom(m)
	if mf.hugePages {
		adviseHuge(m)
	}
	return m, nil
}

// extend maps the file again over a reservation of at least size bytes
// (twice the old one, or size if larger), when the file has outgrown the
// old one: another handle grew it further than this handle reserved. The
// old mapping stays as it is until Close (the same file pages, MAP_SHARED,
// so slices handed out from it stay valid and see every change); Bytes and
// Words hand out slices of the new one. Called with mu held.
func (mf *File) extend(size int64) error {
	want := 2 * int64(len(mf.m))
	if bits.UintSize == 32 {
		want = min(want, MaxReserve32)
	}
	m, err := mf.mapReservation(max(size, want))
	if err != nil {
		return fmt.Errorf("the file grew to %d bytes, beyond the %d this handle reserved, and could not be mapped again: %w", size, len(mf.m), err)
	}
	mf.outgrown = append(mf.outgrown, mf.m)
	mf.m = m
	return nil
}

// PageSize is the operating system's page size.
func PageSize() int64 { return int64(os.Getpagesize()) }

// Path returns the file's path.
func (mf *File) Path() string { return mf.path }

// Fd returns the file descriptor (for locks).
func (mf *File) Fd() int { return int(mf.f.Fd()) }

func (mf *File) Size() int64 { mf.mu.Lock(); defer mf.mu.Unlock(); return mf.size }

func (mf *File) ReadOnly() bool { return mf.readOnly }

// Bytes returns n bytes at off; the range must lie within the reservation,
// and memory past the file's current size must not be touched.
func (mf *File) Bytes(off, n int64) ([]byte, error) {
	mf.mu.Lock()
	defer mf.mu.Unlock()
	if mf.closed {
		return nil, ErrClosed
	}
	if err := checkRange(off, n, int64(len(mf.m))); err != nil {
		return nil, err
	}
	return mf.m[off : off+n : off+n], nil
}

func (mf *File) Words(off, n int64) ([]uint64, error) {
	if off%8 != 0 {
		return nil, fmt.Errorf("%w: offset %d not 8-byte aligned", ErrRange, off)
	}
	if n < 0 || n > math.MaxInt64/8 {
		return nil, fmt.Errorf("%w: %d words", ErrRange, n)
	}
	b, err := mf.Bytes(off, n*8)
	if err != nil {
		return nil, err
	}
	return asWords(b), nil
}

// Refresh re-reads the file's size (another process may have grown it) and
// returns it. The mapping needs no change while the size is within the
// reservation.
func (mf *File) Refresh() (int64, error) {
	mf.mu.Lock()
	defer mf.mu.Unlock()
	if mf.closed {
		return 0, ErrClosed
	}
	size, err := fileSize(mf.Fd())
	if err != nil {
		return 0, err
	}
	if size > int64(len(mf.m)) {
		if err := mf.extend(size); err != nil {
			return 0, err
		}
	}
	mf.size = size
	return size, nil
}

// Grow extends the file to size bytes with fallocate, so the blocks exist on
// disk: a full disk is an error here, never a SIGBUS later.
func (mf *File) Grow(size int64) error { return mf.GrowSparse(size, size) }

// GrowSparse extends the file to size bytes, allocating blocks (as Grow)
// only up to allocated: the rest is a hole, which reads as zeros and must
// not be written through the mapping until Allocate has allocated it (a
// store into a hole on a full disk is a SIGBUS).
func (mf *File) GrowSparse(size, allocated int64) error {
	mf.mu.Lock()
	defer mf.mu.Unlock()
	if err := mf.writable(); err != nil {
		return err
	}
	if size > int64(len(mf.m)) {
		if err := mf.extend(size); err != nil {
			return err
		}
	}
	fsize, err := fileSize(mf.Fd())
	if err != nil {
		return err
	}
	cur := max(fsize, mf.size)
	if size <= cur {
		mf.size = cur
		return nil
	}
	if a := min(allocated, size); a > cur {
		if err := mf.allocate(cur, a-cur); err != nil {
			return err
		}
		cur = a
	}
	if size > cur {
		if err := mf.f.Truncate(size); err != nil {
			return fmt.Errorf("extending %s to %d bytes: %w", mf.path, size, err)
		}
	}
	mf.size = size
	return nil
}

// Allocate allocates the blocks of [off, off+n), which must lie within the
// file (a hole GrowSparse left), so that stores into it cannot fault.
func (mf *File) Allocate(off, n int64) error {
	mf.mu.Lock()
	defer mf.mu.Unlock()
	if err := mf.writableRange(off, n); err != nil {
		return err
	}
	return mf.allocate(off, n)
}

// Discard punches a hole over [off, off+n), which must lie within the file
// and be page-aligned: its blocks go back to the file system and it reads as
// zeros, while the file keeps its size (so no mapping of it faults on a
// load). Where the file system cannot punch holes the range is overwritten
// with zeros instead.
func (mf *File) Discard(off, n int64) error {
	mf.mu.Lock()
	defer mf.mu.Unlock()
	if err := mf.writableRange(off, n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if err := punchHole(mf.Fd(), off, n); err != nil {
		if errors.Is(err, errNoFallocate) {
			return mf.writeZeros(off, n)
		}
		return fmt.Errorf("punching a hole in %s [%d, +%d): %w", mf.path, off, n, err)
	}
	return nil
}

// writableRange refuses a change to [off, off+n) of a closed or read-only
// file, or outside the file; called with mu held.
func (mf *File) writableRange(off, n int64) error {
	if err := mf.writable(); err != nil {
		return err
	}
	return checkRange(off, n, mf.size)
}

// writable refuses a change to a closed or read-only file; called with mu
// held.
func (mf *File) writable() error {
	switch {
	case mf.closed:
		return ErrClosed
	case mf.readOnly:
		return ErrReadOnly
	}
	return nil
}

func (mf *File) allocate(off, n int64) error {
	if n == 0 {
		return nil
	}
	if err := mf.fp.Fail("fallocate"); err != nil {
		return fmt.Errorf("fallocate %s: %w", mf.path, err)
	}
	if err := fallocate(mf.Fd(), off, n); err != nil {
		if errors.Is(err, errNoFallocate) {
			// No fallocate on this file system: write zeros, which also
			// allocates blocks and fails on a full disk.
			return mf.writeZeros(off, n)
		}
		return fmt.Errorf("fallocate %s [%d, +%d): %w", mf.path, off, n, err)
	}
	return nil
}

// Sweep lifts the mapping's MADV_RANDOM (see mapReservation) over the
// pages of [off, off+n) until done: the range is about to be written in
// order. Under MADV_RANDOM every 4 KiB page of a range takes a fault of
// its own at its first store, and again at the first store after
// write-back cleaned it; without it a fault maps the page's whole large
// folio. Measured over a 7.4 GB file on ext4, one store every 128 bytes in
// order: 1.9M faults and 8.6 s of system time per pass against 14k and
// 0.3-0.5 s (docs/PERFORMANCE.md, "A billion keys"). done puts
// MADV_RANDOM back for the lookups, unless the mapping was replaced
// meanwhile (the new one has it). A range outside the mapping is left as
// it is.
func (mf *File) Sweep(off, n int64) (done func()) {
	mf.mu.Lock()
	defer mf.mu.Unlock()
	ps := PageSize()
	start, end := max(off, 0)/ps*ps, min((off+n+ps-1)/ps*ps, int64(len(mf.m)))
	if mf.closed || end <= start {
		return func() {}
	}
	m := mf.m
	adviseNormal(m[start:end])
	return func() {
		mf.mu.Lock()
		defer mf.mu.Unlock()
		if !mf.closed && len(mf.m) == len(m) && &mf.m[0] == &m[0] {
			adviseRandom(m[start:end])
		}
	}
}

// populate pre-faults, writable, the first size bytes of the mapping of
// a file Create has just allocated (Options.Populate), whole pages only.
// If the kernel refuses (older than 5.14: EINVAL) or fails part way, the
// pages fault one by one as they would have, so the error is dropped.
func (mf *File) populate(size int64) {
	end := min(size/PageSize()*PageSize(), int64(len(mf.m)))
	if end <= 0 || mf.fp.Fail("populate") != nil { // the failpoint: as a kernel without it
		return
	}
	_ = populateWrite(mf.m[:end])
}

func (mf *File) writeZeros(off, n int64) error {
	buf := make([]byte, min(n, 1<<20))
	for n > 0 {
		c := min(n, int64(len(buf)))
		if _, err := mf.f.WriteAt(buf[:c], off); err != nil {
			return fmt.Errorf("allocate %s: %w", mf.path, err)
		}
		off, n = off+c, n-c
	}
	return nil
}

// Sync makes [off, off+n) durable: msync(MS_SYNC) of the pages, then fsync.
func (mf *File) Sync(off, n int64) error {
	mf.mu.Lock()
	defer mf.mu.Unlock()
	if err := mf.writableRange(off, n); err != nil {
		return err
	}
	ps := PageSize()
	start := off / ps * ps
	end := min((off+n+ps-1)/ps*ps, int64(len(mf.m)))
	if end > start {
		if err := mf.fp.Fail("msync"); err != nil {
			return fmt.Errorf("msync %s: %w", mf.path, err)
		}
		if err := msync(mf.m[start:end]); err != nil {
			return fmt.Errorf("msync %s: %w", mf.path, err)
		}
	}
	return mf.fsync()
}

func (mf *File) fsync() error {
	if err := mf.fp.Fail("fsync"); err != nil {
		return fmt.Errorf("fsync %s: %w", mf.path, err)
	}
	if err := fdatasync(mf.Fd()); err != nil {
		return fmt.Errorf("fsync %s: %w", mf.path, err)
	}
	return nil
}

// Detach closes the file (releasing its locks) but keeps the addresses of
// the mapping valid: the whole reservation is replaced, in one step, by
// read-only zero pages (anonymous memory, no file behind them, nothing
// committed). A reader still holding a
// slice of the mapping reads zeros instead of faulting; Close returns the
// address range to the system, so call it only once no such slice is in use.
// After Detach, every other method returns ErrClosed. Idempotent.
func (mf *File) Detach() error {
	mf.mu.Lock()
	defer mf.mu.Unlock()
	if mf.closed {
		return nil
	}
	mf.closed = true
	var err error
	for _, m := range append(mf.outgrown, mf.m) {
		// The whole reservation: a slice may reach past the size this
		// handle last saw (Bytes checks against the reservation).
		if len(m) == 0 {
			continue
		}
		if rerr := replaceWithZeros(m); rerr != nil && err == nil {
			// The file stays mapped (readers keep reading it) until Close.
			err = fmt.Errorf("detach %s: %w", mf.path, rerr)
		}
	}
	if cerr := mf.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close unmaps and closes the file. It is idempotent. Every slice handed out
// must be out of use (see Detach for a file whose readers cannot be waited
// for).
func (mf *File) Close() error {
	mf.mu.Lock()
	defer mf.mu.Unlock()
	var err error
	for _, m := range append(mf.outgrown, mf.m) {
		if m != nil { // also a mapping Detach left behind
			if uerr := munmap(m); err == nil {
				err = uerr
			}
		}
	}
	mf.m, mf.outgrown = nil, nil
	if mf.aside != "" { // never published
		os.Remove(mf.aside)
		mf.aside = ""
	}
	mf.releaseOld()
	if !mf.closed {
		if cerr := mf.f.Close(); err == nil {
			err = cerr
		}
	}
	mf.closed = true
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// SyncDir fsyncs a directory, making a create or rename in it durable.
func SyncDir(dir string) error { return syncDir(dir) }

// Guard runs fn with faults on memory access turned into an error, so that
// reading a mapping whose file was truncated underneath returns ErrFault
// instead of killing the process with SIGBUS.
func Guard(fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			if re, ok := r.(interface{ Addr() uintptr }); ok {
				err = fmt.Errorf("%w at address %#x", ErrFault, re.Addr())
				return
			}
			panic(r)
		}
	}()
	return fn()
}
