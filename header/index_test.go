package header

import "testing"

// TestIndexProbeGolden pins the late-add index's fingerprint and probe
// start: they are part of the file format (docs/FORMAT.md, Late-add index).
func TestIndexProbeGolden(t *testing.T) {
	for _, c := range []struct {
		h, id, n uint64
		fp       uint32
		slot     uint64
	}{
		{0x0, 0, 1024, 0x365afc61, 398},
		{0x1, 2, 1024, 0xa7ae41de, 150},
		{0x9e3779b97f4a7c15, 12345, 4096, 0x47dc8ecd, 195},
		{0xffffffffffffffff, 9223372036854775807, 1048576, 0x4c87f167, 979860},
		{0x2a, 7, 3, 0xa0786bd1, 2},
	} {
		fp, slot := IndexProbe(c.h, c.id, c.n)
		if fp != c.fp || slot != c.slot {
			t.Errorf("IndexProbe(%#x, %d, %d) = %#x, %d; want %#x, %d (format change?)", c.h, c.id, c.n, fp, slot, c.fp, c.slot)
		}
	}
}

// TestIndexProbeRange: a fingerprint is never empty or cleared, and the
// probe starts inside the table, for every table size.
func TestIndexProbeRange(t *testing.T) {
	for i := range uint64(200_000) {
		n := 1 + i%5000
		fp, slot := IndexProbe(i*0x9E3779B97F4A7C15, i>>3, n)
		if fp <= IndexCleared || slot >= n {
			t.Fatalf("IndexProbe(h%d, n=%d) = %#x, %d", i, n, fp, slot)
		}
	}
}

func TestIndexBytes(t *testing.T) {
	for _, c := range []struct {
		capacity uint64
		want     int64
	}{
		{100, 4096},   // 2 × 117 entries of 4 bytes: one page
		{1000, 12288}, // 2 × 1031 × 4 = 8248 bytes: three pages
	} {
		if got := IndexBytes(c.capacity); got != c.want {
			t.Errorf("IndexBytes(%d) = %d, want %d", c.capacity, got, c.want)
		}
	}
}

// TestScanIndex: a scan counts the pair's entries up to the first empty
// one (past cleared ones and other pairs', wrapping at the end), names
// the first of them and the first free entry, and reads at most
// IndexMaxProbe entries.
func TestScanIndex(t *testing.T) {
	const fp, other = 7, 9
	e := []uint32{fp, IndexEmpty, fp, 3, other, fp, IndexCleared, fp}
	w := ScanIndex(e, fp, 5) // 5, 6, 7, then 0 and the empty 1
	if w != (IndexWindow{Copies: 3, First: 5, Free: 6, FreeV: IndexCleared, HasFree: true}) {
		t.Fatalf("wrapping scan: %+v", w)
	}
	if w := ScanIndex(e, other, 2); w != (IndexWindow{Copies: 1, First: 4, Free: 6, FreeV: IndexCleared, HasFree: true}) {
		t.Fatalf("scan from 2: %+v", w)
	}
	full := make([]uint32, 2*IndexMaxProbe)
	for i := range full {
		full[i] = fp
	}
	full[IndexMaxProbe] = IndexEmpty
	if w := ScanIndex(full, fp, 0); w.Copies != IndexMaxProbe || w.HasFree {
		t.Fatalf("a full window: %+v, want %d copies and no free entry", w, IndexMaxProbe)
	}
}
