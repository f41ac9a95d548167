package mmapfile

import (
	"fmt"
	"sync"
)

// Heap is a Region in ordinary memory. Each Grow (and Replace) adds a
// chunk, so slices handed out never move; a range must lie within one chunk
// (the store grows one filter at a time, so each filter is one chunk).
type Heap struct {
	mu     sync.Mutex
	chunks []heapChunk
	size   int64
	closed bool
	// OnSync, if set, is called by Sync (tests use it to model durability).
	OnSync func(off, n int64) error
}

type heapChunk struct {
	off int64
	w   []uint64
}

// NewHeap returns a heap region of size bytes (a multiple of 8).
func NewHeap(size int64) *Heap {
	h := &Heap{}
	if size > 0 {
		h.chunks = []heapChunk{{0, make([]uint64, size/8)}}
		h.size = size
	}
	return h
}

func (h *Heap) Size() int64 { h.mu.Lock(); defer h.mu.Unlock(); return h.size }

func (h *Heap) ReadOnly() bool { return false }

func (h *Heap) find(off, n int64) ([]uint64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if err := checkRange(off, n, h.size); err != nil {
		return nil, err
	}
	for _, c := range h.chunks {
		end := c.off + int64(len(c.w))*8
		if off >= c.off && off+n <= end {
			if (off-c.off)%8 != 0 {
				return nil, fmt.Errorf("%w: offset %d not 8-byte aligned", ErrRange, off)
			}
			i := (off - c.off) / 8
			return c.w[i : i+(n+7)/8 : i+(n+7)/8], nil
		}
	}
	return nil, fmt.Errorf("%w: [%d, +%d) spans heap chunks", ErrRange, off, n)
}

func (h *Heap) Words(off, n int64) ([]uint64, error) { return h.find(off, n*8) }

func (h *Heap) Bytes(off, n int64) ([]byte, error) {
	w, err := h.find(off, n)
	if err != nil {
		return nil, err
	}
	return asBytes(w)[:n], nil
}

func (h *Heap) Grow(size int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	if size <= h.size {
		return nil
	}
	h.chunks = append(h.chunks, heapChunk{h.size, make([]uint64, (size-h.size+7)/8)})
	h.size = size
	return nil
}

// Replace gives [off, off+n) new zeroed memory as one chunk, growing the
// heap if it reaches past the end (off and n multiples of 8, off within the
// heap). Chunks it overlaps keep their other parts; slices already handed
// out of the replaced range stay readable and hold what they held (a
// lookup racing a reuse reads the old bytes, never the new).
func (h *Heap) Replace(off, n int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	if off < 0 || n <= 0 || off%8 != 0 || n%8 != 0 || off > h.size {
		return fmt.Errorf("%w: cannot replace [%d, +%d) of %d bytes", ErrRange, off, n, h.size)
	}
	end := off + n
	var kept []heapChunk
	for _, c := range h.chunks {
		cend := c.off + int64(len(c.w))*8
		if cend <= off || c.off >= end {
			kept = append(kept, c)
			continue
		}
		if c.off < off {
			k := (off - c.off) / 8
			kept = append(kept, heapChunk{c.off, c.w[:k:k]})
		}
		if cend > end {
			kept = append(kept, heapChunk{end, c.w[(end-c.off)/8:]})
		}
	}
	h.chunks = append(kept, heapChunk{off, make([]uint64, n/8)})
	h.size = max(h.size, end)
	return nil
}

// Discard zeroes [off, off+n) with atomic stores (lookups may still read
// it), word by word; off and n must be multiples of 8.
func (h *Heap) Discard(off, n int64) error {
	w, err := h.Words(off, n/8)
	if err != nil {
		return err
	}
	zeroWords(w)
	return nil
}

func (h *Heap) Sync(off, n int64) error {
	h.mu.Lock()
	closed, size, hook := h.closed, h.size, h.OnSync
	h.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if err := checkRange(off, n, size); err != nil {
		return err
	}
	if hook != nil {
		return hook(off, n)
	}
	return nil
}

// Detach is Close: slices handed out stay valid (they are ordinary memory).
func (h *Heap) Detach() error { return h.Close() }

func (h *Heap) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	return nil
}
