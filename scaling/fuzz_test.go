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

// t2FuzzReserve keeps each fuzz input's mapping small; a growth beyond it is
// an error (ErrRange), never a huge allocation.
const t2FuzzReserve = 64 << 20

// t2OpenBytes writes b to a fresh file and opens it. Open must not panic,
// and an error must be one t2OpenErrorOK accepts.
func t2OpenBytes(t *testing.T, b []byte, ro bool) *Filter {
	path := filepath.Join(t.TempDir(), "fuzz.dbl")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path, &OpenOptions{ReadOnly: ro, Reserve: t2FuzzReserve})
	if err != nil {
		if f != nil {
			t.Fatalf("Open returned a *Filter with error %v", err)
		}
		if !t2OpenErrorOK(err) {
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
	_, good := t2SmallFile(f)
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
			g := t2OpenBytes(t, b, ro)
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
	t2OffMajor      = 8
	t2OffFlags      = 16
	t2OffGeneration = 24
	t2OffCapacity   = 32
	t2OffErrorRate  = 40
	t2OffGrowth     = 48
	t2OffTighten    = 56
	t2OffHashID     = 72
	t2OffLayoutID   = 76
	t2OffDataOffset = 96
	t2OffNumFilters = 104
	t2OffDirectory  = 256
	t2EntrySize     = 56
	t2EntCapacity   = 8
	t2EntCounters   = 16
	t2EntOffset     = 24
	t2EntLength     = 32
	t2EntErrorRate  = 40
	t2EntK          = 48
	t2EntHashID     = 50
	t2EntLayoutID   = 51
)

var t2Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// t2Seal recomputes a metadata copy's checksum: CRC-32C over
// [0, MetaSize-4), stored little-endian at MetaSize-4.
func t2Seal(meta []byte) {
	binary.LittleEndian.PutUint32(meta[header.MetaSize-4:], crc32.Checksum(meta[:header.MetaSize-4], t2Castagnoli))
}

// t2MutateMeta applies one structure-aware mutation to a copy of good:
// patch is written into metadata copy which&1 at offset off (wrapped into
// the checksummed part), after, if which&4, making that copy's generation
// the highest (so it is the copy Open picks); the copy is then sealed with a
// correct checksum, so the decoder's checks behind the checksum are
// reached. If which&2 the other copy's checksum is broken, so the mutated
// copy is the only candidate.
func t2MutateMeta(good []byte, which uint8, off uint16, patch []byte) []byte {
	b := append([]byte(nil), good...)
	c := int(which & 1)
	meta := b[c*header.MetaSize : (c+1)*header.MetaSize]
	other := b[(1-c)*header.MetaSize : (2-c)*header.MetaSize]
	if which&4 != 0 {
		g := max(binary.LittleEndian.Uint64(meta[t2OffGeneration:]), binary.LittleEndian.Uint64(other[t2OffGeneration:]))
		binary.LittleEndian.PutUint64(meta[t2OffGeneration:], g+1)
	}
	o := int(off) % (header.MetaSize - 4)
	copy(meta[o:header.MetaSize-4], patch)
	t2Seal(meta)
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
	_, good := t2SmallFile(f)
	u64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	u16 := func(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
	f64 := func(v float64) []byte { return u64(math.Float64bits(v)) }
	e0 := func(field int) uint16 { return uint16(t2OffDirectory + field) }
	e1 := func(field int) uint16 { return uint16(t2OffDirectory + t2EntrySize + field) }
	type seed struct {
		off   uint16
		patch []byte
	}
	seeds := []seed{
		{0, nil}, // unchanged, resealed
		{t2OffMajor, u16(2)},
		{t2OffFlags, u64(1)},
		{t2OffGeneration, u64(math.MaxUint64)},
		{t2OffCapacity, u64(0)},
		{t2OffCapacity, u64(1)}, // the next filter is tiny
		{t2OffCapacity, u64(header.MaxFileSize + 1)},
		{t2OffErrorRate, f64(math.NaN())},
		{t2OffErrorRate, f64(0.999999)},
		{t2OffErrorRate, f64(math.SmallestNonzeroFloat64)},
		{t2OffGrowth, f64(1024)},
		{t2OffGrowth, f64(math.Inf(1))},
		{t2OffTighten, f64(1e-300)},
		{t2OffHashID, u32(2)},
		{t2OffLayoutID, u32(2)}, // new filters classic
		{t2OffLayoutID, u32(3)},
		{t2OffDataOffset, u64(0)},
		{t2OffNumFilters, u32(0)},
		{t2OffNumFilters, u32(1)}, // entry 1 then is a non-zero unused entry
		{t2OffNumFilters, u32(3)},
		{t2OffNumFilters, u32(header.MaxFilters + 1)},
		{e0(t2EntCapacity), u64(1)}, // filter 0 "full": Add grows
		{e0(t2EntCapacity), u64(0)},
		{e1(t2EntCapacity), u64(1)}, // the newest filter full: the next Add grows the chain
		{e1(t2EntCapacity), u64(math.MaxUint64)},
		{e0(t2EntCounters), u64(128)}, // fewer counters than the block layout had
		{e0(t2EntCounters), u64(0)},
		{e0(t2EntCounters), u64(127)},
		{e0(t2EntCounters), u64(math.MaxUint64)},
		{e0(t2EntOffset), u64(0)},
		{e0(t2EntOffset), u64(header.DataOffset + header.PageSize)},
		{e0(t2EntLength), u64(header.PageSize)},
		{e0(t2EntLength), u64(1 << 40)},
		{e1(t2EntLength), u64(1 << 20)}, // beyond the file
		{e0(t2EntErrorRate), f64(1)},
		{e0(t2EntK), u16(0)},
		{e0(t2EntK), u16(1)},
		{e0(t2EntK), u16(64)},
		{e0(t2EntK), u16(65)},
		{e0(t2EntHashID), []byte{2}}, // the original's hash for filter 0
		{e0(t2EntHashID), []byte{9}},
		{e0(t2EntLayoutID), []byte{2}}, // reinterpret as classic
		{e0(t2EntLayoutID), []byte{3}}, // partitioned: counters must be k partitions
		{e0(t2EntLayoutID), []byte{0}},
		{e0(t2EntK), append(u16(8), 2, 3)},                  // k 8, murmur, partitioned
		{uint16(t2OffDirectory + 2*t2EntrySize), []byte{1}}, // non-zero unused entry
		{header.MetaSize - 5, []byte{0xff}},                 // last checksummed byte
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
		b := t2MutateMeta(good, which, off, patch)
		g := t2OpenBytes(t, b, which&8 != 0)
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
			g.Contains(t2Key(buf, "key-", i))
		}
		for i := range 8 {
			buf = t2Key(buf, "new-", i)
			if err := g.Add(buf, uint64(1000+i)); err != nil {
				break
			}
			g.Contains(buf)
		}
		g.RemoveString(t2KeyS("key-", 5), 5)
		g.RemoveString(t2KeyS("new-", 1), 1001)
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
	_, good := t2SmallFile(t)
	for _, which := range []uint8{0, 1, 4, 5, 6, 7} {
		g := t2OpenBytes(t, t2MutateMeta(good, which, 0, nil), false)
		if g == nil {
			t.Fatalf("which=%d: resealed unchanged file does not open", which)
		}
		if !g.ContainsString(t2KeyS("key-", 299)) || len(g.Stats().Filters) != 2 {
			t.Fatalf("which=%d: resealed file lost its keys or filters", which)
		}
		g.Close()
	}
	b := t2MutateMeta(good, 4|2, t2OffCapacity, binary.LittleEndian.AppendUint64(nil, 0))
	path := filepath.Join(t.TempDir(), "cap0.dbl")
	os.WriteFile(path, b, 0o644)
	_, err := Open(path, nil)
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Field != "capacity" || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("capacity 0 in the only valid copy: %v, want a capacity *CorruptionError", err)
	}
}
