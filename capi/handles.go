//go:build cgo

package main

/*
#include <stdlib.h>
#define DABLOOMS_TYPES_ONLY
#include "dablooms.h"

#define DABLOOMS_MAX_BLOOMS 64
*/
import "C"

import (
	"errors"
	"math"
	"sync"
	"unsafe"

	"github.com/dablooms/dablooms/scaling"
)

// kind tells the two handle types of the C API apart: a scaling handle
// passed to a counting function (or the reverse) is an error, not a guess.
type kind uint8

const (
	kindScaling kind = iota + 1
	kindCounting
)

func (k kind) String() string {
	if k == kindCounting {
		return "counting_bloom_t"
	}
	return "scaling_bloom_t"
}

// handle is what a C pointer of the API stands for. The pointer is the
// address of a C block laid out as the original's struct of that kind
// (scaling_bloom_t or counting_bloom_t, see dablooms.h), whose fields
// refresh rewrites from the store.
type handle struct {
	f    *scaling.Filter
	kind kind

	mu    sync.Mutex // serialises refresh: snapshots are written in the order taken
	freed bool       // under mu: the C blocks are gone
	// The C blocks of the struct, all owned by the handle and freed with it.
	sc     *C.scaling_bloom_t  // kindScaling
	cb     *C.counting_bloom_t // kindCounting
	bitmap *C.bitmap_t
	blooms []*C.counting_bloom_t // kindScaling: blooms[i], allocated as the chain grows
}

// handles maps the address of a handle's C block to its store. The block is
// C memory (never Go memory, which C must not keep), so the pointer a C
// program holds is an ordinary heap address that no Go pointer check looks
// at. sync.Map: lookups, the per-call path, take no lock.
var handles sync.Map // uintptr → *handle

// ownBitmaps maps the address of a handle's bitmap_t to the handle, for
// bitmap_flush(bloom->bitmap).
var ownBitmaps sync.Map // uintptr → *handle

var errBadHandle = errors.New("not a live handle of this library (NULL, freed, or never returned by it)")

func calloc[T any]() *T {
	var z T
	p := C.calloc(1, C.size_t(unsafe.Sizeof(z)))
	if p == nil {
		panic("dablooms: out of memory")
	}
	return (*T)(p)
}

// newCounting allocates a counting_bloom_t with its header.
func newCounting(bitmap *C.bitmap_t) *C.counting_bloom_t {
	cb := calloc[C.counting_bloom_t]()
	cb.header = calloc[C.counting_bloom_header_t]()
	cb.bitmap = bitmap
	return cb
}

// register returns a new C pointer standing for f, its fields filled in.
func register(f *scaling.Filter, k kind) unsafe.Pointer {
	h := &handle{f: f, kind: k, bitmap: calloc[C.bitmap_t]()}
	h.bitmap.fd = -1
	var p unsafe.Pointer
	if k == kindCounting {
		h.cb = newCounting(h.bitmap)
		p = unsafe.Pointer(h.cb)
	} else {
		h.sc = calloc[C.scaling_bloom_t]()
		h.sc.header = calloc[C.scaling_bloom_header_t]()
		h.sc.blooms = (**C.counting_bloom_t)(C.calloc(C.DABLOOMS_MAX_BLOOMS, C.size_t(unsafe.Sizeof((*C.counting_bloom_t)(nil)))))
		if h.sc.blooms == nil {
			panic("dablooms: out of memory")
		}
		h.sc.bitmap = h.bitmap
		h.sc.fd = -1
		p = unsafe.Pointer(h.sc)
	}
	h.refresh()
	ownBitmaps.Store(uintptr(unsafe.Pointer(h.bitmap)), h)
	handles.Store(uintptr(p), h)
	return p
}

// refresh rewrites the struct's fields from the store, so that they are
// true when the library returns to the caller.
func (h *handle) refresh() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.freed {
		return // freed by another thread during the call
	}
	s := h.f.Stats()
	h.bitmap.bytes = C.size_t(s.FileSize)
	if h.kind == kindCounting {
		if len(s.Filters) > 0 {
			fillCounting(h.cb, &s.Filters[len(s.Filters)-1])
		}
		return
	}
	sc := h.sc
	sc.header.max_id = 0
	for _, fs := range s.Filters {
		if fs.Count > 0 || fs.FirstID != math.MaxUint64 {
			sc.header.max_id = C.uint64_t(max(uint64(sc.header.max_id), fs.LastID))
		}
	}
	sc.header.mem_seqnum = C.uint64_t(s.MemSeqnum)
	sc.header.disk_seqnum = C.uint64_t(s.DiskSeqnum)
	sc.capacity = clampUint(s.Capacity)
	sc.error_rate = C.double(s.ErrorRate)
	sc.num_bytes = C.size_t(s.FileSize)
	blooms := unsafe.Slice(sc.blooms, C.DABLOOMS_MAX_BLOOMS)
	n := min(len(s.Filters), len(blooms))
	for i := range n {
		if blooms[i] == nil {
			blooms[i] = newCounting(h.bitmap)
			h.blooms = append(h.blooms, blooms[i])
		}
		fillCounting(blooms[i], &s.Filters[i])
	}
	for i := n; i < len(blooms); i++ {
		blooms[i] = nil // retired filters: their blocks stay in h.blooms until free
	}
	sc.num_blooms = C.uint(n)
}

func fillCounting(cb *C.counting_bloom_t, fs *scaling.FilterStats) {
	if fs.FirstID == math.MaxUint64 && fs.Count == 0 {
		cb.header.id = 0 // empty
	} else {
		cb.header.id = C.uint64_t(fs.LastID)
	}
	cb.header.count = C.uint32_t(min(fs.Count, math.MaxUint32))
	cb.capacity = clampUint(fs.Capacity)
	cb.offset = C.long(fs.Offset)
	cb.nfuncs = C.size_t(fs.K)
	cb.size = C.size_t(fs.Counters)
	if fs.K > 0 {
		cb.counts_per_func = clampUint(fs.Counters / uint64(fs.K))
	}
	cb.num_bytes = C.size_t(fs.Bytes)
	cb.error_rate = C.double(fs.ErrorTarget)
}

func clampUint(v uint64) C.uint {
	return C.uint(min(v, math.MaxUint32))
}

// lookup returns the handle p stands for, checking its kind.
func lookup(p unsafe.Pointer, k kind) (*handle, error) {
	v, ok := handles.Load(uintptr(p))
	if !ok {
		return nil, errBadHandle
	}
	h := v.(*handle)
	if h.kind != k {
		return nil, errors.New("a " + h.kind.String() + " handle passed where a " + k.String() + " is expected")
	}
	return h, nil
}

// release removes p from the table and frees its blocks. Only the caller
// that removes it closes the store, so a double free is an error, not a
// crash.
func release(p unsafe.Pointer, k kind) (*handle, error) {
	h, err := lookup(p, k)
	if err != nil {
		return nil, err
	}
	if !handles.CompareAndDelete(uintptr(p), h) {
		return nil, errBadHandle // another thread freed it first
	}
	ownBitmaps.Delete(uintptr(unsafe.Pointer(h.bitmap)))
	h.mu.Lock() // a refresh of another thread finishes first
	defer h.mu.Unlock()
	h.freed = true
	freeCounting := func(cb *C.counting_bloom_t) {
		C.free(unsafe.Pointer(cb.header))
		C.free(unsafe.Pointer(cb))
	}
	if h.kind == kindCounting {
		freeCounting(h.cb)
	} else {
		for _, cb := range h.blooms {
			freeCounting(cb)
		}
		C.free(unsafe.Pointer(h.sc.blooms))
		C.free(unsafe.Pointer(h.sc.header))
		C.free(unsafe.Pointer(h.sc))
	}
	C.free(unsafe.Pointer(h.bitmap))
	return h, nil
}
