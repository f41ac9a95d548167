//go:build cgo

// Command capi is the C library of dablooms: built with
//
//	go build -buildmode=c-shared -o libdablooms.so ./capi
//
// it exports the public functions of the original dablooms 0.9.1 dablooms.h
// (same names, argument types and return conventions; see dablooms.h here)
// over package scaling, so that a C program or the pydablooms module written
// against the original runs on this store. See README.md.
package main

/*
#include <stdint.h>
#include <stdlib.h>
#define DABLOOMS_TYPES_ONLY
#include "dablooms.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/dablooms/dablooms/internal/version"
	"github.com/dablooms/dablooms/scaling"
)

// APIVersion is the original's API version, and that this library
// implements it: dablooms_version() starts with it.
const APIVersion = "0.9.1+go"

// versionC is what dablooms_version returns: APIVersion, then this build's
// module version, VCS revision, Go version and file format versions, as
// dabloomsctl version prints them. It lives as long as the library.
var versionC = C.CString(APIVersion + " (" + version.Get().String() + ")")

func main() {}

// key returns the C bytes s[0:n] without copying: the store only hashes them.
func key(s *C.char, n C.size_t) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	if s == nil {
		return nil, errors.New("key is NULL with a non-zero length")
	}
	if uint64(n) > uint64(^uint(0)>>1) {
		return nil, fmt.Errorf("key length %d is too large", uint64(n))
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(s)), int(n)), nil
}

func path(filename *C.char) (string, error) {
	if filename == nil {
		return "", errors.New("filename is NULL")
	}
	return C.GoString(filename), nil
}

// openFailed records a failed new_* call: the thread's error text, and on
// stderr, where the original printed why an open failed.
func openFailed(fn string, err error, path string, k kind) {
	setFileError(fn, err, path, k)
	fmt.Fprintf(os.Stderr, "dablooms: %s: %s\n", fn, message(err, path, k))
}

func newStore(fn string, capacity C.uint, errorRate C.double, filename *C.char, k kind, existing bool) unsafe.Pointer {
	if existing {
		setConversion("")
	}
	p, err := path(filename)
	if err != nil {
		openFailed(fn, err, "", k)
		return nil
	}
	var f *scaling.Filter
	if existing {
		var notice string
		f, notice, err = openStore(p, uint64(capacity), float64(errorRate), k)
		setConversion(notice)
	} else {
		f, err = createStore(p, uint64(capacity), float64(errorRate), k)
	}
	if err != nil {
		openFailed(fn, err, p, k)
		return nil
	}
	return register(f, k, p)
}

func free(fn string, p unsafe.Pointer, k kind) C.int {
	if p == nil {
		return 0 // as free(NULL)
	}
	h, err := release(p, k)
	if err != nil {
		setError(fn, err)
		return -1
	}
	if err = h.f.Close(); err != nil {
		h.fail(fn, err)
		return -1
	}
	return 0
}

// modify runs Add or Remove on the store of p.
func modify(fn string, p unsafe.Pointer, k kind, s *C.char, n C.size_t, id uint64, add bool) bool {
	h, err := lookup(p, k)
	if err == nil {
		var b []byte
		if b, err = key(s, n); err == nil {
			h.beginModify()
			if add {
				err = h.f.Add(b, id)
			} else {
				err = h.f.Remove(b, id)
			}
			h.refreshAfter(err == nil)
			if err != nil {
				h.fail(fn, err)
				return false
			}
			return true
		}
	}
	setError(fn, err)
	return false
}

// check returns 1 or 0, or -1 (non-zero: "maybe present", never a false
// negative) when it cannot look.
func check(fn string, p unsafe.Pointer, k kind, s *C.char, n C.size_t) C.int {
	h, err := lookup(p, k)
	if err == nil {
		var b []byte
		if b, err = key(s, n); err == nil {
			if h.f.Contains(b) {
				return 1
			}
			return 0
		}
	}
	setError(fn, err)
	return -1
}

//export dablooms_version
func dablooms_version() *C.char { return versionC }

//export new_scaling_bloom
func new_scaling_bloom(capacity C.uint, errorRate C.double, filename *C.char) *C.scaling_bloom_t {
	return (*C.scaling_bloom_t)(newStore("new_scaling_bloom", capacity, errorRate, filename, kindScaling, false))
}

//export new_scaling_bloom_from_file
func new_scaling_bloom_from_file(capacity C.uint, errorRate C.double, filename *C.char) *C.scaling_bloom_t {
	return (*C.scaling_bloom_t)(newStore("new_scaling_bloom_from_file", capacity, errorRate, filename, kindScaling, true))
}

//export free_scaling_bloom
func free_scaling_bloom(bloom *C.scaling_bloom_t) C.int {
	return free("free_scaling_bloom", unsafe.Pointer(bloom), kindScaling)
}

//export scaling_bloom_add
func scaling_bloom_add(bloom *C.scaling_bloom_t, s *C.char, n C.size_t, id C.uint64_t) C.int {
	if modify("scaling_bloom_add", unsafe.Pointer(bloom), kindScaling, s, n, uint64(id), true) {
		return 1
	}
	return 0
}

//export scaling_bloom_remove
func scaling_bloom_remove(bloom *C.scaling_bloom_t, s *C.char, n C.size_t, id C.uint64_t) C.int {
	if modify("scaling_bloom_remove", unsafe.Pointer(bloom), kindScaling, s, n, uint64(id), false) {
		return 1
	}
	return 0
}

//export scaling_bloom_check
func scaling_bloom_check(bloom *C.scaling_bloom_t, s *C.char, n C.size_t) C.int {
	return check("scaling_bloom_check", unsafe.Pointer(bloom), kindScaling, s, n)
}

//export scaling_bloom_flush
func scaling_bloom_flush(bloom *C.scaling_bloom_t) C.int {
	h, err := lookup(unsafe.Pointer(bloom), kindScaling)
	if err == nil {
		err = h.f.Flush()
		h.refreshCounted()
		if err != nil {
			h.fail("scaling_bloom_flush", err)
			return -1
		}
		return 0
	}
	setError("scaling_bloom_flush", err)
	return -1
}

//export scaling_bloom_mem_seqnum
func scaling_bloom_mem_seqnum(bloom *C.scaling_bloom_t) C.uint64_t {
	mem, _ := seqnums("scaling_bloom_mem_seqnum", unsafe.Pointer(bloom))
	return mem
}

//export scaling_bloom_disk_seqnum
func scaling_bloom_disk_seqnum(bloom *C.scaling_bloom_t) C.uint64_t {
	_, disk := seqnums("scaling_bloom_disk_seqnum", unsafe.Pointer(bloom))
	return disk
}

// seqnums counts mem_seqnum, reads disk_seqnum and writes both in the
// header, which then says what the function returns; 0 ("not known
// consistent") when it cannot read them.
func seqnums(fn string, p unsafe.Pointer) (mem, disk C.uint64_t) {
	h, err := lookup(p, kindScaling)
	if err != nil {
		setError(fn, err)
		return 0, 0
	}
	m, d := h.refreshCounted()
	return C.uint64_t(m), C.uint64_t(d)
}

// The counting functions use id 0 for every Add and Remove: the store has
// one filter, which every id routes to.

//export new_counting_bloom
func new_counting_bloom(capacity C.uint, errorRate C.double, filename *C.char) *C.counting_bloom_t {
	return (*C.counting_bloom_t)(newStore("new_counting_bloom", capacity, errorRate, filename, kindCounting, false))
}

//export new_counting_bloom_from_file
func new_counting_bloom_from_file(capacity C.uint, errorRate C.double, filename *C.char) *C.counting_bloom_t {
	return (*C.counting_bloom_t)(newStore("new_counting_bloom_from_file", capacity, errorRate, filename, kindCounting, true))
}

//export free_counting_bloom
func free_counting_bloom(bloom *C.counting_bloom_t) C.int {
	return free("free_counting_bloom", unsafe.Pointer(bloom), kindCounting)
}

//export counting_bloom_add
func counting_bloom_add(bloom *C.counting_bloom_t, s *C.char, n C.size_t) C.int {
	if modify("counting_bloom_add", unsafe.Pointer(bloom), kindCounting, s, n, 0, true) {
		return 0
	}
	return -1
}

//export counting_bloom_remove
func counting_bloom_remove(bloom *C.counting_bloom_t, s *C.char, n C.size_t) C.int {
	if modify("counting_bloom_remove", unsafe.Pointer(bloom), kindCounting, s, n, 0, false) {
		return 0
	}
	return -1
}

//export counting_bloom_check
func counting_bloom_check(bloom *C.counting_bloom_t, s *C.char, n C.size_t) C.int {
	return check("counting_bloom_check", unsafe.Pointer(bloom), kindCounting, s, n)
}
