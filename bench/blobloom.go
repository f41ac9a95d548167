package main

import (
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
