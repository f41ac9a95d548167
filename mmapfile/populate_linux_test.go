package mmapfile

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/dablooms/dablooms/internal/failpoint"
	"golang.org/x/sys/unix"
)

// resident counts the pages of b in memory (mincore).
func resident(t *testing.T, b []byte) int {
	t.Helper()
	ps := int(PageSize())
	vec := make([]byte, (len(b)+ps-1)/ps)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// needPopulate skips the test on a kernel without MADV_POPULATE_WRITE
// (before 5.14), where Populate is meant to do nothing.
func needPopulate(t *testing.T) {
	t.Helper()
	b, err := unix.Mmap(-1, 0, int(PageSize()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	if err := populateWrite(b); err != nil {
		t.Skipf("this kernel has no MADV_POPULATE_WRITE (%v)", err)
	}
}

// TestPopulate: with Options.Populate the pages of the file Create makes
// are in memory when it returns, and without it they are not; a growth
// and an Allocate are not populated (they run under the callers' locks),
// and a hole stays a hole; what is written through the mapping is in the
// file.
func TestPopulate(t *testing.T) {
	needPopulate(t)
	const ps = 4096
	if PageSize() != ps {
		t.Skipf("page size %d", PageSize())
	}
	for _, pop := range []bool{false, true} {
		t.Run(fmt.Sprint("Populate=", pop), func(t *testing.T) {
			path := tmpPath(t)
			f := mustCreate(t, path, 16*ps, &Options{Reserve: 1 << 20, Populate: pop})
			all, err := f.Bytes(0, 64*ps)
			if err != nil {
				t.Fatal(err)
			}
			want := func(what string, lo, hi, n int) {
				t.Helper()
				if got := resident(t, all[lo*ps:hi*ps]); got != n {
					t.Fatalf("%s: %d of pages [%d, %d) in memory, want %d", what, got, lo, hi, n)
				}
			}
			if pop {
				want("after Create", 0, 16, 16)
			} else {
				want("after Create", 0, 16, 0)
			}
			// Pages 16-31 allocated, 32-47 a hole.
			if err := f.GrowSparse(48*ps, 32*ps); err != nil {
				t.Fatal(err)
			}
			want("the allocated part of a growth", 16, 32, 0)
			want("the hole of a growth", 32, 48, 0)
			var st unix.Stat_t
			if err := unix.Stat(path, &st); err != nil {
				t.Fatal(err)
			}
			if st.Blocks*512 > 40*ps {
				t.Fatalf("%d bytes allocated after GrowSparse(48 pages, 32): the hole was filled", st.Blocks*512)
			}
			if err := f.Allocate(32*ps, 8*ps); err != nil {
				t.Fatal(err)
			}
			want("an Allocate", 32, 48, 0)
			for i := 0; i < 40*ps; i += 1000 {
				all[i] = byte(i / 1000)
			}
			if err := f.Sync(0, 40*ps); err != nil {
				t.Fatal(err)
			}
			disk, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(disk[:40*ps], all[:40*ps]) {
				t.Fatal("the file differs from what was written through the mapping")
			}
		})
	}
}

// TestPopulateRefused: where the kernel refuses MADV_POPULATE_WRITE (the
// failpoint stands for a kernel older than 5.14), Create succeeds as
// without the option, and the pages fault in as they are used.
func TestPopulateRefused(t *testing.T) {
	const ps = 4096
	fp := &failpoint.Points{Populate: func() error { return unix.EINVAL }}
	path := tmpPath(t)
	f := mustCreate(t, path, 12*ps, &Options{Reserve: 1 << 20, Populate: true, failpoints: fp})
	all, err := f.Bytes(0, 12*ps)
	if err != nil {
		t.Fatal(err)
	}
	if n := resident(t, all); n != 0 {
		t.Fatalf("%d pages in memory though populate was refused", n)
	}
	for i := range all {
		all[i] = byte(i)
	}
	if err := f.Sync(0, 12*ps); err != nil {
		t.Fatal(err)
	}
	disk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(disk, all) {
		t.Fatal("the file differs from what was written through the mapping")
	}
}

// vmFlags returns the VmFlags line of the mapping that holds b[0].
func vmFlags(t *testing.T, b []byte) string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := uintptr(unsafe.Pointer(&b[0]))
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		// A mapping's first line: "lo-hi perms offset dev inode [path]".
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(l, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= a && a < hi
		}
		if in && strings.HasPrefix(l, "VmFlags:") {
			return l
		}
	}
	t.Fatalf("no mapping holds %#x in /proc/self/smaps", a)
	return ""
}

// TestHugePages: Options.HugePages marks the mapping for huge pages (hg
// in its VmFlags), on Create, on Open and on a mapping made again after
// the file outgrew its reservation; without it the mapping is not marked.
// Data round-trips either way.
func TestHugePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); err != nil {
		t.Skip("no transparent huge pages in this kernel")
	}
	for _, huge := range []bool{false, true} {
		t.Run(fmt.Sprint("HugePages=", huge), func(t *testing.T) {
			hasHg := func(what string, f *File) {
				t.Helper()
				b, err := f.Bytes(0, 8)
				if err != nil {
					t.Fatal(err)
				}
				fl := vmFlags(t, b)
				if got := strings.Contains(fl+" ", " hg "); got != huge {
					t.Fatalf("%s: %q: hg is %v, want %v", what, fl, got, huge)
				}
			}
			path := tmpPath(t)
			o := &Options{Reserve: 4 << 20, HugePages: huge}
			f := mustCreate(t, path, 1<<20, o)
			hasHg("Create", f)
			b, err := f.Bytes(0, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			for i := range b {
				b[i] = byte(i * 7)
			}
			g := mustOpen(t, path, o)
			hasHg("Open", g)
			// Another handle grows the file past g's reservation.
			if err := f.Grow(8 << 20); err != nil {
				t.Fatal(err)
			}
			if _, err := g.Refresh(); err != nil {
				t.Fatal(err)
			}
			hasHg("the mapping made again after a growth", g)
			gb, err := g.Bytes(0, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gb, b) {
				t.Fatal("the second handle reads other bytes than the first wrote")
			}
		})
	}
}
