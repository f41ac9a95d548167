package main

import (
	"github.com/bits-and-blooms/bloom/v3"
)

// bits-and-blooms/bloom/v3: a classic (non-counting) Bloom filter,
// bloom.NewWithEstimates(n, 0.01). No remove.
//
// Test only reads the bit set and hashes into stack memory, so concurrent
// Tests are safe; Add is not safe for concurrent use.
//
// bytes = len(BitSet().Words()) * 8: the bit set's backing []uint64.

var bloomv3Spec = spec{
	id:             "bloomv3",
	desc:           "bits-and-blooms/bloom/v3: NewWithEstimates(n, 0.01)",
	new:            newBloomv3,
	concurrentRead: true,
}

type bloomv3System struct{ f *bloom.BloomFilter }

func newBloomv3(c buildConfig) (system, error) {
	return &bloomv3System{f: bloom.NewWithEstimates(uint(c.n), 0.01)}, nil
}

func (s *bloomv3System) add(key []byte, _ uint64) error { s.f.Add(key); return nil }
func (s *bloomv3System) contains(key []byte) bool       { return s.f.Test(key) }
func (s *bloomv3System) bytes() int64                   { return int64(len(s.f.BitSet().Words())) * 8 }
func (s *bloomv3System) close() error                   { return nil }
