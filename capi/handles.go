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
	"sync/atomic"
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
// fill rewrites from the store.
type handle struct {
	f    *scaling.Filter
	kind kind
	path string // as the caller named the file, for error texts

	mu    sync.Mutex       // serialises refresh: snapshots are written in the order taken
	freed bool             // under mu: the C blocks are gone
	snap  scaling.Snapshot // under mu: refresh's buffer, reused

	// The header's mem_seqnum (kindScaling; see count and README.md,
	// "Differences from the original"). Counting every writer record of
	// the file costs microseconds, so it is counted at the calls that
	// report seqnums (constructors, flushes, the seqnum functions) and
	// then advanced by one per modification this handle completes.
	started  atomic.Uint64 // modifications begun through this handle (beginModify)
	finished uint64        // under mu: those whose refresh has run
	mem      uint64        // under mu: the last count, plus this handle's modifications since
	known    bool          // under mu: mem is a count; false: 0, "not known" (as MemSeqnum's 0)
	recount  bool          // under mu: the last count ran beside a modification of this handle
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

// register returns a new C pointer standing for f, the file at path, its
// fields filled in.
func register(f *scaling.Filter, k kind, path string) unsafe.Pointer {
	h := &handle{f: f, kind: k, path: path, bitmap: calloc[C.bitmap_t]()}
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
	h.refreshCounted()
	ownBitmaps.Store(uintptr(unsafe.Pointer(h.bitmap)), h)
	handles.Store(uintptr(p), h)
	return p
}

// beginModify starts a modification through h: call it before the store's
// Add or Remove, and refreshAfter once it has returned.
func (h *handle) beginModify() {
	if h.kind == kindScaling {
		h.started.Add(1)
	}
}

// refreshAfter rewrites the struct's fields after a modification begun with
// beginModify (ok: it succeeded), so that they are true when the library
// returns. It costs a scaling.Filter.Snapshot (tens of ns): mem_seqnum
// is advanced by one for a modification that succeeded rather than
// counted again, except that after a count that ran beside this handle's
// own modifications, the first refresh that finds none of them running
// counts again.
func (h *handle) refreshAfter(ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.freed {
		return // freed by another thread during the call
	}
	if h.kind == kindScaling {
		h.finished++
		switch {
		case h.recount:
			if h.started.Load() == h.finished {
				h.count()
			}
		case h.known && ok:
			h.mem++
		}
	}
	h.fill()
}

// refreshCounted rewrites the struct's fields with mem_seqnum counted
// exactly, and returns the count and disk_seqnum it wrote (0, 0 if h was
// freed meanwhile).
func (h *handle) refreshCounted() (mem, disk uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.freed {
		return 0, 0
	}
	if h.kind == kindScaling {
		mem = h.count()
	}
	h.fill()
	return mem, h.snap.DiskSeqnum
}

// count sets mem to mem_seqnum as scaling.Filter.MemSeqnum counts it (every
// handle's modifications; 0, not known, while one is in flight or was
// interrupted, unless the file is clean) and returns it. A
// modification of this handle that began before the count and has not
// refreshed yet may be in it or not: then mem is not advanced for it, and
// the count is taken again when no modification of this handle is running.
// One that begins after the count has read started is not in it: its
// record is written after started is incremented, so after the count's last
// read. Under mu.
func (h *handle) count() uint64 {
	s0 := h.started.Load()
	v := h.f.MemSeqnum()
	known := v != 0
	if !known {
		// An operation in flight or interrupted, or none completed yet. A
		// clean file has changed since no flush: its count is disk_seqnum.
		h.f.Snapshot(&h.snap)
		if h.snap.Clean {
			v, known = h.snap.DiskSeqnum, true
		}
	}
	quiet := s0 == h.finished && h.started.Load() == s0
	h.mem, h.known, h.recount = v, known, !quiet
	return v
}

// fill rewrites the fields from a snapshot of the store (under mu). Where
// the snapshot fails (the Filter closed), it keeps what it has.
func (h *handle) fill() {
	s := &h.snap
	h.f.Snapshot(s)
	h.bitmap.bytes = C.size_t(s.FileSize)
	if h.kind == kindCounting {
		if len(s.Filters) > 0 {
			fillCounting(h.cb, &s.Filters[len(s.Filters)-1])
		}
		return
	}
	sc := h.sc
	sc.header.max_id = 0
	for i := range s.Filters {
		if fs := &s.Filters[i]; fs.Count > 0 || fs.FirstID != math.MaxUint64 {
			sc.header.max_id = C.uint64_t(max(uint64(sc.header.max_id), fs.LastID))
		}
	}
	sc.header.mem_seqnum = 0
	if h.known {
		sc.header.mem_seqnum = C.uint64_t(h.mem)
	}
	sc.header.disk_seqnum = C.uint64_t(s.DiskSeqnum)
	p := h.f.Params()
	sc.capacity = clampUint(p.Capacity)
	sc.error_rate = C.double(p.ErrorRate)
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
		if blooms[i] == nil {
			break // never set past here
		}
		blooms[i] = nil // retired filters: their blocks stay in h.blooms until free
	}
	sc.num_blooms = C.uint(n)
}

func fillCounting(cb *C.counting_bloom_t, fs *scaling.FilterSnapshot) {
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

// fail records err of a call fn on h's file as the thread's error text.
func (h *handle) fail(fn string, err error) { setFileError(fn, err, h.path, h.kind) }

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
