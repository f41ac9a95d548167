package header

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// pagesFor returns the page-aligned byte length holding counters 4-bit counters.
func pagesFor(counters uint64) int64 {
	b := int64((counters + 15) / 16 * 8)
	return (b + PageSize - 1) / PageSize * PageSize
}

// validMeta returns a fixed, valid Meta with three filters of the three
// layouts (the last one a converted dablooms 0.9.1 filter).
func validMeta() *Meta {
	m := &Meta{
		Major: VersionMajor, Minor: VersionMinor,
		Generation: 7,
		Params: Params{
			Capacity: 100000, ErrorRate: 0.01, GrowthFactor: 2, TighteningRatio: 0.8,
			Seed: 0x0123456789abcdef, HashID: HashXXH64Seeded, LayoutID: LayoutBlocked512,
		},
		Created: 1_700_000_000_123_456_789,
	}
	off := int64(DataOffset)
	add := func(f FilterDesc) {
		f.Offset = off
		f.Length = pagesFor(f.Counters)
		f.Slot = len(m.Filters)
		off += f.Length
		m.Filters = append(m.Filters, f)
	}
	add(FilterDesc{FirstID: 0, Capacity: 100000, Counters: 1075200, ErrorRate: 0.002, K: 6, HashID: HashXXH64Seeded, LayoutID: LayoutBlocked512})
	add(FilterDesc{FirstID: 100000, Capacity: 200000, Counters: 2300000, ErrorRate: 0.0016, K: 9, HashID: HashXXH64Seeded, LayoutID: LayoutClassic})
	add(FilterDesc{FirstID: 300001, Capacity: 1000, Counters: 7 * 1303, ErrorRate: 0.0125, K: 7, HashID: HashMurmur3Orig, LayoutID: LayoutPartitioned})
	return m
}

// manyMeta returns a valid Meta with MaxFilters filters.
func manyMeta() *Meta {
	m := validMeta()
	m.Filters = nil
	off := int64(DataOffset)
	for i := 0; i < MaxFilters; i++ {
		c := uint64(128 * (i + 1))
		f := FilterDesc{FirstID: uint64(i) * 1000, Capacity: uint64(10 + i), Counters: c, Offset: off, Length: pagesFor(c),
			ErrorRate: 0.01 / float64(i+1), K: 1 + i%MaxK, HashID: HashXXH64Seeded, LayoutID: LayoutBlocked512, Slot: i}
		off += f.Length
		m.Filters = append(m.Filters, f)
	}
	return m
}

// ringMeta returns a valid Meta of a file with retired filters: the chain
// is entries 2, 0, 1 (oldest first), placed out of order in the file with a
// gap where a retired filter was.
func ringMeta() *Meta {
	m := validMeta()
	m.Flags |= FlagRing
	m.Retired = 5
	f := m.Filters
	f[0].Slot, f[1].Slot, f[2].Slot = 2, 0, 1
	f[1].Offset = DataOffset + 2*PageSize
	f[2].Offset = f[1].Offset + f[1].Length
	f[0].Offset = f[2].Offset + f[2].Length + PageSize
	return m
}

func encode(m *Meta) []byte {
	b := make([]byte, MetaSize)
	Encode(b, m)
	return b
}

func reseal(b []byte) {
	binary.LittleEndian.PutUint32(b[offChecksum:], crcOf(b))
}

func crcOf(b []byte) uint32 {
	_, actual := Checksum(b)
	return actual
}

// normalize makes a nil directory and an empty one compare equal, and sets
// the version fields to what Encode writes.
func normalize(m *Meta) Meta {
	c := *m
	if c.Filters == nil {
		c.Filters = []FilterDesc{}
	}
	c.Major, c.Minor = VersionMajor, VersionMinor
	return c
}

func metaEqual(a, b *Meta) bool {
	na, nb := normalize(a), normalize(b)
	return reflect.DeepEqual(na, nb)
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	one := validMeta()
	one.Filters = one.Filters[:1]
	extreme := validMeta()
	extreme.Generation = math.MaxUint64
	extreme.Created = -1
	extreme.Params.Seed = math.MaxUint64
	extreme.Params.Capacity = MaxFileSize
	extreme.Params.ErrorRate = math.Nextafter(1, 0)
	extreme.Params.GrowthFactor = 1024
	extreme.Params.TighteningRatio = math.SmallestNonzeroFloat64
	extreme.Params.LayoutID = LayoutClassic
	extreme.Filters[0].FirstID = math.MaxUint64
	extreme.Filters[0].K = MaxK
	cases := []struct {
		name string
		m    *Meta
	}{
		{"three filters", validMeta()},
		{"one filter", one},
		{"max filters", manyMeta()},
		{"extreme values", extreme},
		{"ring", ringMeta()},
	}
	for _, tc := range cases {
		for _, base := range []int64{MetaAOffset, MetaBOffset} {
			t.Run(fmt.Sprintf("%s/base%d", tc.name, base), func(t *testing.T) {
				b := encode(tc.m)
				if stored, actual := Checksum(b); stored != actual {
					t.Fatalf("Encode left checksum %08x, bytes have %08x", stored, actual)
				}
				got, err := Decode(b, base, tc.m.End())
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if !metaEqual(got, tc.m) {
					t.Fatalf("round trip changed the meta:\n got %+v\nwant %+v", got, tc.m)
				}
				if got.End() != tc.m.End() {
					t.Fatalf("End %d, want %d", got.End(), tc.m.End())
				}
				// Encoding the decoded meta gives the same bytes.
				if b2 := encode(got); !bytes.Equal(b, b2) {
					t.Fatalf("re-encoding differs")
				}
				// A file one byte short of the directory's end is refused.
				if len(tc.m.Filters) > 0 {
					if _, err := Decode(b, base, tc.m.End()-1); !errors.Is(err, ErrCorrupt) {
						t.Fatalf("file one byte short: err = %v, want ErrCorrupt", err)
					}
				}
			})
		}
	}
}

func TestEncodeClearsDestination(t *testing.T) {
	b := bytes.Repeat([]byte{0xAA}, MetaSize)
	m := validMeta()
	Encode(b, m)
	if !bytes.Equal(b, encode(m)) {
		t.Fatal("Encode into a dirty buffer differs from Encode into a zero buffer")
	}
	if _, err := Decode(b, 0, m.End()); err != nil {
		t.Fatalf("Decode after Encode into a dirty buffer: %v", err)
	}
}

func TestMetaEnd(t *testing.T) {
	m := validMeta()
	last := m.Filters[len(m.Filters)-1]
	if got, want := m.End(), last.Offset+last.Length; got != want {
		t.Fatalf("End = %d, want %d", got, want)
	}
	m.Filters = nil
	if m.End() != DataOffset {
		t.Fatalf("End of empty directory = %d, want DataOffset %d", m.End(), DataOffset)
	}
}

// twoCopies returns the first 2*MetaSize bytes of a file holding copies a and b.
func twoCopies(a, b *Meta) []byte {
	buf := make([]byte, 2*MetaSize)
	if a != nil {
		Encode(buf[MetaAOffset:MetaAOffset+MetaSize], a)
	}
	if b != nil {
		Encode(buf[MetaBOffset:MetaBOffset+MetaSize], b)
	}
	return buf
}

func withGen(g uint64) *Meta {
	m := validMeta()
	m.Generation = g
	return m
}

func TestPick(t *testing.T) {
	size := validMeta().End()
	flip := func(off int) func([]byte) { return func(b []byte) { b[off] ^= 0x40 } }
	cases := []struct {
		name      string
		buf       []byte
		mutate    func([]byte)
		fileSize  int64
		wantGen   uint64
		wantWhich int
		wantBad   error // sentinel of the reported bad copy, nil if none
		badOffset int64
		wantErr   error
		errOffset int64
	}{
		{name: "B newer", buf: twoCopies(withGen(5), withGen(6)), fileSize: size, wantGen: 6, wantWhich: 1},
		{name: "A newer", buf: twoCopies(withGen(9), withGen(8)), fileSize: size, wantGen: 9, wantWhich: 0},
		{name: "equal generations pick A", buf: twoCopies(withGen(4), withGen(4)), fileSize: size, wantGen: 4, wantWhich: 0},
		{name: "generation wraps are not special", buf: twoCopies(withGen(math.MaxUint64), withGen(0)), fileSize: size, wantGen: math.MaxUint64, wantWhich: 0},
		{name: "A newer but torn: B wins", buf: twoCopies(withGen(10), withGen(9)), mutate: flip(MetaAOffset + 300),
			fileSize: size, wantGen: 9, wantWhich: 1, wantBad: ErrChecksum, badOffset: MetaAOffset + offChecksum},
		{name: "B newer but torn: A wins", buf: twoCopies(withGen(9), withGen(10)), mutate: flip(MetaBOffset + 40),
			fileSize: size, wantGen: 9, wantWhich: 0, wantBad: ErrChecksum, badOffset: MetaBOffset + offChecksum},
		{name: "B never written", buf: twoCopies(withGen(1), nil), fileSize: size, wantGen: 1, wantWhich: 0,
			wantBad: ErrNotDablooms, badOffset: MetaBOffset + offMagic},
		{name: "both torn", buf: twoCopies(withGen(1), withGen(2)),
			mutate:   func(b []byte) { b[MetaAOffset+500] ^= 1; b[MetaBOffset+600] ^= 1 },
			fileSize: size, wantErr: ErrChecksum, errOffset: MetaAOffset + offChecksum},
		{name: "both torn in the checksum itself", buf: twoCopies(withGen(1), withGen(2)),
			mutate:   func(b []byte) { b[MetaAOffset+offChecksum] ^= 1; b[MetaBOffset+offChecksum+3] ^= 0x80 },
			fileSize: size, wantErr: ErrChecksum, errOffset: MetaAOffset + offChecksum},
		{name: "zero file", buf: make([]byte, 2*MetaSize), fileSize: DataOffset, wantErr: ErrNotDablooms, errOffset: 0},
		{name: "foreign file", buf: bytes.Repeat([]byte("GIF89a.."), 2*MetaSize/8), fileSize: 1 << 20, wantErr: ErrNotDablooms, errOffset: 0},
		{name: "short buffer", buf: encode(validMeta()), fileSize: size, wantErr: ErrNotDablooms, errOffset: 0},
		{name: "empty buffer", buf: nil, fileSize: 0, wantErr: ErrNotDablooms, errOffset: 0},
		{name: "header-only file", buf: twoCopies(withGen(1), withGen(2)), fileSize: 2 * MetaSize, wantErr: ErrNotDablooms, errOffset: 0},
		{name: "file shorter than directory", buf: twoCopies(withGen(1), withGen(2)), fileSize: size - PageSize, wantErr: ErrCorrupt,
			errOffset: MetaAOffset + offDirectory + 2*entrySize + entLength},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			buf := bytes.Clone(tc.buf)
			if tc.mutate != nil {
				tc.mutate(buf)
			}
			p, err := Pick(buf, tc.fileSize)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("Pick succeeded (copy %d), want %v", p.Which, tc.wantErr)
				}
				checkCorruption(t, err, tc.wantErr, tc.errOffset)
				if p != nil {
					t.Fatalf("Pick returned a meta with an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Pick: %v", err)
			}
			m, which, bad := p.Meta, p.Which, p.Bad
			if m.Generation != tc.wantGen || which != tc.wantWhich {
				t.Fatalf("picked copy %d generation %d, want copy %d generation %d", which, m.Generation, tc.wantWhich, tc.wantGen)
			}
			if tc.wantBad == nil {
				if bad != nil {
					t.Fatalf("bad = %v, want nil", bad)
				}
				return
			}
			checkCorruption(t, bad, tc.wantBad, tc.badOffset)
		})
	}
}

// TestPickPrefersInformativeError: when copy A is torn and copy B was
// written by a newer major version, the doc comment of Pick promises B's
// error ("or B's, if A's is only a checksum error and B's says more"), so a
// caller learns the file needs a newer library instead of believing it is
// corrupt.
func TestPickPrefersInformativeError(t *testing.T) {
	buf := twoCopies(withGen(3), withGen(4))
	buf[MetaAOffset+200] ^= 1 // tear A
	b := buf[MetaBOffset : MetaBOffset+MetaSize]
	binary.LittleEndian.PutUint16(b[offMajor:], VersionMajor+1)
	reseal(b)
	_, err := Pick(buf, validMeta().End())
	if !errors.Is(err, ErrVersion) {
		t.Fatalf("err = %v, want ErrVersion from copy B", err)
	}
}

// checkCorruption asserts err wraps sentinel, is a *CorruptionError at
// offset, and is not also another sentinel.
func checkCorruption(t *testing.T, err, sentinel error, offset int64) *CorruptionError {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("err = %v, want errors.Is %v", err, sentinel)
	}
	for _, other := range []error{ErrNotDablooms, ErrVersion, ErrChecksum, ErrCorrupt} {
		if other != sentinel && errors.Is(err, other) {
			t.Fatalf("err = %v is both %v and %v", err, sentinel, other)
		}
	}
	var ce *CorruptionError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v (%T) is not a *CorruptionError", err, err)
	}
	if ce.Offset != offset {
		t.Fatalf("Offset = %d, want %d (%v)", ce.Offset, offset, err)
	}
	if ce.Field == "" || ce.Reason == "" {
		t.Fatalf("empty Field or Reason: %+v", ce)
	}
	if msg := err.Error(); !strings.Contains(msg, ce.Field) || !strings.Contains(msg, fmt.Sprint(ce.Offset)) {
		t.Fatalf("message %q names neither field %q nor offset %d", msg, ce.Field, ce.Offset)
	}
	return ce
}

func TestCorruptionErrorMessage(t *testing.T) {
	e := &CorruptionError{Offset: 304, Filter: 2, Field: "k", Reason: "0 outside [1, 64]", Err: ErrCorrupt}
	want := "corrupt dablooms file: k (offset 304, filter 2): 0 outside [1, 64]"
	if e.Error() != want {
		t.Fatalf("Error() = %q, want %q", e.Error(), want)
	}
	e.Filter = -1
	if strings.Contains(e.Error(), "filter") {
		t.Fatalf("Error() = %q mentions a filter for Filter -1", e.Error())
	}
	if !errors.Is(e, ErrCorrupt) || errors.Unwrap(e) != ErrCorrupt {
		t.Fatal("CorruptionError does not unwrap to its sentinel")
	}
}

func put16(b []byte, off int, v uint16) { binary.LittleEndian.PutUint16(b[off:], v) }
func put32(b []byte, off int, v uint32) { binary.LittleEndian.PutUint32(b[off:], v) }
func put64(b []byte, off int, v uint64) { binary.LittleEndian.PutUint64(b[off:], v) }
func putF(b []byte, off int, v float64) { put64(b, off, math.Float64bits(v)) }

func ent(i, field int) int { return offDirectory + i*entrySize + field }

func TestDecodeHostile(t *testing.T) {
	valid := validMeta()
	size := valid.End()
	f0, f1, f2 := valid.Filters[0], valid.Filters[1], valid.Filters[2]
	nan := math.NaN()
	type tcase struct {
		name     string
		mutate   func(b []byte)
		noReseal bool  // leave the checksum as the mutation left it
		fileSize int64 // 0 means size
		short    int   // decode only this many bytes, if > 0
		sentinel error
		off      int // offset relative to the copy
		filter   int // expected CorruptionError.Filter
		field    string
	}
	cases := []tcase{
		{name: "wrong magic", mutate: func(b []byte) { b[0] = 'X' }, noReseal: true, sentinel: ErrNotDablooms, off: offMagic, filter: -1, field: "magic"},
		{name: "byte-swapped magic", mutate: func(b []byte) { copy(b, "SMOOLBAD") }, sentinel: ErrNotDablooms, off: offMagic, filter: -1, field: "magic"},
		{name: "lower-case magic", mutate: func(b []byte) { copy(b, "dablooms") }, sentinel: ErrNotDablooms, off: offMagic, filter: -1, field: "magic"},
		{name: "all zero", mutate: func(b []byte) { clear(b) }, noReseal: true, sentinel: ErrNotDablooms, off: offMagic, filter: -1, field: "magic"},
		{name: "short buffer", short: MetaSize - 1, sentinel: ErrNotDablooms, off: 0, filter: -1, field: "metadata"},
		{name: "bit flip in directory", mutate: func(b []byte) { b[ent(1, entCounters)] ^= 4 }, noReseal: true, sentinel: ErrChecksum, off: offChecksum, filter: -1, field: "checksum"},
		{name: "bit flip in reserved bytes", mutate: func(b []byte) { b[200] = 1 }, noReseal: true, sentinel: ErrChecksum, off: offChecksum, filter: -1, field: "checksum"},
		{name: "bit flip in checksum", mutate: func(b []byte) { b[offChecksum+1] ^= 1 }, noReseal: true, sentinel: ErrChecksum, off: offChecksum, filter: -1, field: "checksum"},
		{name: "future major version", mutate: func(b []byte) { put16(b, offMajor, VersionMajor+1) }, sentinel: ErrVersion, off: offMajor, filter: -1, field: "version"},
		{name: "major version 0", mutate: func(b []byte) { put16(b, offMajor, 0) }, sentinel: ErrVersion, off: offMajor, filter: -1, field: "version"},
		{name: "byte-swapped major version", mutate: func(b []byte) { put16(b, offMajor, VersionMajor<<8) }, sentinel: ErrVersion, off: offMajor, filter: -1, field: "version"},
		{name: "unknown flag bit 6", mutate: func(b []byte) { put64(b, offFlags, 64) }, sentinel: ErrVersion, off: offFlags, filter: -1, field: "flags"},
		// A file with page checksums whose filter has no room for them.
		{name: "page checksums without check pages", mutate: func(b []byte) { put64(b, offFlags, FlagPageSums) }, sentinel: ErrCorrupt, off: offDirectory + entLength, filter: 0, field: "length"},
		{name: "unknown flag bit 63", mutate: func(b []byte) { put64(b, offFlags, 1<<63) }, sentinel: ErrVersion, off: offFlags, filter: -1, field: "flags"},
		// A 1.0 library would open a file with extra pages and no flag.
		{name: "extra pages without FlagExtras", mutate: func(b []byte) {
			put64(b, offFlags, 0)
			put64(b, ent(0, entCounters), 1024)
			put32(b, ent(0, entExtraPages), 1)
		}, sentinel: ErrCorrupt, off: offFlags, filter: 0, field: "flags"},
		{name: "extra pages filling the filter", mutate: func(b []byte) {
			put64(b, offFlags, FlagExtras)
			put32(b, ent(0, entExtraPages), uint32(binary.LittleEndian.Uint64(b[ent(0, entLength):])/PageSize))
		}, sentinel: ErrCorrupt, off: ent(0, entExtraPages), filter: 0, field: "extra pages"},
		{name: "meta size", mutate: func(b []byte) { put32(b, offMetaSize, 2*MetaSize) }, sentinel: ErrCorrupt, off: offMetaSize, filter: -1, field: "meta size"},
		{name: "max filters", mutate: func(b []byte) { put32(b, offMaxFilters, 2*MaxFilters) }, sentinel: ErrCorrupt, off: offMaxFilters, filter: -1, field: "max filters"},
		{name: "slot count", mutate: func(b []byte) { put32(b, offNumSlots, 1) }, sentinel: ErrCorrupt, off: offNumSlots, filter: -1, field: "slot count"},
		{name: "slot size", mutate: func(b []byte) { put32(b, offSlotSize, 512) }, sentinel: ErrCorrupt, off: offSlotSize, filter: -1, field: "slot size"},
		{name: "records per slot", mutate: func(b []byte) { put32(b, offRecords, 0) }, sentinel: ErrCorrupt, off: offRecords, filter: -1, field: "records per slot"},
		{name: "data offset", mutate: func(b []byte) { put64(b, offDataOffset, DataOffset+PageSize) }, sentinel: ErrCorrupt, off: offDataOffset, filter: -1, field: "data offset"},
		{name: "capacity 0", mutate: func(b []byte) { put64(b, offCapacity, 0) }, sentinel: ErrCorrupt, off: offCapacity, filter: -1, field: "capacity"},
		{name: "capacity 2^40+1", mutate: func(b []byte) { put64(b, offCapacity, MaxFileSize+1) }, sentinel: ErrCorrupt, off: offCapacity, filter: -1, field: "capacity"},
		{name: "capacity 2^64-1", mutate: func(b []byte) { put64(b, offCapacity, math.MaxUint64) }, sentinel: ErrCorrupt, off: offCapacity, filter: -1, field: "capacity"},
		{name: "error rate NaN", mutate: func(b []byte) { putF(b, offErrorRate, nan) }, sentinel: ErrCorrupt, off: offErrorRate, filter: -1, field: "error rate"},
		{name: "error rate 0", mutate: func(b []byte) { putF(b, offErrorRate, 0) }, sentinel: ErrCorrupt, off: offErrorRate, filter: -1, field: "error rate"},
		{name: "error rate -0", mutate: func(b []byte) { putF(b, offErrorRate, math.Copysign(0, -1)) }, sentinel: ErrCorrupt, off: offErrorRate, filter: -1, field: "error rate"},
		{name: "error rate 1", mutate: func(b []byte) { putF(b, offErrorRate, 1) }, sentinel: ErrCorrupt, off: offErrorRate, filter: -1, field: "error rate"},
		{name: "error rate negative", mutate: func(b []byte) { putF(b, offErrorRate, -0.01) }, sentinel: ErrCorrupt, off: offErrorRate, filter: -1, field: "error rate"},
		{name: "error rate +Inf", mutate: func(b []byte) { putF(b, offErrorRate, math.Inf(1)) }, sentinel: ErrCorrupt, off: offErrorRate, filter: -1, field: "error rate"},
		{name: "growth NaN", mutate: func(b []byte) { putF(b, offGrowth, nan) }, sentinel: ErrCorrupt, off: offGrowth, filter: -1, field: "growth factor"},
		{name: "growth below 1", mutate: func(b []byte) { putF(b, offGrowth, 0.5) }, sentinel: ErrCorrupt, off: offGrowth, filter: -1, field: "growth factor"},
		{name: "growth huge", mutate: func(b []byte) { putF(b, offGrowth, 1e300) }, sentinel: ErrCorrupt, off: offGrowth, filter: -1, field: "growth factor"},
		{name: "tightening 0", mutate: func(b []byte) { putF(b, offTighten, 0) }, sentinel: ErrCorrupt, off: offTighten, filter: -1, field: "tightening ratio"},
		{name: "tightening 1", mutate: func(b []byte) { putF(b, offTighten, 1) }, sentinel: ErrCorrupt, off: offTighten, filter: -1, field: "tightening ratio"},
		{name: "tightening NaN", mutate: func(b []byte) { putF(b, offTighten, nan) }, sentinel: ErrCorrupt, off: offTighten, filter: -1, field: "tightening ratio"},
		{name: "params hash murmur", mutate: func(b []byte) { put32(b, offHashID, HashMurmur3Orig) }, sentinel: ErrCorrupt, off: offHashID, filter: -1, field: "hash id"},
		{name: "params hash unknown", mutate: func(b []byte) { put32(b, offHashID, 0xdead) }, sentinel: ErrCorrupt, off: offHashID, filter: -1, field: "hash id"},
		{name: "params layout partitioned", mutate: func(b []byte) { put32(b, offLayoutID, LayoutPartitioned) }, sentinel: ErrCorrupt, off: offLayoutID, filter: -1, field: "layout id"},
		{name: "params layout 0", mutate: func(b []byte) { put32(b, offLayoutID, 0) }, sentinel: ErrCorrupt, off: offLayoutID, filter: -1, field: "layout id"},
		{name: "params layout unknown", mutate: func(b []byte) { put32(b, offLayoutID, 5) }, sentinel: ErrCorrupt, off: offLayoutID, filter: -1, field: "layout id"},
		{name: "filter count > MaxFilters", mutate: func(b []byte) { put32(b, offNumFilters, MaxFilters+1) }, sentinel: ErrCorrupt, off: offNumFilters, filter: -1, field: "filter count"},
		{name: "filter count 0", mutate: func(b []byte) { put32(b, offNumFilters, 0) }, sentinel: ErrCorrupt, off: offNumFilters, filter: -1, field: "filter count"},
		{name: "filter count 2^32-1", mutate: func(b []byte) { put32(b, offNumFilters, math.MaxUint32) }, sentinel: ErrCorrupt, off: offNumFilters, filter: -1, field: "filter count"},
		{name: "filter count beyond written entries", mutate: func(b []byte) { put32(b, offNumFilters, 4) }, sentinel: ErrCorrupt, off: ent(3, entOffset), filter: 3, field: "offset"},
		{name: "k 0", mutate: func(b []byte) { put16(b, ent(0, entK), 0) }, sentinel: ErrCorrupt, off: ent(0, entK), filter: 0, field: "k"},
		{name: "k MaxK+1", mutate: func(b []byte) { put16(b, ent(1, entK), MaxK+1) }, sentinel: ErrCorrupt, off: ent(1, entK), filter: 1, field: "k"},
		{name: "k 65535", mutate: func(b []byte) { put16(b, ent(2, entK), math.MaxUint16) }, sentinel: ErrCorrupt, off: ent(2, entK), filter: 2, field: "k"},
		{name: "filter capacity 0", mutate: func(b []byte) { put64(b, ent(1, entCapacity), 0) }, sentinel: ErrCorrupt, off: ent(1, entCapacity), filter: 1, field: "capacity"},
		{name: "filter error rate NaN", mutate: func(b []byte) { putF(b, ent(0, entErrorRate), nan) }, sentinel: ErrCorrupt, off: ent(0, entErrorRate), filter: 0, field: "error rate"},
		{name: "filter error rate 0", mutate: func(b []byte) { putF(b, ent(0, entErrorRate), 0) }, sentinel: ErrCorrupt, off: ent(0, entErrorRate), filter: 0, field: "error rate"},
		{name: "filter error rate 1", mutate: func(b []byte) { putF(b, ent(2, entErrorRate), 1) }, sentinel: ErrCorrupt, off: ent(2, entErrorRate), filter: 2, field: "error rate"},
		{name: "filter error rate negative", mutate: func(b []byte) { putF(b, ent(1, entErrorRate), -1e-9) }, sentinel: ErrCorrupt, off: ent(1, entErrorRate), filter: 1, field: "error rate"},
		{name: "filter hash 0", mutate: func(b []byte) { b[ent(0, entHashID)] = 0 }, sentinel: ErrCorrupt, off: ent(0, entHashID), filter: 0, field: "hash id"},
		{name: "filter hash unknown", mutate: func(b []byte) { b[ent(2, entHashID)] = 3 }, sentinel: ErrCorrupt, off: ent(2, entHashID), filter: 2, field: "hash id"},
		{name: "filter layout 0", mutate: func(b []byte) { b[ent(1, entLayoutID)] = 0 }, sentinel: ErrCorrupt, off: ent(1, entLayoutID), filter: 1, field: "layout id"},
		{name: "filter layout unknown", mutate: func(b []byte) { b[ent(0, entLayoutID)] = 0xff }, sentinel: ErrCorrupt, off: ent(0, entLayoutID), filter: 0, field: "layout id"},
		{name: "counters 0", mutate: func(b []byte) { put64(b, ent(1, entCounters), 0) }, sentinel: ErrCorrupt, off: ent(1, entCounters), filter: 1, field: "counters"},
		{name: "counters don't fit length", mutate: func(b []byte) { put64(b, ent(1, entCounters), uint64(f1.Length)*2+1) }, sentinel: ErrCorrupt, off: ent(1, entCounters), filter: 1, field: "counters"},
		{name: "counters 2^64-1", mutate: func(b []byte) { put64(b, ent(1, entCounters), math.MaxUint64) }, sentinel: ErrCorrupt, off: ent(1, entCounters), filter: 1, field: "counters"},
		{name: "blocked counters not whole blocks", mutate: func(b []byte) { put64(b, ent(0, entCounters), f0.Counters-64) }, sentinel: ErrCorrupt, off: ent(0, entCounters), filter: 0, field: "counters"},
		{name: "blocked1024 counters not whole blocks", mutate: func(b []byte) {
			b[ent(0, entLayoutID)] = LayoutBlocked1024
			put64(b, ent(0, entCounters), f0.Counters-128)
		}, sentinel: ErrCorrupt, off: ent(0, entCounters), filter: 0, field: "counters"},
		{name: "partitioned counters not k partitions", mutate: func(b []byte) { put64(b, ent(2, entCounters), f2.Counters+1) }, sentinel: ErrCorrupt, off: ent(2, entCounters), filter: 2, field: "counters"},
		{name: "misaligned offset", mutate: func(b []byte) { put64(b, ent(0, entOffset), DataOffset+8) }, sentinel: ErrCorrupt, off: ent(0, entOffset), filter: 0, field: "offset"},
		{name: "offset inside the header", mutate: func(b []byte) { put64(b, ent(0, entOffset), 0) }, sentinel: ErrCorrupt, off: ent(0, entOffset), filter: 0, field: "offset"},
		{name: "misaligned length", mutate: func(b []byte) { put64(b, ent(2, entLength), uint64(f2.Length)-8) }, sentinel: ErrCorrupt, off: ent(2, entLength), filter: 2, field: "length"},
		{name: "length 0", mutate: func(b []byte) { put64(b, ent(2, entLength), 0) }, sentinel: ErrCorrupt, off: ent(2, entLength), filter: 2, field: "length"},
		{name: "gap between filters", mutate: func(b []byte) { put64(b, ent(1, entOffset), uint64(f1.Offset+PageSize)) }, sentinel: ErrCorrupt, off: ent(1, entOffset), filter: 1, field: "offset"},
		{name: "overlapping filters", mutate: func(b []byte) { put64(b, ent(2, entOffset), uint64(f1.Offset)) }, sentinel: ErrCorrupt, off: ent(2, entOffset), filter: 2, field: "offset"},
		{name: "filters out of order", mutate: func(b []byte) {
			e0 := bytes.Clone(b[ent(0, 0):ent(1, 0)])
			copy(b[ent(0, 0):], b[ent(1, 0):ent(2, 0)])
			copy(b[ent(1, 0):], e0)
		}, sentinel: ErrCorrupt, off: ent(0, entOffset), filter: 0, field: "offset"},
		{name: "end beyond file size", fileSize: size - 1, sentinel: ErrCorrupt, off: ent(2, entLength), filter: 2, field: "length"},
		{name: "first filter beyond a header-only file", fileSize: DataOffset, sentinel: ErrCorrupt, off: ent(0, entLength), filter: 0, field: "length"},
		{name: "offset near 2^64", mutate: func(b []byte) { put64(b, ent(0, entOffset), math.MaxUint64-PageSize+1) }, sentinel: ErrCorrupt, off: ent(0, entOffset), filter: 0, field: "offset/length"},
		{name: "length near 2^64", mutate: func(b []byte) { put64(b, ent(1, entLength), math.MaxUint64-PageSize+1) }, sentinel: ErrCorrupt, off: ent(1, entOffset), filter: 1, field: "offset/length"},
		{name: "length 2^63", mutate: func(b []byte) { put64(b, ent(1, entLength), 1<<63) }, sentinel: ErrCorrupt, off: ent(1, entOffset), filter: 1, field: "offset/length"},
		{name: "end past 2^40", mutate: func(b []byte) { put64(b, ent(2, entLength), MaxFileSize) }, fileSize: -1, sentinel: ErrCorrupt, off: ent(2, entLength), filter: 2, field: "length"},
		{name: "non-zero unused entry", mutate: func(b []byte) { b[ent(3, 5)] = 1 }, sentinel: ErrCorrupt, off: ent(3, 0), filter: 3, field: "directory"},
		{name: "non-zero last unused entry", mutate: func(b []byte) { b[ent(MaxFilters, 0)-1] = 0x80 }, sentinel: ErrCorrupt, off: ent(MaxFilters-1, 0), filter: MaxFilters - 1, field: "directory"},
		{name: "stale entry after shrunk count", mutate: func(b []byte) { put32(b, offNumFilters, 2) }, sentinel: ErrCorrupt, off: ent(2, 0), filter: 2, field: "directory"},
	}
	for _, tc := range cases {
		for _, base := range []int64{MetaAOffset, MetaBOffset} {
			t.Run(fmt.Sprintf("%s/base%d", tc.name, base), func(t *testing.T) {
				b := encode(valid)
				if tc.mutate != nil {
					tc.mutate(b)
					if !tc.noReseal {
						reseal(b)
					}
				}
				if tc.short > 0 {
					b = b[:tc.short]
				}
				fs := tc.fileSize
				if fs == 0 {
					fs = size
				}
				m, err := Decode(b, base, fs)
				if err == nil {
					t.Fatalf("Decode accepted it: %+v", m)
				}
				if m != nil {
					t.Fatalf("Decode returned a meta with an error")
				}
				ce := checkCorruption(t, err, tc.sentinel, base+int64(tc.off))
				if ce.Filter != tc.filter || ce.Field != tc.field {
					t.Fatalf("Filter %d Field %q, want %d %q (%v)", ce.Filter, ce.Field, tc.filter, tc.field, err)
				}
			})
		}
	}
}

// TestDecodePartitionedLimit: a converted filter's partitions index with
// uint32 arithmetic, so a partition of 2^32 counters must be refused, and
// one of 2^32-1 accepted.
func TestDecodePartitionedLimit(t *testing.T) {
	for _, tc := range []struct {
		cpf uint64
		ok  bool
	}{{math.MaxUint32, true}, {1 << 32, false}} {
		m := validMeta()
		m.Filters = m.Filters[:1]
		f := &m.Filters[0]
		f.K, f.HashID, f.LayoutID = 2, HashMurmur3Orig, LayoutPartitioned
		f.Counters = 2 * tc.cpf
		f.Length = pagesFor(f.Counters)
		_, err := Decode(encode(m), 0, -1)
		if tc.ok && err != nil {
			t.Errorf("cpf %d: %v", tc.cpf, err)
		}
		if !tc.ok {
			ce := checkCorruption(t, err, ErrCorrupt, int64(ent(0, entCounters)))
			if ce.Filter != 0 || ce.Field != "counters" {
				t.Errorf("cpf %d: %+v", tc.cpf, ce)
			}
		}
	}
}

func TestDecodeAcceptsNewerMinorAndIgnoresFileSizeWhenNegative(t *testing.T) {
	m := validMeta()
	b := encode(m)
	put16(b, offMinor, VersionMinor+3)
	reseal(b)
	got, err := Decode(b, 0, -1)
	if err != nil {
		t.Fatalf("newer minor version refused: %v", err)
	}
	if got.Minor != VersionMinor+3 {
		t.Fatalf("Minor = %d, want %d", got.Minor, VersionMinor+3)
	}
	if _, err := Decode(b, 0, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("fileSize 0 must be checked: %v", err)
	}
}

func TestValidateParams(t *testing.T) {
	good := validMeta().Params
	if err := ValidateParams(&good); err != nil {
		t.Fatalf("valid params refused: %v", err)
	}
	classic := good
	classic.LayoutID = LayoutClassic
	if err := ValidateParams(&classic); err != nil {
		t.Fatalf("classic layout refused: %v", err)
	}
	for _, tc := range []struct {
		name  string
		mut   func(p *Params)
		off   int64
		field string
	}{
		{"capacity", func(p *Params) { p.Capacity = 0 }, offCapacity, "capacity"},
		{"error rate", func(p *Params) { p.ErrorRate = math.NaN() }, offErrorRate, "error rate"},
		{"growth", func(p *Params) { p.GrowthFactor = math.Inf(1) }, offGrowth, "growth factor"},
		{"tightening", func(p *Params) { p.TighteningRatio = -0.5 }, offTighten, "tightening ratio"},
		{"hash", func(p *Params) { p.HashID = 0 }, offHashID, "hash id"},
		{"layout", func(p *Params) { p.LayoutID = LayoutPartitioned }, offLayoutID, "layout id"},
	} {
		p := good
		tc.mut(&p)
		ce := checkCorruption(t, ValidateParams(&p), ErrCorrupt, tc.off)
		if ce.Field != tc.field || ce.Filter != -1 {
			t.Errorf("%s: %+v", tc.name, ce)
		}
	}
}

// TestLayoutConstants checks that the fixed regions of the file fit together.
func TestLayoutConstants(t *testing.T) {
	type span struct {
		name      string
		off, size int64
	}
	checkSpans := func(what string, lo, hi int64, spans []span) {
		t.Helper()
		sort.Slice(spans, func(i, j int) bool { return spans[i].off < spans[j].off })
		for i, s := range spans {
			if s.off < lo || s.off+s.size > hi {
				t.Errorf("%s: %s [%d, %d) outside [%d, %d)", what, s.name, s.off, s.off+s.size, lo, hi)
			}
			if s.off%min(s.size, 8) != 0 {
				t.Errorf("%s: %s at %d not aligned to %d", what, s.name, s.off, min(s.size, 8))
			}
			if i > 0 && spans[i-1].off+spans[i-1].size > s.off {
				t.Errorf("%s: %s overlaps %s", what, spans[i-1].name, s.name)
			}
		}
	}
	// Regions of the file, in order, page-aligned and back to back.
	regions := []span{
		{"meta A", MetaAOffset, MetaSize}, {"meta B", MetaBOffset, MetaSize},
		{"hot page", HotOffset, PageSize},
		{"filter lines", FilterLinesOffset, MaxFilters * LineSize},
		{"slots", SlotsOffset, NumSlots * SlotSize},
	}
	checkSpans("file", 0, DataOffset, regions)
	for _, r := range regions {
		if r.off%PageSize != 0 {
			t.Errorf("%s at %d is not page-aligned", r.name, r.off)
		}
	}
	if DataOffset%PageSize != 0 || DataOffset != SlotsOffset+NumSlots*SlotSize {
		t.Errorf("DataOffset %d: not page-aligned or not right after the slots", DataOffset)
	}
	if MetaSize != PageSize || PageSize%LineSize != 0 || SlotSize%LineSize != 0 {
		t.Error("MetaSize, PageSize, LineSize, SlotSize inconsistent")
	}
	// Hot words: line 0 is the state line, line 1 the boot line.
	hot := []span{
		{"state", StateOffset, 8}, {"disk seqnum", DiskSeqOffset, 8}, {"published", PublishedOffset, 8},
		{"flush count", FlushCountOffset, 8}, {"boot id", BootIDOffset, 16}, {"dirty since", DirtySinceOffset, 8},
		{"clean boot id", CleanBootIDOffset, 8},
	}
	checkSpans("hot page", HotOffset, HotOffset+PageSize, hot)
	for _, s := range hot {
		if s.off/LineSize != (s.off+s.size-1)/LineSize {
			t.Errorf("hot word %s straddles a line", s.name)
		}
	}
	if StateOffset/LineSize != DiskSeqOffset/LineSize {
		t.Error("state word and disk_seqnum must share a line (one sector) so they are written together")
	}
	if StateOffset%LineSize != 0 || BootIDOffset%LineSize != 0 || FilterLinesOffset%LineSize != 0 || SlotsOffset%LineSize != 0 {
		t.Error("hot groups must start lines")
	}
	// A filter line.
	checkSpans("filter line", 0, LineSize, []span{
		{"items", FilterItemsOffset, 8}, {"mark", FilterMarkOffset, 8}, {"min id", FilterMinIDOffset, 8}, {"max id", FilterMaxIDOffset, 8},
	})
	for i := 0; i < MaxFilters; i++ {
		if o := FilterLineOffset(i); o%LineSize != 0 || o < FilterLinesOffset || o+LineSize > SlotsOffset {
			t.Errorf("FilterLineOffset(%d) = %d", i, o)
		}
	}
	// Slots: a header line and RecordsPerSlot record lines, exactly filling SlotSize.
	if (RecordsPerSlot+1)*LineSize != SlotSize {
		t.Errorf("%d records + header line != SlotSize %d", RecordsPerSlot, SlotSize)
	}
	checkSpans("slot header", 0, LineSize, []span{
		{"owner", SlotOwnerOffset, 8}, {"pid", SlotPIDOffset, 8}, {"reserved", SlotReservedOffset, 8}, {"opened", SlotOpenedOffset, 8},
	})
	checkSpans("record", 0, LineSize, []span{
		{"op", RecOpOffset, 8}, {"hash", RecHashOffset, 8}, {"changed", RecChangedOffset, 8}, {"doubt", RecDoubtOffset, 8},
	})
	var lines []span
	for s := 0; s < NumSlots; s++ {
		lines = append(lines, span{fmt.Sprintf("slot %d", s), SlotOffset(s), LineSize})
		for r := 0; r < RecordsPerSlot; r++ {
			lines = append(lines, span{fmt.Sprintf("slot %d record %d", s, r), RecordOffset(s, r), LineSize})
		}
	}
	checkSpans("slots", SlotsOffset, DataOffset, lines)
	if len(lines)*LineSize != NumSlots*SlotSize {
		t.Error("slot lines do not tile the slot region")
	}
	// Bit 63 of the record's changed mask and the K limit: k ≤ 64 bits.
	if MaxK > 64 {
		t.Error("MaxK must fit the 64-bit changed/doubt masks")
	}
	// Metadata copy: fixed fields, then the directory, then the checksum.
	meta := []span{
		{"magic", offMagic, 8}, {"major", offMajor, 2}, {"minor", offMinor, 2}, {"meta size", offMetaSize, 4},
		{"flags", offFlags, 8}, {"generation", offGeneration, 8}, {"capacity", offCapacity, 8},
		{"error rate", offErrorRate, 8}, {"growth", offGrowth, 8}, {"tighten", offTighten, 8}, {"seed", offSeed, 8},
		{"hash id", offHashID, 4}, {"layout id", offLayoutID, 4}, {"max filters", offMaxFilters, 4},
		{"slots", offNumSlots, 4}, {"slot size", offSlotSize, 4}, {"records", offRecords, 4},
		{"data offset", offDataOffset, 8}, {"filters", offNumFilters, 4}, {"created", offCreated, 8},
		{"directory", offDirectory, MaxFilters * entrySize}, {"checksum", offChecksum, 4},
	}
	checkSpans("metadata", 0, MetaSize, meta)
	if offChecksum+4 != MetaSize {
		t.Error("the checksum must be the last 4 bytes of a copy")
	}
	checkSpans("directory entry", 0, entrySize, []span{
		{"first id", entFirstID, 8}, {"capacity", entCapacity, 8}, {"counters", entCounters, 8},
		{"offset", entOffset, 8}, {"length", entLength, 8}, {"error rate", entErrorRate, 8},
		{"k", entK, 2}, {"hash", entHashID, 1}, {"layout", entLayoutID, 1},
	})
	if entrySize%8 != 0 {
		t.Error("directory entries must keep 8-byte alignment")
	}
	if MaxFileSize > math.MaxInt64/4 || DataOffset >= MaxFileSize {
		t.Error("MaxFileSize must leave room for overflow-free sums")
	}
	// The Sealed flag shares the max id word: ids must stay below it.
	if Sealed != 1<<63 || MaxID != Sealed-1 || MaxID&Sealed != 0 {
		t.Errorf("Sealed %#x, MaxID %#x", uint64(Sealed), uint64(MaxID))
	}
	if string(Magic[:]) != "DABLOOMS" {
		t.Errorf("Magic = %q", Magic)
	}
}

func goldenMeta() *Meta { return validMeta() }

// liveReplace sets FlagLiveReplace, as every file version 1.3 creates has.
func liveReplace(m *Meta) *Meta { m.Flags |= FlagLiveReplace; return m }

// undoMeta is a file as version 1.5 created it: sumsMeta with the undo
// block.
func undoMeta() *Meta { m := sumsMeta(); m.Flags |= FlagUndoBlock; return m }

// recCountsMeta is a file as version 1.6 creates it: undoMeta with a
// count word per record.
func recCountsMeta() *Meta { m := undoMeta(); m.Flags |= FlagRecordCounts; return m }

// sumsMeta is a file as version 1.4 created it: page checksums, live
// replacement, and a filter with counts and a late-add index.
func sumsMeta() *Meta {
	m := liveReplace(goldenMeta())
	m.Flags |= FlagPageSums | FlagExtras
	off := int64(DataOffset)
	for i := range m.Filters {
		f := &m.Filters[i]
		f.Offset = off
		if i == 1 {
			f.Extra = CountsBytes + IndexBytes(f.Capacity)
			f.Length += f.Extra
		}
		AddSums(f)
		off += f.Length
	}
	return m
}

func hexDump(b []byte) string {
	var sb strings.Builder
	for off := 0; off < len(b); off += 32 {
		end := min(off+32, len(b))
		fmt.Fprintf(&sb, "%04x: %s\n", off, hex.EncodeToString(b[off:end]))
	}
	return sb.String()
}

func parseHexDump(s string) ([]byte, error) {
	var out []byte
	for n, line := range strings.Split(strings.TrimSpace(s), "\n") {
		addr, data, ok := strings.Cut(line, ": ")
		if !ok {
			return nil, fmt.Errorf("line %d: no address", n+1)
		}
		var a int
		if _, err := fmt.Sscanf(addr, "%x", &a); err != nil || a != len(out) {
			return nil, fmt.Errorf("line %d: address %q, want %04x", n+1, addr, len(out))
		}
		d, err := hex.DecodeString(data)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", n+1, err)
		}
		out = append(out, d...)
	}
	return out, nil
}

// TestGoldenMeta pins the byte encoding of fixed Metas: any change of the
// on-disk format shows up here. Run with -update to regenerate after an
// intended format change (and bump VersionMajor or VersionMinor, keeping the
// old version's file as a decode-only golden).
func TestGoldenMeta(t *testing.T) {
	for _, tc := range []struct {
		file string
		m    *Meta
	}{
		{"meta_v1.6.golden", recCountsMeta()},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			got := encode(tc.m)
			if *update {
				if err := os.WriteFile(path, []byte(hexDump(got)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want := readGolden(t, path)
			if !bytes.Equal(got, want) {
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("encoding differs from %s first at byte %d: got %02x, want %02x (format change? run with -update and bump the version)", path, i, got[i], want[i])
					}
				}
			}
			// The golden bytes decode to the same Meta: files written by this
			// version stay readable.
			m, err := Decode(want, 0, tc.m.End())
			if err != nil {
				t.Fatalf("golden bytes do not decode: %v", err)
			}
			if !metaEqual(m, tc.m) {
				t.Fatalf("golden decodes to %+v", m)
			}
		})
	}
}

// TestGoldenMetaOld decodes the bytes older minor versions wrote: their
// files stay readable.
func TestGoldenMetaOld(t *testing.T) {
	for _, tc := range []struct {
		file  string
		minor uint16
		m     *Meta
	}{
		{"meta_v1.1.golden", 1, goldenMeta()},
		{"meta_v1.2.golden", 2, goldenMeta()},
		{"meta_v1.2_ring.golden", 2, ringMeta()},
		{"meta_v1.3.golden", 3, liveReplace(goldenMeta())},
		{"meta_v1.3_ring.golden", 3, liveReplace(ringMeta())},
		{"meta_v1.4.golden", 4, sumsMeta()},
		{"meta_v1.5.golden", 5, undoMeta()},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b := readGolden(t, filepath.Join("testdata", tc.file))
			want := tc.m
			want.Minor = tc.minor
			m, err := Decode(b, 0, want.End())
			if err != nil {
				t.Fatalf("golden bytes do not decode: %v", err)
			}
			if !metaEqual(m, want) {
				t.Fatalf("golden decodes to %+v", m)
			}
		})
	}
}

func readGolden(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	want, err := parseHexDump(string(raw))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(want) != MetaSize {
		t.Fatalf("golden file %s holds %d bytes, want %d", path, len(want), MetaSize)
	}
	return want
}

func ExampleDecode() {
	m := &Meta{
		Generation: 1,
		Params:     Params{Capacity: 1000, ErrorRate: 0.01, GrowthFactor: 2, TighteningRatio: 0.8, Seed: 42, HashID: HashXXH64Seeded, LayoutID: LayoutBlocked512},
		Filters: []FilterDesc{{Capacity: 1000, Counters: 128 * 84, Offset: DataOffset, Length: PageSize * 2,
			ErrorRate: 0.002, K: 6, HashID: HashXXH64Seeded, LayoutID: LayoutBlocked512}},
	}
	buf := make([]byte, MetaSize)
	Encode(buf, m)
	got, err := Decode(buf, MetaAOffset, m.End())
	fmt.Println(err, got.Generation, got.Params.Capacity, len(got.Filters), got.End())

	buf[offNumFilters] = 2 // a torn or tampered copy
	_, err = Decode(buf, MetaBOffset, m.End())
	var ce *CorruptionError
	fmt.Println(errors.Is(err, ErrChecksum), errors.As(err, &ce), ce.Offset)
	// Output:
	// <nil> 1 1000 1 90112
	// true true 8188
}

func TestHashName(t *testing.T) {
	for _, c := range []struct {
		id   uint32
		want string
	}{{HashXXH64Seeded, "xxh64"}, {HashMurmur3Orig, "murmur3-dablooms"}, {0, "hash(0)"}, {77, "hash(77)"}} {
		if got := HashName(c.id); got != c.want {
			t.Errorf("HashName(%d) = %q, want %q", c.id, got, c.want)
		}
	}
}

// TestDecodeRingHostile feeds Decode damaged copies of a ring directory
// (FlagRing) and of a plain one claiming ring fields without the flag.
func TestDecodeRingHostile(t *testing.T) {
	ring := ringMeta()
	r := ring.Filters
	for _, tc := range []struct {
		name   string
		m      *Meta
		mutate func(b []byte)
		off    int
		field  string
	}{
		{"retired without the flag", validMeta(), func(b []byte) { put64(b, offRetired, 1) }, offRetired, "retired"},
		{"order list without the flag", validMeta(), func(b []byte) { b[offOrder+1] = 1 }, offOrder + 1, "order"},
		{"entry listed twice", ring, func(b []byte) { b[offOrder+1] = b[offOrder] }, offOrder + 1, "order"},
		{"entry beyond the directory", ring, func(b []byte) { b[offOrder+2] = MaxFilters }, offOrder + 2, "order"},
		{"order byte past the chain", ring, func(b []byte) { b[offOrder+3] = 7 }, offOrder + 3, "order"},
		{"listed entry free", ring, func(b []byte) { b[offOrder+2] = 5 }, ent(5, entOffset), "offset"},
		{"unlisted entry used", ring, func(b []byte) { b[ent(9, entK)] = 1 }, ent(9, 0), "directory"},
		{"filters overlap", ring, func(b []byte) { put64(b, ent(r[0].Slot, entOffset), uint64(r[2].Offset+PageSize)) }, ent(r[0].Slot, entOffset), "offset"},
		{"filter before the data", ring, func(b []byte) { put64(b, ent(r[1].Slot, entOffset), DataOffset-PageSize) }, ent(r[1].Slot, entOffset), "offset"},
		{"retired beyond any id", ring, func(b []byte) { put64(b, offRetired, 1<<63) }, offRetired, "retired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := encode(tc.m)
			tc.mutate(b)
			reseal(b)
			m, err := Decode(b, 0, tc.m.End())
			if err == nil {
				t.Fatalf("Decode accepted it: %+v", m)
			}
			ce := checkCorruption(t, err, ErrCorrupt, int64(tc.off))
			if ce.Field != tc.field {
				t.Fatalf("field %q, want %q (%v)", ce.Field, tc.field, err)
			}
		})
	}
}

func TestMetaPlaceAndFreeSlot(t *testing.T) {
	m := ringMeta() // entries 2, 0, 1 with a two-page gap at DataOffset
	if got := m.FreeSlot(0); got != 3 {
		t.Fatalf("FreeSlot = %d, want 3", got)
	}
	if got := m.FreeSlot(1<<3 | 1<<5); got != 4 {
		t.Fatalf("FreeSlot avoiding 3 and 5 = %d, want 4", got)
	}
	if got := m.FreeSlot(^uint64(0)); got != -1 {
		t.Fatalf("FreeSlot avoiding every entry = %d, want -1", got)
	}
	if got := m.Slots(); got != 0b111 {
		t.Fatalf("Slots = %b, want 111", got)
	}
	if got := m.Place(PageSize); got != DataOffset {
		t.Fatalf("Place(one page) = %d, want the gap at %d", got, DataOffset)
	}
	if got := m.Place(2 * PageSize); got != DataOffset {
		t.Fatalf("Place(two pages) = %d, want the gap at %d", got, DataOffset)
	}
	f0 := m.Filters[0]
	if got, want := m.Place(3*PageSize), f0.Offset+f0.Length; got != want {
		t.Fatalf("Place(three pages) = %d, want the end %d", got, want)
	}
	m.Filters = append(m.Filters[:1], m.Filters[2:]...) // entry 0 retired
	if got := m.FreeSlot(0); got != 0 {
		t.Fatalf("FreeSlot = %d, want 0", got)
	}
	if got := m.Place(PageSize + 1); got != DataOffset {
		t.Fatalf("Place after a retirement = %d, want %d", got, DataOffset)
	}
}

// TestEncodeBoth checks that both copies are Encode's of m, that Pick
// reads m from them, and that nothing after them is touched.
func TestEncodeBoth(t *testing.T) {
	for _, c := range []struct {
		name string
		m    *Meta
	}{
		{"valid", validMeta()},
		{"many", manyMeta()},
		{"ring", ringMeta()},
	} {
		t.Run(c.name, func(t *testing.T) {
			head := bytes.Repeat([]byte{0xa5}, DataOffset)
			EncodeBoth(head, c.m)
			want := encode(c.m)
			if !bytes.Equal(head[MetaAOffset:MetaAOffset+MetaSize], want) || !bytes.Equal(head[MetaBOffset:MetaBOffset+MetaSize], want) {
				t.Fatal("a copy differs from Encode's")
			}
			if !bytes.Equal(head[2*MetaSize:], bytes.Repeat([]byte{0xa5}, DataOffset-2*MetaSize)) {
				t.Fatal("bytes after the copies changed")
			}
			p, err := Pick(head, c.m.End())
			if err != nil {
				t.Fatalf("Pick: %v", err)
			}
			if p.Bad != nil || !metaEqual(p.Meta, c.m) {
				t.Fatalf("Pick read %+v (bad copy: %v), want %+v", p.Meta, p.Bad, c.m)
			}
		})
	}
}
