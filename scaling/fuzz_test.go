package scaling

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dablooms/dablooms/header"
)

// fuzzReserve keeps each fuzz input's mapping small; a growth beyond it is
// an error (ErrRange), never a huge allocation.
const fuzzReserve = 64 << 20

// openBytes writes b to a fresh file and opens it. Open must not panic,
// and an error must be one openErrorOK accepts.
func openBytes(t *testing.T, b []byte, ro bool) *Filter {
	requireFiles(t)
	path := filepath.Join(t.TempDir(), "fuzz.dbl")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path, &OpenOptions{ReadOnly: ro, Reserve: fuzzReserve})
	if err != nil {
		if f != nil {
			t.Fatalf("Open returned a *Filter with error %v", err)
		}
		if !openErrorOK(err) {
			t.Fatalf("Open: unexpected kind of error %v (%T)", err, err)
		}
		return nil
	}
	return f
}

// FuzzOpen: arbitrary bytes as a file. Open never panics; it succeeds or
// returns an error wrapping a header sentinel (ErrNotDablooms, ErrVersion,
// ErrChecksum, ErrCorrupt), an unclean-state or no-slot refusal (the hot
// words are input too), or a plain I/O error. An opened file answers
// Contains and Stats and closes. The seeds (a real two-filter file, its
// truncations and bit flips in every structure) run in plain go test.
func FuzzOpen(f *testing.F) {
	_, good := smallFile(f)
	f.Add(good)
	for _, n := range []int{0, 1, 7, 8, 100, header.PageSize - 1, header.PageSize, 2 * header.PageSize,
		header.FilterLinesOffset, header.SlotsOffset, header.DataOffset - 1, header.DataOffset,
		header.DataOffset + header.PageSize, len(good) - 1} {
		f.Add(good[:n])
	}
	flips := []int{
		0, 8, 10, 12, 16, 24, 32, 40, 48, 56, 64, 72, 76, 80, 96, 104, 112, // metadata fields
		256, 256 + 8, 256 + 16, 256 + 24, 256 + 32, 256 + 40, 256 + 48, 256 + 50, 256 + 51, // directory entry 0
		256 + 56 + 16, 256 + 56 + 48, 256 + 2*56, // entry 1, unused entry 2
		header.MetaSize - 4, header.MetaSize - 1, // checksum
		header.StateOffset, header.StateOffset + 7, header.DiskSeqOffset, header.PublishedOffset, header.PublishedOffset + 7,
		header.BootIDOffset, header.FilterLinesOffset, header.FilterLinesOffset + 7, header.FilterLinesOffset + 8,
		header.FilterLinesOffset + 16, header.FilterLinesOffset + 24, header.FilterLinesOffset + 64,
		header.SlotsOffset, int(header.RecordOffset(0, 0)), int(header.RecordOffset(0, 0)) + 16, int(header.RecordOffset(1, 3)),
		header.DataOffset, header.DataOffset + 100, len(good) - 1,
	}
	for _, off := range flips {
		for _, copyB := range []bool{false, true} {
			if copyB && off >= header.MetaSize {
				continue
			}
			b := append([]byte(nil), good...)
			at := off
			if copyB {
				at += header.MetaBOffset
			}
			b[at] ^= 0x80
			f.Add(b)
			if off < header.MetaSize && !copyB {
				// The same flip in both copies: no valid copy to fall back on.
				b[off+header.MetaBOffset] ^= 0x80
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, ro := range []bool{false, true} {
			g := openBytes(t, b, ro)
			if g == nil {
				continue
			}
			g.ContainsString("key-000000000001")
			g.Contains(nil)
			g.Stats()
			g.Condition()
			g.MemSeqnum()
			g.DiskSeqnum()
			if err := g.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		}
	})
}

// Metadata copy offsets (mirroring header/layout.go, whose constants are
// unexported): the fuzzer is free to pick any offset, these name the seeds.
const (
	offMajor      = 8
	offFlags      = 16
	offGeneration = 24
	offCapacity   = 32
	offErrorRate  = 40
	offGrowth     = 48
	offTighten    = 56
	offHashID     = 72
	offLayoutID   = 76
	offDataOffset = 96
	offNumFilters = 104
	offDirectory  = 256
	entrySize     = 56
	entCapacity   = 8
	entCounters   = 16
	entOffset     = 24
	entLength     = 32
	entErrorRate  = 40
	entK          = 48
	entHashID     = 50
	entLayoutID   = 51
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sealMeta recomputes a metadata copy's checksum: CRC-32C over
// [0, MetaSize-4), stored little-endian at MetaSize-4.
func sealMeta(meta []byte) {
	binary.LittleEndian.PutUint32(meta[header.MetaSize-4:], crc32.Checksum(meta[:header.MetaSize-4], castagnoli))
}

// mutateMeta applies one structure-aware mutation to a copy of good:
// patch is written into metadata copy which&1 at offset off (wrapped into
// the checksummed part), after, if which&4, making that copy's generation
// the highest (so it is the copy Open picks); the copy is then sealed with a
// correct checksum, so the decoder's checks behind the checksum are
// reached. If which&2 the other copy's checksum is broken, so the mutated
// copy is the only candidate.
func mutateMeta(good []byte, which uint8, off uint16, patch []byte) []byte {
	b := append([]byte(nil), good...)
	c := int(which & 1)
	meta := b[c*header.MetaSize : (c+1)*header.MetaSize]
	other := b[(1-c)*header.MetaSize : (2-c)*header.MetaSize]
	if which&4 != 0 {
		g := max(binary.LittleEndian.Uint64(meta[offGeneration:]), binary.LittleEndian.Uint64(other[offGeneration:]))
		binary.LittleEndian.PutUint64(meta[offGeneration:], g+1)
	}
	o := int(off) % (header.MetaSize - 4)
	copy(meta[o:header.MetaSize-4], patch)
	sealMeta(meta)
	if which&2 != 0 {
		other[header.MetaSize-1] ^= 0xff
	}
	return b
}

// FuzzOpenMeta is the structure-aware target: it starts from a valid
// two-filter file and rewrites bytes inside a metadata copy, re-sealing its
// checksum, so the fuzzer explores the parameter and directory checks
// rather than the checksum. Open must not panic; when it opens, Contains,
// Add (which may grow the chain), Remove, Stats, Flush and Close must not
// panic either (their errors are allowed).
func FuzzOpenMeta(f *testing.F) {
	_, good := smallFile(f)
	u64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	u16 := func(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
	f64 := func(v float64) []byte { return u64(math.Float64bits(v)) }
	e0 := func(field int) uint16 { return uint16(offDirectory + field) }
	e1 := func(field int) uint16 { return uint16(offDirectory + entrySize + field) }
	type seed struct {
		off   uint16
		patch []byte
	}
	seeds := []seed{
		{0, nil}, // unchanged, resealed
		{offMajor, u16(2)},
		{offFlags, u64(1)},
		{offGeneration, u64(math.MaxUint64)},
		{offCapacity, u64(0)},
		{offCapacity, u64(1)}, // the next filter is tiny
		{offCapacity, u64(header.MaxFileSize + 1)},
		{offErrorRate, f64(math.NaN())},
		{offErrorRate, f64(0.999999)},
		{offErrorRate, f64(math.SmallestNonzeroFloat64)},
		{offGrowth, f64(1024)},
		{offGrowth, f64(math.Inf(1))},
		{offTighten, f64(1e-300)},
		{offHashID, u32(2)},
		{offLayoutID, u32(2)}, // new filters classic
		{offLayoutID, u32(3)},
		{offDataOffset, u64(0)},
		{offNumFilters, u32(0)},
		{offNumFilters, u32(1)}, // entry 1 then is a non-zero unused entry
		{offNumFilters, u32(3)},
		{offNumFilters, u32(header.MaxFilters + 1)},
		{e0(entCapacity), u64(1)}, // filter 0 "full": Add grows
		{e0(entCapacity), u64(0)},
		{e1(entCapacity), u64(1)}, // the newest filter full: the next Add grows the chain
		{e1(entCapacity), u64(math.MaxUint64)},
		{e0(entCounters), u64(128)}, // fewer counters than the block layout had
		{e0(entCounters), u64(0)},
		{e0(entCounters), u64(127)},
		{e0(entCounters), u64(math.MaxUint64)},
		{e0(entOffset), u64(0)},
		{e0(entOffset), u64(header.DataOffset + header.PageSize)},
		{e0(entLength), u64(header.PageSize)},
		{e0(entLength), u64(1 << 40)},
		{e1(entLength), u64(1 << 20)}, // beyond the file
		{e0(entErrorRate), f64(1)},
		{e0(entK), u16(0)},
		{e0(entK), u16(1)},
		{e0(entK), u16(64)},
		{e0(entK), u16(65)},
		{e0(entHashID), []byte{2}}, // the original's hash for filter 0
		{e0(entHashID), []byte{9}},
		{e0(entLayoutID), []byte{2}}, // reinterpret as classic
		{e0(entLayoutID), []byte{3}}, // partitioned: counters must be k partitions
		{e0(entLayoutID), []byte{0}},
		{e0(entK), append(u16(8), 2, 3)},                // k 8, murmur, partitioned
		{uint16(offDirectory + 2*entrySize), []byte{1}}, // non-zero unused entry
		{header.MetaSize - 5, []byte{0xff}},             // last checksummed byte
	}
	for _, s := range seeds {
		for _, which := range []uint8{0, 6, 1 | 4 | 2} {
			f.Add(which, s.off, s.patch)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, off uint16, patch []byte) {
		if len(patch) > 256 {
			patch = patch[:256]
		}
		b := mutateMeta(good, which, off, patch)
		g := openBytes(t, b, which&8 != 0)
		if g == nil {
			return
		}
		defer func() {
			if err := g.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		}()
		var buf []byte
		for i := range 300 {
			g.Contains(makeKey(buf, "key-", i))
		}
		for i := range 8 {
			buf = makeKey(buf, "new-", i)
			if err := g.Add(buf, uint64(1000+i)); err != nil {
				break
			}
			g.Contains(buf)
		}
		g.RemoveString(keyString("key-", 5), 5)
		g.RemoveString(keyString("new-", 1), 1001)
		g.Stats()
		g.Flush()
		g.Condition()
	})
}

// TestFuzzMetaSealIsValid checks the fuzz target's sealing against the
// decoder: an unchanged, resealed copy made the winner still opens and
// answers like the original, and a sealed copy with a changed parameter is
// refused for that parameter (not for its checksum).
func TestFuzzMetaSealIsValid(t *testing.T) {
	requireFiles(t)
	_, good := smallFile(t)
	for _, which := range []uint8{0, 1, 4, 5, 6, 7} {
		g := openBytes(t, mutateMeta(good, which, 0, nil), false)
		if g == nil {
			t.Fatalf("which=%d: resealed unchanged file does not open", which)
		}
		if !g.ContainsString(keyString("key-", 299)) || len(g.Stats().Filters) != 2 {
			t.Fatalf("which=%d: resealed file lost its keys or filters", which)
		}
		g.Close()
	}
	b := mutateMeta(good, 4|2, offCapacity, binary.LittleEndian.AppendUint64(nil, 0))
	path := filepath.Join(t.TempDir(), "cap0.dbl")
	os.WriteFile(path, b, 0o644)
	_, err := Open(path, nil)
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Field != "capacity" || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("capacity 0 in the only valid copy: %v, want a capacity *CorruptionError", err)
	}
}
