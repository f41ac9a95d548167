package main

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
)

// ours-walk: a control, not a peer. It is ours-file, filled through the
// library, but its lookups do not call the library: after the adds the
// harness maps the file itself (read-only, populated) and walks its one
// Blocked1024 filter in a loop of its own, the file format's derivation
// written out (docs/FORMAT.md): the native hash plus the filter's salt,
// the block, then the k nibbles of the block, stopping at the first zero.
// There is no chain, no check for growth or replacement, no call but the
// hash. Its lookups against ours-file's say what the library's code
// around the walk costs; against blobloom-big, what the format's walk
// costs. Its false negatives and false positives must match ours-file's
// (the harness checks the first; the tables show the second).

var oursWalkSpec = spec{
	id:             "ours-walk",
	desc:           "control: ours-file's file walked by the harness (format's hash, block and nibbles written out; no library call)",
	new:            newOursWalk,
	concurrentRead: true,
}

// walkGolden is counting4's position-state constant (part of the format).
const walkGolden = 0x9E3779B97F4A7C15

type oursWalk struct {
	*oursSystem
	m                      []byte   // the read-only mapping, for close
	w                      []uint64 // the filter's counter words
	seed, salt, blocks, kk uint64
}

func newOursWalk(c buildConfig) (system, error) {
	if c.layout != "" && c.layout != "blocked1024" {
		return nil, fmt.Errorf("ours-walk walks blocked1024 filters only, not -layout %s", c.layout)
	}
	s, err := newOurs(ours{id: "ours-walk"}, c)
	if err != nil {
		return nil, err
	}
	return &oursWalk{oursSystem: s.(*oursSystem)}, nil
}

// prepare maps the filled file and finds its filter. The directory must
// hold exactly one Blocked1024 filter with the native hash.
func (s *oursWalk) prepare() error {
	m, p, err := mapPicked(s.path, false)
	s.m = m
	if err != nil {
		return err
	}
	size := int64(len(m))
	if len(p.Filters) != 1 {
		return fmt.Errorf("ours-walk: the file has %d filters, the walk reads one", len(p.Filters))
	}
	d := p.Filters[0]
	if d.LayoutID != header.LayoutBlocked1024 || d.HashID != header.HashXXH64Seeded {
		return fmt.Errorf("ours-walk: filter layout %d hash %d, the walk reads blocked1024 with the native hash", d.LayoutID, d.HashID)
	}
	if d.Offset+d.CounterBytes() > size || d.Counters%counting4.BlockCounters1024 != 0 || d.Counters/2 > uint64(d.CounterBytes()) {
		return errors.New("ours-walk: the filter's entry does not fit the file")
	}
	s.w = unsafe.Slice((*uint64)(unsafe.Pointer(&m[d.Offset])), d.Counters/16)
	s.seed, s.salt = p.Params.Seed, counting4.Salt(d.Slot)
	s.blocks, s.kk = d.Counters/counting4.BlockCounters1024, uint64(d.K)
	return nil
}

// contains is the Blocked1024 walk: the block is fastrange(g, blocks) with
// g = Fmix64(hash + salt); the positions are the bytes of the state
// st = Fmix64(g ^ golden), the state re-mixed (st = Fmix64(st ^ golden))
// every 8 positions.
func (s *oursWalk) contains(key []byte) bool {
	g := header.Fmix64(header.HashKey(s.seed, key) + s.salt)
	blk, _ := bits.Mul64(g, s.blocks)
	words := (*[16]uint64)(s.w[blk*16:])
	st := header.Fmix64(g ^ walkGolden)
	x := st
	for j := uint64(0); j < s.kk; j++ {
		if j > 0 && j%8 == 0 {
			st = header.Fmix64(st ^ walkGolden)
			x = st
		}
		if words[x>>4&15]>>(x&15*4)&15 == 0 {
			return false
		}
		x >>= 8
	}
	return true
}

func (s *oursWalk) close() error {
	var err error
	if s.m != nil {
		err = unix.Munmap(s.m)
		s.m, s.w = nil, nil
	}
	if cerr := s.oursSystem.close(); err == nil {
		err = cerr
	}
	return err
}

// mapPicked maps the whole file at path, shared, read-only and populated
// or read-write, and picks its metadata (header.Pick). The mapping is
// returned even with an error from Pick, for the caller to unmap.
func mapPicked(path string, write bool) ([]byte, *header.Picked, error) {
	flag, prot, mflags := os.O_RDONLY, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE
	if write {
		flag, prot, mflags = os.O_RDWR, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED
	}
	fd, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, nil, err
	}
	defer fd.Close()
	fi, err := fd.Stat()
	if err != nil {
		return nil, nil, err
	}
	m, err := unix.Mmap(int(fd.Fd()), 0, int(fi.Size()), prot, mflags)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	p, err := header.Pick(m, fi.Size())
	return m, p, err
}
