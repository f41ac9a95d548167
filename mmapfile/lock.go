package mmapfile

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Byte-range locks, the one implementation for the module (scaling and
// recover both take theirs here): each lock covers one byte, [off, off+1),
// and is an open-file-description lock (see lock_linux.go), which belongs to
// the open file, is released by the kernel when it is closed or the process
// dies, and is not dropped when another descriptor of the same file is
// closed.

// errConflict: another open file description holds a conflicting lock.
var errConflict = errors.New("mmapfile: lock held elsewhere")

// Lock takes a lock on byte off of the file, exclusive or shared, waiting at
// most timeout (0: do not wait); ErrLockTimeout if it could not.
func (mf *File) Lock(off int64, exclusive bool, timeout time.Duration) error {
	return lockFD(mf.Fd(), mf.path, off, exclusive, timeout)
}

// LockFile is Lock for a file that is not mapped.
func LockFile(f *os.File, off int64, exclusive bool, timeout time.Duration) error {
	return lockFD(int(f.Fd()), f.Name(), off, exclusive, timeout)
}

func lockFD(fd int, path string, off int64, exclusive bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	delay := 100 * time.Microsecond
	for {
		err := tryLock(fd, off, exclusive)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errConflict) {
			return fmt.Errorf("lock %s at %d: %w", path, off, err)
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%w: %s at byte %d after %v", ErrLockTimeout, path, off, timeout)
		}
		time.Sleep(delay)
		delay = min(delay*2, 10*time.Millisecond)
	}
}

// Unlock releases a lock taken with Lock.
func (mf *File) Unlock(off int64) error { return unlock(mf.Fd(), off) }

// UnlockFile releases a lock taken with LockFile.
func UnlockFile(f *os.File, off int64) error { return unlock(int(f.Fd()), off) }

// Held reports whether another open file description holds a lock on byte
// off that conflicts with an exclusive lock. It changes nothing.
func (mf *File) Held(off int64) (bool, error) { return heldFD(mf.Fd(), mf.path, off) }

// HeldFile is Held for a file that is not mapped.
func HeldFile(f *os.File, off int64) (bool, error) { return heldFD(int(f.Fd()), f.Name(), off) }

func heldFD(fd int, path string, off int64) (bool, error) {
	held, err := heldElsewhere(fd, off)
	if err != nil {
		return false, fmt.Errorf("query lock %s at %d: %w", path, off, err)
	}
	return held, nil
}
