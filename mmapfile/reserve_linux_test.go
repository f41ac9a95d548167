package mmapfile

import (
	"errors"
	"math/bits"
	"os"
	"testing"
)

// The default reservation fits the address space: 64 GiB where pointers
// have 64 bits, at most MaxReserve32 on 32-bit platforms (GOARCH=386 in
// CI), where 64 GiB made every Create and Open fail.
func TestDefaultReserveFitsAddressSpace(t *testing.T) {
	want := int64(64 << 30)
	if bits.UintSize == 32 {
		want = 256 << 20
	}
	if DefaultReserve != want {
		t.Fatalf("DefaultReserve = %d on a %d-bit platform, want %d", DefaultReserve, bits.UintSize, want)
	}
	f := mustCreate(t, tmpPath(t), 4096, nil)
	if got := int64(len(f.m)); got != want {
		t.Errorf("Create with the default reservation mapped %d bytes, want %d", got, want)
	}
	// A Reserve larger than a 32-bit process can map is reduced there.
	g := mustCreate(t, tmpPath(t), 4096, &Options{Reserve: 4 << 30})
	want = 4 << 30
	if bits.UintSize == 32 {
		want = MaxReserve32
	}
	if got := int64(len(g.m)); got != want {
		t.Errorf("Create with Reserve 4 GiB mapped %d bytes, want %d", got, want)
	}
}

// A file larger than a 32-bit process can map fails to open with
// ErrTooLarge, which says so; a 64-bit process maps it.
func TestOpenLargerThanAddressSpace(t *testing.T) {
	path := tmpPath(t)
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 3<<30); err != nil { // sparse: no blocks
		t.Fatal(err)
	}
	f, err := Open(path, &Options{ReadOnly: true})
	if bits.UintSize == 32 {
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("Open of a 3 GiB file on a 32-bit platform: %v, want ErrTooLarge", err)
		}
		t.Logf("as expected: %v", err)
		return
	}
	if err != nil {
		t.Fatalf("Open of a 3 GiB file on a 64-bit platform: %v", err)
	}
	f.Close()
}
