package scaling

import (
	"os"
	"testing"
	"unsafe"

	"github.com/dablooms/dablooms/header"
	"golang.org/x/sys/unix"
)

// Page-cache helpers of the cold-lookup benchmarks: Linux only.

// evictPageCache drops the file's (clean) pages from the page cache.
func evictPageCache(b *testing.B, path string) {
	fd, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer fd.Close()
	if err := fd.Sync(); err != nil {
		b.Fatal(err)
	}
	if err := unix.Fadvise(int(fd.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		b.Fatal(err)
	}
}

// touchHeader maps the file and reads one byte of the hot page.
func touchHeader(b *testing.B, path string) {
	fd, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer fd.Close()
	m, err := unix.Mmap(int(fd.Fd()), 0, header.DataOffset, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Munmap(m)
	evictSink += m[header.HotOffset]
}

var evictSink byte

// residentPages counts the pages of [off, off+n) of the file that are in
// the page cache (mincore on a fresh read-only mapping, which itself reads
// nothing).
func residentPages(path string, off, n int64) (int, error) {
	fd, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer fd.Close()
	m, err := unix.Mmap(int(fd.Fd()), off, int(n), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, err
	}
	defer unix.Munmap(m)
	ps := os.Getpagesize()
	vec := make([]byte, (len(m)+ps-1)/ps)
	// x/sys/unix has no mincore wrapper on Linux.
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return 0, e
	}
	resident := 0
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident, nil
}
