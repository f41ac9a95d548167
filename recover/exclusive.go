package recover

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/dablooms/dablooms/header"
	"golang.org/x/sys/unix"
)

// exclusive holds the growth lock and every writer slot's lock byte of a
// file, so that no other process writes it: a writer holds its slot's
// open-file-description lock for its lifetime, and a new one cannot claim a
// slot. The locks are exclusive on a descriptor open for writing, shared on
// a read-only one (a shared lock conflicts with every writer's all the same).
// For a whole-file rewrite (Repair's rename over the path) it also holds the
// open lock exclusively: every handle, read-only ones included, holds it
// shared for its lifetime, so none is left on the replaced file.
type exclusive struct {
	f    *os.File
	held []int64
}

// lockOffsets are the bytes exclusive locks: the growth lock, the slots,
// then the open lock if replace (last, so that ErrBusy names a writer's
// slot when a writer has the file open).
func lockOffsets(replace bool) []int64 {
	offs := []int64{header.GrowthLockOffset}
	for s := range header.NumSlots {
		offs = append(offs, header.SlotOffset(s))
	}
	if replace {
		offs = append(offs, header.OpenLockOffset)
	}
	return offs
}

// lockName says what holds the lock byte off, for ErrBusy.
func lockName(off int64) string {
	switch off {
	case header.OpenLockOffset:
		return "the open lock (it has the file open: every handle, read-only ones included, holds it)"
	case header.GrowthLockOffset:
		return "the growth lock"
	}
	return fmt.Sprintf("writer slot %d", (off-header.SlotsOffset)/header.SlotSize)
}

// takeExclusive locks f as exclusive describes; replace (the file is to be
// replaced by a rename) adds the open lock, which needs writable.
func takeExclusive(f *os.File, writable, replace bool, wait time.Duration) (*exclusive, error) {
	ex := &exclusive{f: f}
	typ := int16(unix.F_RDLCK)
	if writable {
		typ = unix.F_WRLCK
	}
	deadline := time.Now().Add(wait)
	delay := time.Millisecond
	for _, off := range lockOffsets(replace && writable) {
		for {
			lk := unix.Flock_t{Type: typ, Whence: 0, Start: off, Len: 1}
			err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
			if err == nil {
				ex.held = append(ex.held, off)
				break
			}
			if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) {
				ex.release()
				return nil, fmt.Errorf("recover: locking %s at byte %d: %w", f.Name(), off, err)
			}
			if !time.Now().Before(deadline) {
				ex.release()
				return nil, fmt.Errorf("%w: %s: another process holds %s (waited %v); close it first, or wait longer", ErrBusy, f.Name(), lockName(off), wait)
			}
			time.Sleep(delay)
			delay = min(2*delay, 50*time.Millisecond)
		}
	}
	return ex, nil
}

func (ex *exclusive) release() {
	for _, off := range ex.held {
		lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: 0, Start: off, Len: 1}
		unix.FcntlFlock(ex.f.Fd(), unix.F_OFD_SETLK, &lk)
	}
	ex.held = nil
}

// heldByOther reports whether another open file description holds a lock on
// byte off of f that conflicts with an exclusive one. It changes nothing.
func heldByOther(f *os.File, off int64) bool {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: off, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return false
	}
	return lk.Type != unix.F_UNLCK
}
