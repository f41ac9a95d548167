package mmapfile

import (
	"errors"

	"golang.org/x/sys/unix"
)

// tryLock takes an open-file-description lock (F_OFD_SETLK) on byte off,
// without waiting: errConflict if another open file description holds a
// conflicting one.
func tryLock(fd int, off int64, exclusive bool) error {
	typ := int16(unix.F_RDLCK)
	if exclusive {
		typ = unix.F_WRLCK
	}
	err := setLock(fd, off, typ)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
		return errConflict
	}
	return err
}

// unlock releases this open file description's lock on byte off.
func unlock(fd int, off int64) error { return setLock(fd, off, unix.F_UNLCK) }

func setLock(fd int, off int64, typ int16) error {
	lk := unix.Flock_t{Type: typ, Whence: 0, Start: off, Len: 1}
	return unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk)
}

// heldElsewhere reports whether another open file description holds a lock
// on byte off that conflicts with an exclusive one (F_OFD_GETLK).
func heldElsewhere(fd int, off int64) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: off, Len: 1}
	if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk); err != nil {
		return false, err
	}
	return lk.Type != unix.F_UNLCK, nil
}
