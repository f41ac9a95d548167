package mmapfile

import (
	"errors"
	"testing"
)

// Both implement Region, on every platform.
var (
	_ Region = (*File)(nil)
	_ Region = (*Heap)(nil)
)

var errInjected = errors.New("injected")

func TestHeap(t *testing.T) {
	h := NewHeap(4096)
	if h.Size() != 4096 || h.ReadOnly() {
		t.Fatalf("Size %d ReadOnly %v", h.Size(), h.ReadOnly())
	}
	w0, err := h.Words(0, 512)
	if err != nil || len(w0) != 512 {
		t.Fatalf("Words(0, 512) = %d, %v", len(w0), err)
	}
	w0[511] = 7
	if err := h.Grow(8192); err != nil {
		t.Fatal(err)
	}
	if h.Size() != 8192 {
		t.Fatalf("Size %d after Grow", h.Size())
	}
	w1, err := h.Words(4096, 512)
	if err != nil || len(w1) != 512 {
		t.Fatalf("Words of the new chunk = %d, %v", len(w1), err)
	}
	for _, v := range w1 {
		if v != 0 {
			t.Fatal("grown region not zero")
		}
	}
	// Slices handed out before Grow are still the region's memory.
	again, _ := h.Words(4088, 1)
	if again[0] != 7 {
		t.Fatalf("word written before Grow reads %d", again[0])
	}
	again[0] = 9
	if w0[511] != 9 {
		t.Fatal("old slice and new slice do not alias")
	}
	// A range across chunks is refused: each filter must be one chunk.
	if _, err := h.Words(4088, 2); !errors.Is(err, ErrRange) {
		t.Fatalf("Words across chunks = %v, want ErrRange", err)
	}
	if _, err := h.Bytes(4000, 200); !errors.Is(err, ErrRange) {
		t.Fatalf("Bytes across chunks = %v, want ErrRange", err)
	}
	for _, tc := range []struct {
		name   string
		off, n int64
	}{
		{"past end", 8192 - 8, 2}, {"negative", -8, 1}, {"misaligned", 4, 1}, {"huge", 8, 1 << 60},
	} {
		if _, err := h.Words(tc.off, tc.n); !errors.Is(err, ErrRange) {
			t.Errorf("Words %s = %v, want ErrRange", tc.name, err)
		}
	}
	// Bytes of odd length and words alias.
	b, err := h.Bytes(4096, 3)
	if err != nil || len(b) != 3 {
		t.Fatalf("Bytes(4096, 3) = %d, %v", len(b), err)
	}
	b[0] = 0xAB
	if w1[0] != 0xAB {
		t.Fatalf("Bytes and Words do not alias (little-endian): %#x", w1[0])
	}
	// Grow never shrinks.
	if err := h.Grow(100); err != nil || h.Size() != 8192 {
		t.Fatalf("Grow smaller: %v, size %d", err, h.Size())
	}
}

func TestHeapSync(t *testing.T) {
	h := NewHeap(4096)
	if err := h.Sync(0, 4096); err != nil {
		t.Fatal(err)
	}
	var got [2]int64
	calls := 0
	h.OnSync = func(off, n int64) error { calls++; got = [2]int64{off, n}; return errInjected }
	if err := h.Sync(64, 128); !errors.Is(err, errInjected) || calls != 1 || got != [2]int64{64, 128} {
		t.Fatalf("Sync with hook = %v, calls %d, args %v", err, calls, got)
	}
	if err := h.Sync(4000, 200); !errors.Is(err, ErrRange) || calls != 1 {
		t.Fatalf("Sync past the end = %v (hook calls %d)", err, calls)
	}
}

func TestHeapClose(t *testing.T) {
	checkClose(t, NewHeap(4096))
}

// checkClose closes r, a region of 8 to 8191 bytes, twice without error,
// then checks that each of Region's methods that take the region refuses
// with ErrClosed.
func checkClose(t *testing.T, r Region) {
	t.Helper()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := r.Words(0, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Words after Close: %v", err)
	}
	if _, err := r.Bytes(0, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Bytes after Close: %v", err)
	}
	if err := r.Grow(8192); !errors.Is(err, ErrClosed) {
		t.Fatalf("Grow after Close: %v", err)
	}
	if err := r.Sync(0, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sync after Close: %v", err)
	}
}

func TestHeapEmpty(t *testing.T) {
	h := NewHeap(0)
	if h.Size() != 0 {
		t.Fatal("size")
	}
	if _, err := h.Words(0, 1); !errors.Is(err, ErrRange) {
		t.Fatalf("Words of an empty heap: %v", err)
	}
	if err := h.Grow(1024); err != nil {
		t.Fatal(err)
	}
	if w, err := h.Words(0, 128); err != nil || len(w) != 128 {
		t.Fatalf("Words after growing an empty heap: %d, %v", len(w), err)
	}
}

func TestHeapReplaceAndDiscard(t *testing.T) {
	h := NewHeap(4096)
	if err := h.Grow(3 * 4096); err != nil { // chunks [0,4096) and [4096,12288)
		t.Fatal(err)
	}
	old, err := h.Words(4096, 1024)
	if err != nil {
		t.Fatal(err)
	}
	for i := range old {
		old[i] = 7
	}
	// A range over both chunks and past the end becomes one chunk.
	if err := h.Replace(2048, 12288); err != nil {
		t.Fatal(err)
	}
	if h.Size() != 2048+12288 {
		t.Fatalf("size %d", h.Size())
	}
	w, err := h.Words(2048, 12288/8)
	if err != nil {
		t.Fatalf("the replaced range is not one chunk: %v", err)
	}
	for i, v := range w {
		if v != 0 {
			t.Fatalf("word %d of the new chunk = %d, want 0", i, v)
		}
	}
	if old[0] != 7 {
		t.Fatal("a slice handed out before Replace changed")
	}
	if _, err := h.Words(0, 256); err != nil {
		t.Fatalf("the kept part of the first chunk: %v", err)
	}
	w[5] = 9
	if err := h.Discard(2048, 4096); err != nil || w[5] != 0 {
		t.Fatalf("Discard: %v, word %d", err, w[5])
	}
	if err := h.Replace(1<<20, 4096); err == nil {
		t.Fatal("Replace beyond the end succeeded")
	}
}

// plainRegion hides Heap's Discard: a Region that cannot give storage back.
type plainRegion struct{ Region }

func TestZero(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    func(h *Heap) Region
	}{{"Discarder", func(h *Heap) Region { return h }}, {"plain Region", func(h *Heap) Region { return plainRegion{h} }}} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHeap(4096)
			w, err := h.Words(0, 512)
			if err != nil {
				t.Fatal(err)
			}
			for i := range w {
				w[i] = ^uint64(0)
			}
			if err := Zero(tc.r(h), 1024, 2048); err != nil {
				t.Fatal(err)
			}
			for i, v := range w {
				want := ^uint64(0)
				if i >= 128 && i < 384 {
					want = 0
				}
				if v != want {
					t.Fatalf("word %d = %#x after Zero, want %#x", i, v, want)
				}
			}
			if err := Zero(tc.r(h), 4000, 1024); err == nil {
				t.Fatal("Zero past the end succeeded")
			}
		})
	}
}
