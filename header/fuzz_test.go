package header

import (
	"bytes"
	"errors"
	"testing"
)

// trimmed returns an encoding without its zero tail and checksum: fuzz
// inputs are padded to MetaSize and resealed (see sealed), and short inputs
// keep the fuzzer's minimization fast.
func trimmed(m *Meta) []byte {
	b := encode(m)
	return b[:offDirectory+len(m.Filters)*entrySize]
}

// fuzzSeeds are valid encodings (trimmed) plus a few hostile ones.
func fuzzSeeds() [][]byte {
	empty := validMeta()
	empty.Filters = nil
	seeds := [][]byte{trimmed(validMeta()), trimmed(manyMeta()), trimmed(empty)}
	torn := trimmed(validMeta())
	torn[offDirectory+3] ^= 1
	seeds = append(seeds, torn, nil, []byte("DABLOOMS"))
	return seeds
}

// checkDecodeResult asserts the contract of Decode on arbitrary bytes.
func checkDecodeResult(t *testing.T, b []byte, fileSize int64) {
	m, err := Decode(b, MetaBOffset, fileSize)
	if err != nil {
		if m != nil {
			t.Fatalf("Decode returned a meta and %v", err)
		}
		var ce *CorruptionError
		if !errors.As(err, &ce) {
			t.Fatalf("error %v (%T) is not a *CorruptionError", err, err)
		}
		known := 0
		for _, s := range []error{ErrNotDablooms, ErrVersion, ErrChecksum, ErrCorrupt} {
			if errors.Is(err, s) {
				known++
			}
		}
		if known != 1 {
			t.Fatalf("error %v wraps %d sentinels, want exactly 1", err, known)
		}
		if ce.Offset < MetaBOffset || ce.Offset >= MetaBOffset+MetaSize {
			t.Fatalf("error offset %d outside the copy at %d: %v", ce.Offset, MetaBOffset, err)
		}
		if ce.Filter < -1 || ce.Filter >= MaxFilters {
			t.Fatalf("error filter %d: %v", ce.Filter, err)
		}
		return
	}
	// Everything the caller will rely on holds.
	if err := ValidateParams(&m.Params); err != nil {
		t.Fatalf("Decode accepted invalid params: %v", err)
	}
	if m.Major != VersionMajor || m.Flags&^KnownFlags != 0 || len(m.Filters) > MaxFilters {
		t.Fatalf("Decode accepted major %d flags %#x filters %d", m.Major, m.Flags, len(m.Filters))
	}
	// Without FlagRing the filters follow one another from DataOffset; with
	// it they may lie anywhere after it, but never overlap.
	ring := m.Flags&FlagRing != 0
	end, prevEnd := int64(DataOffset), int64(DataOffset)
	for i, f := range m.Filters {
		if !ring && f.Offset != prevEnd || f.Offset < DataOffset || f.Offset%PageSize != 0 || f.Length <= 0 || f.Length%PageSize != 0 {
			t.Fatalf("filter %d: offset %d length %d (previous end %d, ring %v)", i, f.Offset, f.Length, prevEnd, ring)
		}
		for j, g := range m.Filters[:i] {
			if f.Offset < g.Offset+g.Length && g.Offset < f.Offset+f.Length {
				t.Fatalf("filter %d [%d, +%d) overlaps filter %d [%d, +%d)", i, f.Offset, f.Length, j, g.Offset, g.Length)
			}
		}
		prevEnd = f.Offset + f.Length
		end = max(end, prevEnd)
		if prevEnd > MaxFileSize || (fileSize >= 0 && prevEnd > fileSize) {
			t.Fatalf("filter %d ends at %d, file %d", i, prevEnd, fileSize)
		}
		if f.K < 1 || f.K > MaxK || f.Capacity == 0 || !(f.ErrorRate > 0 && f.ErrorRate < 1) ||
			f.Counters == 0 || f.Counters > 2*uint64(f.Length) {
			t.Fatalf("filter %d accepted: %+v", i, f)
		}
		if f.LayoutID == LayoutBlocked512 && f.Counters%128 != 0 || f.LayoutID == LayoutBlocked1024 && f.Counters%256 != 0 {
			t.Fatalf("filter %d: layout %d with %d counters", i, f.LayoutID, f.Counters)
		}
		if f.LayoutID == LayoutPartitioned && (f.Counters%uint64(f.K) != 0 || f.Counters/uint64(f.K) >= 1<<32) {
			t.Fatalf("filter %d: partitioned with %d counters, k %d", i, f.Counters, f.K)
		}
	}
	if m.End() != end {
		t.Fatalf("End %d, want %d", m.End(), end)
	}
	// Re-encoding gives a copy that decodes to the same meta (Encode
	// writes this library's minor version).
	b2 := encode(m)
	m2, err := Decode(b2, MetaAOffset, fileSize)
	if err != nil {
		t.Fatalf("re-encoded meta does not decode: %v\n%+v", err, m)
	}
	if !metaEqual(m, m2) {
		t.Fatalf("re-encode changed the meta:\n %+v\n %+v", m, m2)
	}
	if !bytes.Equal(b2, encode(m2)) {
		t.Fatal("encoding is not stable")
	}
}

// sealed returns a copy of b padded to MetaSize with the magic in place and
// a correct checksum, so the fuzzer reaches the field validation instead of
// stopping at the checksum.
func sealed(b []byte) []byte {
	c := make([]byte, MetaSize)
	copy(c, b)
	copy(c, Magic[:])
	reseal(c)
	return c
}

func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s, validMeta().End())
		f.Add(s, int64(-1))
	}
	f.Fuzz(func(t *testing.T, data []byte, fileSize int64) {
		if len(data) > MetaSize {
			data = data[:MetaSize] // Decode reads no further
		}
		checkDecodeResult(t, data, fileSize)
		checkDecodeResult(t, sealed(data), fileSize)
	})
}

// FuzzPick fuzzes the two copies separately: each is used raw (padded to
// MetaSize) and sealed, and their raw concatenation is also tried as a whole
// (possibly short) buffer.
func FuzzPick(f *testing.F) {
	size := validMeta().End()
	f.Add(trimmed(withGen(1)), trimmed(withGen(2)), size)
	f.Add(trimmed(withGen(3)), []byte{}, size)
	f.Add(trimmed(manyMeta()), trimmed(validMeta()), manyMeta().End())
	f.Add([]byte{}, []byte{}, int64(0))
	f.Add([]byte("DABLOOMS"), []byte("DABLOOMS"), int64(-5))
	f.Fuzz(func(t *testing.T, a, b []byte, fileSize int64) {
		a, b = a[:min(len(a), MetaSize)], b[:min(len(b), MetaSize)]
		check := func(buf []byte) {
			p, err := Pick(buf, fileSize)
			if err != nil {
				var ce *CorruptionError
				if p != nil || !errors.As(err, &ce) {
					t.Fatalf("Pick failed with %v, err=%v", p, err)
				}
				return
			}
			m, which, bad := p.Meta, p.Which, p.Bad
			if m == nil || (which != 0 && which != 1) {
				t.Fatalf("Pick: m=%v which=%d", m, which)
			}
			am, errA := Decode(buf[MetaAOffset:], MetaAOffset, fileSize)
			bm, errB := Decode(buf[MetaBOffset:], MetaBOffset, fileSize)
			switch {
			case errA == nil && errB == nil:
				want, w := am, 0
				if bm.Generation > am.Generation {
					want, w = bm, 1
				}
				if which != w || !metaEqual(m, want) || bad != nil {
					t.Fatalf("picked %d, want %d (generations %d, %d)", which, w, am.Generation, bm.Generation)
				}
			case errA == nil:
				if which != 0 || !metaEqual(m, am) || bad == nil || bad.Error() != errB.Error() {
					t.Fatalf("picked %d with bad=%v, want A with B's error %v", which, bad, errB)
				}
			case errB == nil:
				if which != 1 || !metaEqual(m, bm) || bad == nil || bad.Error() != errA.Error() {
					t.Fatalf("picked %d with bad=%v, want B with A's error %v", which, bad, errA)
				}
			default:
				t.Fatalf("Pick succeeded though both copies fail: %v / %v", errA, errB)
			}
		}
		check(append(bytes.Clone(a), b...))
		pad := func(x []byte) []byte {
			c := make([]byte, MetaSize)
			copy(c, x)
			return c
		}
		check(append(pad(a), pad(b)...))
		check(append(sealed(a), sealed(b)...))
		check(append(sealed(a), pad(b)...))
	})
}
