//go:build linux && (amd64 || arm64)

package counting4

import (
	"errors"
	"syscall"
	"testing"
	"unsafe"
)

// reservedWords returns n words of reserved, never-touched address space
// (no memory is committed), for tests of size checks on huge filters.
func reservedWords(t *testing.T, n uint64) []uint64 {
	t.Helper()
	b, err := syscall.Mmap(-1, 0, int(n*8), syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		t.Skipf("cannot reserve %d bytes of address space: %v", n*8, err)
	}
	t.Cleanup(func() { syscall.Munmap(b) })
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n)
}

// TestNewRefusesPartitionOf2To32: Partitioned indexes a partition with
// uint32 arithmetic (as dablooms 0.9.1 did), so cpf must be below 2^32:
// with cpf = 2^32, uint32(cpf) is 0 and Positions divides by zero. The
// header refuses such a directory entry (Counters/K > MaxUint32), and so
// must New.
func TestNewRefusesPartitionOf2To32(t *testing.T) {
	const k = 1
	counters := uint64(k) << 32
	w := reservedWords(t, counters/16)
	f, err := New(w, Partitioned, counters, k)
	if !errors.Is(err, ErrSize) {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("New accepted it and Positions panicked: %v", r)
			}
		}()
		pos := make([]uint64, k)
		f.Positions(12345, pos)
		t.Errorf("New(Partitioned, 2^32 counters, k=1) = %v, want ErrSize", err)
	}
}

// TestNewAcceptsLargestPartition: cpf = 2^32-1 is fine, and every index of
// a 2^32-counter-per-partition-minus-one filter stays in range.
func TestNewAcceptsLargestPartition(t *testing.T) {
	const k = 2
	counters := uint64(k) * (1<<32 - 1)
	w := reservedWords(t, (counters+15)/16)
	f, err := New(w, Partitioned, counters, k)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	pos := make([]uint64, k)
	s := splitmix64(5)
	for i := 0; i < 1000; i++ {
		f.Positions(s.next(), pos)
		if pos[0] >= 1<<32-1 || pos[1] < 1<<32-1 || pos[1] >= counters {
			t.Fatalf("positions %v out of their partitions", pos)
		}
	}
}
