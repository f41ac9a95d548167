package mmapfile

import (
	"strings"
	"testing"
)

// TestSweep: Sweep lifts MADV_RANDOM over its range, and only there, until
// done puts it back.
func TestSweep(t *testing.T) {
	const ps = 4096
	if PageSize() != ps {
		t.Skipf("page size %d", PageSize())
	}
	f := mustCreate(t, tmpPath(t), 64*ps, &Options{Reserve: 1 << 20})
	b, err := f.Bytes(0, 64*ps)
	if err != nil {
		t.Fatal(err)
	}
	// MADV_RANDOM is "rr" in the VmFlags of the mapping holding page i.
	random := func(i int) bool { return strings.Contains(vmFlags(t, b[i*ps:])+" ", " rr ") }
	if !random(20) {
		t.Fatal("the mapping is not MADV_RANDOM")
	}
	done := f.Sweep(16*ps+100, 16*ps) // pages 16 to 32, partly
	if random(16) || random(32) {
		t.Error("Sweep left MADV_RANDOM over its range")
	}
	if !random(15) || !random(33) {
		t.Error("Sweep lifted MADV_RANDOM outside its range")
	}
	done()
	for _, p := range []int{15, 16, 24, 32, 33} {
		if !random(p) {
			t.Errorf("page %d is not MADV_RANDOM after done", p)
		}
	}
	f.Close()
	f.Sweep(0, 64*ps)() // closed: nothing to advise, no panic
}
