package mmapfile

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Lock takes an open-file-description byte-range lock on [off, off+1) of the
// file, exclusive or shared, waiting at most timeout (0: do not wait). The
// kernel releases it when the file is closed or the process dies.
func (mf *File) Lock(off int64, exclusive bool, timeout time.Duration) error {
	return lockFD(mf.Fd(), mf.path, off, exclusive, timeout)
}

// LockFile is Lock for a file that is not mapped.
func LockFile(f *os.File, off int64, exclusive bool, timeout time.Duration) error {
	return lockFD(int(f.Fd()), f.Name(), off, exclusive, timeout)
}

func lockFD(fd int, path string, off int64, exclusive bool, timeout time.Duration) error {
	typ := int16(unix.F_RDLCK)
	if exclusive {
		typ = unix.F_WRLCK
	}
	lk := unix.Flock_t{Type: typ, Whence: 0, Start: off, Len: 1}
	deadline := time.Now().Add(timeout)
	delay := 100 * time.Microsecond
	for {
		err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) {
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
func (mf *File) Unlock(off int64) error {
	lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: 0, Start: off, Len: 1}
	return unix.FcntlFlock(uintptr(mf.Fd()), unix.F_OFD_SETLK, &lk)
}

// Held reports whether another open file description holds a lock on byte
// off that conflicts with an exclusive lock.
func (mf *File) Held(off int64) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: off, Len: 1}
	if err := unix.FcntlFlock(uintptr(mf.Fd()), unix.F_OFD_GETLK, &lk); err != nil {
		return false, fmt.Errorf("query lock %s at %d: %w", mf.path, off, err)
	}
	return lk.Type != unix.F_UNLCK, nil
}
