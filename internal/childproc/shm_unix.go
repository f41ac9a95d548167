//go:build unix

package childproc

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MapShm maps the file at path as at least words words; create makes (or
// truncates) the file first.
func MapShm(path string, words int, create bool) (*Shm, error) {
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, err
	}
	size := (words*8 + 4095) / 4096 * 4096
	if create {
		if err := f.Truncate(int64(size)); err != nil {
			f.Close()
			return nil, err
		}
	}
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Shm{f: f, b: b, w: unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), size/8)}, nil
}

// Close unmaps and closes the file.
func (s *Shm) Close() {
	unix.Munmap(s.b)
	s.f.Close()
}
