package main

import (
	cuckoo "github.com/seiflotfy/cuckoofilter"
)

// seiflotfy/cuckoofilter: cuckoo filter with 4-slot buckets and 8-bit
// fingerprints, cuckoo.NewFilter(n). NewFilter rounds n up to a power of two
// slots, so the load factor at the end of the add phase is n / nextPow2(n)
// (95% for n = 1,000,000, 61% for 20,000). Insert can fail when the table is
// too full; a failed Insert is counted as an add failure, and this library
// then has already evicted another key's fingerprint, so false negatives
// become possible. Delete returning false is counted as a remove failure.
//
// Lookup only reads (metro hash, no shared state), so concurrent contains
// are safe; Insert/Delete are not safe concurrently.
//
// bytes = len(Encode()): Encode returns one byte per fingerprint slot, which
// is exactly the size of the bucket array.

var cuckooSpec = spec{
	id:             "cuckoo",
	desc:           "seiflotfy/cuckoofilter: NewFilter(n) (4-way buckets, 8-bit fingerprints, slots = nextPow2(n))",
	new:            newCuckoo,
	concurrentRead: true,
	canRemove:      true,
}

type cuckooSystem struct{ f *cuckoo.Filter }

func newCuckoo(c buildConfig) (system, error) {
	return &cuckooSystem{f: cuckoo.NewFilter(uint(c.n))}, nil
}

func (s *cuckooSystem) add(key []byte, _ uint64) error {
	if !s.f.Insert(key) {
		return errAddFull
	}
	return nil
}
func (s *cuckooSystem) contains(key []byte) bool { return s.f.Lookup(key) }
func (s *cuckooSystem) remove(key []byte, _ uint64) error {
	if !s.f.Delete(key) {
		return errRemoveMiss
	}
	return nil
}
func (s *cuckooSystem) bytes() int64 { return int64(len(s.f.Encode())) }
func (s *cuckooSystem) close() error { return nil }
