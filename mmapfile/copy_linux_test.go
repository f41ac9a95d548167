package mmapfile

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// CopySparse copies every byte and keeps the source's holes: a 4 MiB file
// with two 4 KiB blocks of data copies to the same bytes in about 8 KiB of
// disk, where a plain copy would take 4 MiB.
func TestCopySparse(t *testing.T) {
	dir := t.TempDir()
	src, err := os.Create(filepath.Join(dir, "src"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	const size = 4 << 20
	data := bytes.Repeat([]byte{0xAB}, 4096)
	for _, off := range []int64{0, 1 << 20} {
		if _, err := src.WriteAt(data, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{size, 1<<20 + 100, 10} { // the whole file, and prefixes ending in data
		dst, err := os.Create(filepath.Join(dir, "dst"))
		if err != nil {
			t.Fatal(err)
		}
		if err := CopySparse(dst, src, n); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(dst.Name())
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, n)
		if _, err := src.ReadAt(want, 0); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("copy of %d bytes differs from the source", n)
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(dst.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		if n == size && st.Blocks*512 > 256<<10 {
			t.Errorf("the copy of a file with 8 KiB of data takes %d bytes of disk: its holes were written", st.Blocks*512)
		}
		dst.Close()
	}
}
