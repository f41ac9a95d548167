//go:build cgo

package main

/*
#include <stdlib.h>
*/
import "C"

import (
	"errors"
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

// handle is what a C pointer of the API stands for.
type handle struct {
	f    *scaling.Filter
	kind kind
}

// handles maps the address of a handle's C block to its store. The block is
// C memory (never Go memory, which C must not keep), so the pointer a C
// program holds is an ordinary heap address that no Go pointer check looks
// at. sync.Map: lookups, the per-call path, take no lock.
var handles sync.Map // uintptr → *handle

var errBadHandle = errors.New("not a live handle of this library (NULL, freed, or never returned by it)")

// register returns a new C pointer standing for f.
func register(f *scaling.Filter, k kind) unsafe.Pointer {
	p := C.malloc(16)
	if p == nil {
		panic("dablooms: out of memory")
	}
	handles.Store(uintptr(p), &handle{f: f, kind: k})
	return p
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

// release removes p from the table and frees its block. Only the caller that
// removes it closes the store, so a double free is an error, not a crash.
func release(p unsafe.Pointer, k kind) (*handle, error) {
	h, err := lookup(p, k)
	if err != nil {
		return nil, err
	}
	if !handles.CompareAndDelete(uintptr(p), h) {
		return nil, errBadHandle // another thread freed it first
	}
	C.free(p)
	return h, nil
}
