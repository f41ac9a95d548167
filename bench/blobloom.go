package main

import (
	"encoding/binary"
	"math"

	"github.com/cespare/xxhash/v2"
	"github.com/greatroar/blobloom"
)

// greatroar/blobloom: a blocked Bloom filter (one 512-bit block per key).
// It takes 64-bit hashes, not keys: the adapters hash with xxhash.Sum64,
// inside the timed calls. No remove.
//
// blobloom: NewOptimized(Config{Capacity: n, FPRate: 0.01}). Has only
// reads, so concurrent contains are safe; Add is not safe concurrently.
// bytes = NumBits()/8.
//
// blobloom-sync: the library's concurrent variant, NewSyncOptimized with the
// same Config; Add and Has are safe from several goroutines (atomic ops), so
// it is the one peer with a parallel add figure. SyncFilter has no NumBits:
// bytes = Optimize(config)'s nbits rounded up to a whole 512-bit block (what
// NewSync allocates) / 8.

func blobloomConfig(n int) blobloom.Config {
	return blobloom.Config{Capacity: uint64(n), FPRate: 0.01}
}

var blobloomSpec = spec{
	id:             "blobloom",
	desc:           "greatroar/blobloom (blocked): NewOptimized(Config{Capacity: n, FPRate: 0.01}), keys hashed with xxhash.Sum64",
	new:            newBlobloom,
	concurrentRead: true,
}

var blobloomSyncSpec = spec{
	id:              "blobloom-sync",
	desc:            "greatroar/blobloom SyncFilter (concurrent): NewSyncOptimized, same config and hashing",
	new:             newBlobloomSync,
	concurrentWrite: true,
	concurrentRead:  true,
}

// blobloom-big: a control, not a peer. blobloom with as many bytes per key
// as this project's file at 1 % (sameSizeBitsPerKey), and the hash count
// that Optimize picks for 1 %: the same lookup code over an array as large
// as ours, to separate what the memory footprint costs from the rest.
const sameSizeBitsPerKey = 60 // ≈ 7.5 bytes/key, ours-file's size

var blobloomBigSpec = spec{
	id:             "blobloom-big",
	desc:           "control: blobloom with ours-file's footprint: New(60 bits × n, k of Optimize at 1 %)",
	new:            newBlobloomBig,
	concurrentRead: true,
}

// blobloom-dense: a control, not a peer. blobloom-big with filler keys
// added before the timed adds, so that after them about as large a
// fraction of its bits is set as of ours-file's counters (41 % at 1 %):
// blobloom-big's own array is only about 11 % set, so its lookups of
// absent keys nearly always stop at the first bit, a branch the CPU
// predicts. With a Has that tests k-1 bits, N keys set a fraction
// 1 - exp(-N(k-1)/m) of m bits; the fillers make N the n that gives 41 %.
var blobloomDenseSpec = spec{
	id:             "blobloom-dense",
	desc:           "control: blobloom-big with filler keys, its bits as densely set as ours-file's counters (41 %)",
	new:            newBlobloomDense,
	concurrentRead: true,
}

// denseFill is the fraction of set bits blobloom-dense aims at.
const denseFill = 0.41

func newBlobloomDense(c buildConfig) (system, error) {
	_, k := blobloom.Optimize(blobloomConfig(c.n))
	m := float64(c.n) * sameSizeBitsPerKey
	total := -math.Log(1-denseFill) * m / float64(k-1)
	f := blobloom.New(uint64(m), k)
	var kb [16]byte
	copy(kb[8:], "filler!!") // the tool's keys end in digits: no filler is one
	for i := uint64(0); float64(i) < total-float64(c.n); i++ {
		binary.LittleEndian.PutUint64(kb[:8], i)
		f.Add(xxhash.Sum64(kb[:]))
	}
	return &blobloomSystem{f: f}, nil
}

type blobloomSystem struct{ f *blobloom.Filter }

func newBlobloom(c buildConfig) (system, error) {
	return &blobloomSystem{f: blobloom.NewOptimized(blobloomConfig(c.n))}, nil
}

func newBlobloomBig(c buildConfig) (system, error) {
	_, k := blobloom.Optimize(blobloomConfig(c.n))
	return &blobloomSystem{f: blobloom.New(uint64(c.n)*sameSizeBitsPerKey, k)}, nil
}

func (s *blobloomSystem) add(key []byte, _ uint64) error { s.f.Add(xxhash.Sum64(key)); return nil }
func (s *blobloomSystem) contains(key []byte) bool       { return s.f.Has(xxhash.Sum64(key)) }
func (s *blobloomSystem) bytes() int64                   { return int64(s.f.NumBits() / 8) }
func (s *blobloomSystem) close() error                   { return nil }

type blobloomSyncSystem struct {
	f     *blobloom.SyncFilter
	nbits uint64
}

func newBlobloomSync(c buildConfig) (system, error) {
	cfg := blobloomConfig(c.n)
	nbits, _ := blobloom.Optimize(cfg)
	if nbits < blobloom.BlockBits {
		nbits = blobloom.BlockBits
	}
	if r := nbits % blobloom.BlockBits; r != 0 {
		nbits += blobloom.BlockBits - r
	}
	return &blobloomSyncSystem{f: blobloom.NewSyncOptimized(cfg), nbits: nbits}, nil
}

func (s *blobloomSyncSystem) add(key []byte, _ uint64) error {
	s.f.Add(xxhash.Sum64(key))
	return nil
}
func (s *blobloomSyncSystem) contains(key []byte) bool { return s.f.Has(xxhash.Sum64(key)) }
func (s *blobloomSyncSystem) bytes() int64             { return int64(s.nbits / 8) }
func (s *blobloomSyncSystem) close() error             { return nil }
