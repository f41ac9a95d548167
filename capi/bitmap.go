//go:build cgo

package main

/*
#include <stdlib.h>
#define DABLOOMS_TYPES_ONLY
#include "dablooms.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"unsafe"
)

// The original's bitmap_* functions. A handle's bitmap (bloom->bitmap) is a
// description of the file, not its counters: bitmap_flush flushes the file,
// and the functions that would read or write counters at the original's
// offsets refuse it. A bitmap the caller makes with new_bitmap over a
// descriptor of its own is a plain memory-mapped array of 4-bit counters,
// as the original's was.

// plainBitmap is a bitmap made by new_bitmap.
type plainBitmap struct {
	mu  sync.Mutex
	mem []byte // the mapping
}

var plainBitmaps sync.Map // uintptr (the bitmap_t block) → *plainBitmap

var errOwnBitmap = errors.New("this is a handle's bitmap: its counters are not at the original's offsets; use the handle's functions (scaling_bloom_add, _remove, _check)")

var errBadBitmap = errors.New("not a live bitmap of this library (NULL, freed, or never returned by new_bitmap)")

// mapFD grows fd's file to n bytes if it is shorter and maps n bytes of it.
func mapFD(fd C.int, n C.size_t) ([]byte, error) {
	if n == 0 || uint64(n) > uint64(^uint(0)>>1) {
		return nil, fmt.Errorf("size %d: must be between 1 and %d bytes", uint64(n), uint64(^uint(0)>>1))
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(fd), &st); err != nil {
		return nil, fmt.Errorf("descriptor %d: %w", int(fd), err)
	}
	if st.Size < int64(n) {
		if err := syscall.Ftruncate(int(fd), int64(n)); err != nil {
			return nil, fmt.Errorf("growing the file of descriptor %d to %d bytes: %w", int(fd), uint64(n), err)
		}
	}
	mem, err := syscall.Mmap(int(fd), 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping %d bytes of descriptor %d: %w", uint64(n), int(fd), err)
	}
	return mem, nil
}

//export new_bitmap
func new_bitmap(fd C.int, bytes C.size_t) *C.bitmap_t {
	mem, err := mapFD(fd, bytes)
	if err != nil {
		setError("new_bitmap", err)
		return nil
	}
	b := calloc[C.bitmap_t]()
	b.bytes, b.fd, b.array = bytes, fd, (*C.char)(unsafe.Pointer(unsafe.SliceData(mem)))
	plainBitmaps.Store(uintptr(unsafe.Pointer(b)), &plainBitmap{mem: mem})
	return b
}

// plain returns the plain bitmap b stands for, or why it cannot.
func plain(b *C.bitmap_t) (*plainBitmap, error) {
	if v, ok := plainBitmaps.Load(uintptr(unsafe.Pointer(b))); ok {
		return v.(*plainBitmap), nil
	}
	if _, ok := ownBitmaps.Load(uintptr(unsafe.Pointer(b))); ok {
		return nil, errOwnBitmap
	}
	return nil, errBadBitmap
}

//export bitmap_resize
func bitmap_resize(b *C.bitmap_t, oldSize, newSize C.size_t) *C.bitmap_t {
	p, err := plain(b)
	if err == nil {
		p.mu.Lock()
		var mem []byte
		if mem, err = mapFD(b.fd, newSize); err == nil {
			syscall.Munmap(p.mem)
			p.mem = mem
			b.bytes, b.array = newSize, (*C.char)(unsafe.Pointer(unsafe.SliceData(mem)))
		}
		p.mu.Unlock()
		if err != nil {
			free_bitmap(b) // as the original: a failed resize frees the bitmap
		}
	}
	if err != nil {
		setError("bitmap_resize", err)
		return nil
	}
	return b
}

// counter returns the byte of b holding counter index at byte offset, and
// the nibble's shift (4 for an even index, the high nibble; 0 for an odd).
func counter(p *plainBitmap, index C.uint, offset C.long) (*byte, uint, error) {
	at := int64(index)/2 + int64(offset)
	if offset < 0 || at >= int64(len(p.mem)) {
		return nil, 0, fmt.Errorf("counter %d at offset %d is outside the bitmap's %d bytes", uint(index), int64(offset), len(p.mem))
	}
	shift := uint(4)
	if index%2 != 0 {
		shift = 0
	}
	return &p.mem[at], shift, nil
}

// onCounter runs fn on counter index at offset of a plain bitmap, under
// the bitmap's lock.
func onCounter(b *C.bitmap_t, index C.uint, offset C.long, fn func(c *byte, shift uint) error) error {
	p, err := plain(b)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c, shift, err := counter(p, index, offset)
	if err != nil {
		return err
	}
	return fn(c, shift)
}

// step adds delta (+1 or -1) to a counter of a plain bitmap.
func step(fn string, b *C.bitmap_t, index C.uint, offset C.long, delta int) C.int {
	err := onCounter(b, index, offset, func(c *byte, shift uint) error {
		switch v := int(*c>>shift) & 0x0f; {
		case delta > 0 && v == 0x0f:
			return fmt.Errorf("counter %d at offset %d is at its maximum, 15", uint(index), int64(offset))
		case delta < 0 && v == 0:
			return fmt.Errorf("counter %d at offset %d is zero", uint(index), int64(offset))
		default:
			*c = *c&^(0x0f<<shift) | byte(v+delta)<<shift
			return nil
		}
	})
	if err != nil {
		setError(fn, err)
		return -1
	}
	return 0
}

//export bitmap_increment
func bitmap_increment(b *C.bitmap_t, index C.uint, offset C.long) C.int {
	return step("bitmap_increment", b, index, offset, 1)
}

//export bitmap_decrement
func bitmap_decrement(b *C.bitmap_t, index C.uint, offset C.long) C.int {
	return step("bitmap_decrement", b, index, offset, -1)
}

//export bitmap_check
func bitmap_check(b *C.bitmap_t, index C.uint, offset C.long) C.int {
	var v C.int
	err := onCounter(b, index, offset, func(c *byte, shift uint) error {
		v = C.int(*c>>shift) & 0x0f
		return nil
	})
	if err != nil {
		setError("bitmap_check", err)
		return -1
	}
	return v
}

//export bitmap_flush
func bitmap_flush(b *C.bitmap_t) C.int {
	var err error
	if v, ok := ownBitmaps.Load(uintptr(unsafe.Pointer(b))); ok {
		h := v.(*handle)
		if err = h.f.Flush(); err == nil {
			h.refreshCounted()
		} else {
			h.fail("bitmap_flush", err)
			return -1
		}
	} else {
		var p *plainBitmap
		if p, err = plain(b); err == nil {
			p.mu.Lock()
			_, _, errno := syscall.Syscall(syscall.SYS_MSYNC, uintptr(unsafe.Pointer(unsafe.SliceData(p.mem))), uintptr(len(p.mem)), syscall.MS_SYNC)
			p.mu.Unlock()
			if errno != 0 {
				err = fmt.Errorf("msync: %w", errno)
			}
		}
	}
	if err != nil {
		setError("bitmap_flush", err)
		return -1
	}
	return 0
}

//export free_bitmap
func free_bitmap(b *C.bitmap_t) {
	if b == nil {
		return
	}
	v, ok := plainBitmaps.LoadAndDelete(uintptr(unsafe.Pointer(b)))
	if !ok {
		if _, own := ownBitmaps.Load(uintptr(unsafe.Pointer(b))); own {
			setError("free_bitmap", errors.New("this is a handle's bitmap: free_scaling_bloom or free_counting_bloom frees it"))
		} else {
			setError("free_bitmap", errBadBitmap)
		}
		return
	}
	p := v.(*plainBitmap)
	p.mu.Lock()
	syscall.Munmap(p.mem)
	p.mem = nil
	p.mu.Unlock()
	syscall.Close(int(b.fd)) // as the original: the bitmap owned the descriptor
	C.free(unsafe.Pointer(b))
}
