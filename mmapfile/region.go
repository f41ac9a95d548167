package mmapfile

import (
	"errors"
	"fmt"
	"io/fs"
	"sync/atomic"
	"unsafe"
)

// Region is a growable byte range that the store lives in.
type Region interface {
	// Size is the current size in bytes.
	Size() int64
	// Bytes returns n bytes at off; the slice stays valid until Close.
	Bytes(off, n int64) ([]byte, error)
	// Words returns n 64-bit words at off (8-byte aligned); valid until Close.
	Words(off, n int64) ([]uint64, error)
	// Grow extends the region to size bytes, all zero; it never shrinks.
	Grow(size int64) error
	// Sync makes [off, off+n) durable.
	Sync(off, n int64) error
	// ReadOnly reports whether writes are refused.
	ReadOnly() bool
	// Close releases the region; it is idempotent.
	Close() error
}

// Sparse is a Region that can leave part of a growth unallocated (File
// implements it). A Region without it allocates everything it grows to.
type Sparse interface {
	Region
	// GrowSparse grows the region to size bytes with blocks allocated
	// only up to allocated; the rest reads as zeros and must not be
	// written before Allocate.
	GrowSparse(size, allocated int64) error
	// Allocate allocates the blocks of [off, off+n) within the region.
	Allocate(off, n int64) error
}

// Sweeper is a Region that can be told that a range is about to be
// written from its first page to its last (File implements it).
type Sweeper interface {
	Region
	// Sweep advises that [off, off+n) will be walked in order until done
	// is called.
	Sweep(off, n int64) (done func())
}

// Discarder is a Region that can give back the storage of a range (File
// and Heap implement it): after Discard the range reads as zeros. A File
// punches a hole, so a store into the range must wait for Allocate (a store
// into a hole on a full disk is a SIGBUS).
type Discarder interface {
	Region
	Discard(off, n int64) error
}

// Zero zeroes [off, off+n) of r (off and n multiples of 8): a Discarder
// gives the range's storage back, any other Region has its words cleared
// with atomic stores (lookups may still read them).
func Zero(r Region, off, n int64) error {
	if d, ok := r.(Discarder); ok {
		return d.Discard(off, n)
	}
	w, err := r.Words(off, n/8)
	if err != nil {
		return err
	}
	zeroWords(w)
	return nil
}

func zeroWords(w []uint64) {
	for i := range w {
		atomic.StoreUint64(&w[i], 0)
	}
}

// Detacher is a Region whose backing can be released while slices of it
// are still being read (File and Heap implement it): after Detach those
// slices stay readable (a File's read as zeros) until Close.
type Detacher interface {
	Region
	Detach() error
}

// Errors.
var (
	// ErrExists: a file is at the path. errors.Is(err, fs.ErrExist) holds
	// for it too, as for os's errors.
	ErrExists      error = existsError{}
	ErrReadOnly          = errors.New("mmapfile: region is read-only")
	ErrClosed            = errors.New("mmapfile: region is closed")
	ErrRange             = errors.New("mmapfile: range outside the region")
	ErrNetworkFS         = errors.New("mmapfile: file is on a network file system")
	ErrLockTimeout       = errors.New("mmapfile: timed out waiting for a lock")
	ErrFault             = errors.New("mmapfile: memory fault reading the mapping (file truncated underneath?)")
	ErrNotRegular        = errors.New("mmapfile: not a regular file")
	ErrBusy              = errors.New("mmapfile: file is in use")
	// ErrUnsupported: Open, Create and the locks on a platform other than
	// Linux. Heap regions work everywhere.
	ErrUnsupported = errors.New("mmapfile: dablooms files need Linux (OFD locks, fallocate, boot id)")
)

// existsError is ErrExists: it also matches fs.ErrExist.
type existsError struct{}

func (existsError) Error() string        { return "mmapfile: file exists" }
func (existsError) Is(target error) bool { return target == fs.ErrExist }

// errNoFallocate: the file system cannot allocate blocks without writing.
var errNoFallocate = errors.New("mmapfile: fallocate not supported")

func checkRange(off, n, size int64) error {
	if off < 0 || n < 0 || off > size || n > size-off {
		return fmt.Errorf("%w: [%d, +%d) of %d bytes", ErrRange, off, n, size)
	}
	return nil
}

func asWords(b []byte) []uint64 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), len(b)/8)
}

func asBytes(w []uint64) []byte {
	if len(w) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8)
}
