package mmapfile

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The system calls a File makes, and what Linux answers. The one other
// platform file (unsupported.go) makes every Open and Create fail at once.

// unsupported reports why files cannot be used on this platform: on Linux
// they can.
func unsupported(string) error { return nil }

// oNonblock opens a FIFO without waiting for a writer (see openRegular).
const oNonblock = unix.O_NONBLOCK

// setBlocking turns blocking I/O back on for a file opened oNonblock.
func setBlocking(f *os.File) error { return unix.SetNonblock(int(f.Fd()), false) }

// mapShared maps n bytes of f from its start, MAP_SHARED, readable and,
// unless readOnly, writable.
func mapShared(f *os.File, n int, readOnly bool) ([]byte, error) {
	prot := unix.PROT_READ | unix.PROT_WRITE
	if readOnly {
		prot = unix.PROT_READ
	}
	return unix.Mmap(int(f.Fd()), 0, n, prot, unix.MAP_SHARED)
}

// isNoMemory reports a mapping refused for want of address space or of
// mappings.
func isNoMemory(err error) bool { return errors.Is(err, unix.ENOMEM) }

// munmap unmaps a mapping made by mapShared.
func munmap(b []byte) error { return unix.Munmap(b) }

// adviseRandom tells the kernel not to read ahead around a fault in b.
func adviseRandom(b []byte) { _ = unix.Madvise(b, unix.MADV_RANDOM) }

// adviseNormal undoes adviseRandom over b: a fault maps the cached pages
// around it (fault-around), and a write fault the whole large folio.
func adviseNormal(b []byte) { _ = unix.Madvise(b, unix.MADV_NORMAL) }

// adviseHuge asks for transparent huge pages over b (Options.HugePages);
// EINVAL without THP, which leaves the mapping as it is.
func adviseHuge(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }

// populateWrite faults every page of b in, writable (MADV_POPULATE_WRITE,
// Linux 5.14; EINVAL before).
func populateWrite(b []byte) error { return unix.Madvise(b, unix.MADV_POPULATE_WRITE) }

// msync writes the pages of b back, waiting for them (MS_SYNC).
func msync(b []byte) error { return unix.Msync(b, unix.MS_SYNC) }

// fdatasync makes the file's data (and the size) durable.
func fdatasync(fd int) error { return unix.Fdatasync(fd) }

// fallocate allocates blocks for [off, off+n), growing the file if need be;
// errNoFallocate if the file system cannot.
func fallocate(fd int, off, n int64) error {
	err := unix.Fallocate(fd, 0, off, n)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return errNoFallocate
	}
	return err
}

// punchHole deallocates the blocks of [off, off+n), keeping the file's
// size; errNoFallocate if the file system cannot.
func punchHole(fd int, off, n int64) error {
	err := unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return errNoFallocate
	}
	return err
}

// fileSize is the size of the open file.
func fileSize(fd int) (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	return st.Size, nil
}

// sameInode reports whether path names the open file fd; an error wrapping
// os.ErrNotExist if path names nothing.
func sameInode(fd int, path string) (bool, error) {
	var a, b unix.Stat_t
	if err := unix.Fstat(fd, &a); err != nil {
		return false, err
	}
	if err := unix.Stat(path, &b); err != nil {
		return false, err
	}
	return a.Dev == b.Dev && a.Ino == b.Ino, nil
}

// renameNoReplace renames oldpath to newpath only if newpath does not exist
// (an error wrapping os.ErrExist if it does), atomically: RENAME_NOREPLACE
// keeps the file's name in /proc/self/maps, where a link and an unlink would
// leave the deleted temporary one. A file system without it gets the link
// and the unlink.
func renameNoReplace(oldpath, newpath string) error {
	err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) { // not supported by this file system
		if err = os.Link(oldpath, newpath); err == nil {
			os.Remove(oldpath)
		}
	}
	return err
}

// replaceWithZeros maps read-only anonymous pages over b in place (MAP_FIXED
// replaces the old mapping atomically: no thread can see the range
// unmapped; MAP_NORESERVE: nothing committed).
func replaceWithZeros(b []byte) error {
	_, err := unix.MmapPtr(-1, 0, unsafe.Pointer(&b[0]), uintptr(len(b)), unix.PROT_READ,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED|unix.MAP_NORESERVE)
	return err
}
