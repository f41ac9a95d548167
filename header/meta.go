package header

import (
	"cmp"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"slices"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Params are the parameters a file was created with. They are stored in the
// file so that reopening needs nothing from the caller.
type Params struct {
	Capacity        uint64  // items in the first filter
	ErrorRate       float64 // bound on the false-positive rate of the whole chain
	GrowthFactor    float64 // capacity of filter i+1 = capacity of filter i × growth
	TighteningRatio float64 // error target of filter i+1 = that of filter i × ratio
	Seed            uint64  // hash seed
	HashID          uint32  // hash algorithm for new filters
	LayoutID        uint32  // counter layout for new filters
}

// FilterDesc is one directory entry: where a filter lives and how it hashes.
type FilterDesc struct {
	FirstID   uint64  // first id routed to the filter when it was created
	Capacity  uint64  // items the filter was sized for
	Counters  uint64  // number of 4-bit counters
	Offset    int64   // byte offset of the counters, page-aligned
	Length    int64   // bytes reserved for the filter (counters, then index), page-aligned
	Extra     int64   // bytes after the counters, page-aligned: the writers' item counts page, then the late-add index (0: none, a 1.0 filter), then the check pages (Sums)
	ErrorRate float64 // false-positive target of this filter at capacity
	K         int     // counters per key
	HashID    uint8
	LayoutID  uint8
	// Slot is the filter's directory entry, which also names its hot line,
	// its salt, its place in the sizing schedule and the filter in
	// in-flight records. It is the filter's place in the chain in a file
	// without FlagRing; with it, the lowest entry free when the filter was
	// appended. Not stored in the entry: it is where the entry is.
	Slot int
	// Sums is the bytes of the filter's check pages, the last of its
	// extra pages (version 1.4, FlagPageSums: its changed map and page
	// checksums, SumLayout); 0 in a file without the flag. Not stored in
	// the entry: it follows from the length (SumLayoutOf).
	Sums int64
}

// CounterBytes returns the bytes reserved for the counters: the filter's
// length less its extra pages.
func (f *FilterDesc) CounterBytes() int64 { return f.Length - f.Extra }

// HasCounts reports whether the filter has a page of per-writer item
// counts (CountsOffset).
func (f *FilterDesc) HasCounts() bool { return f.Extra-f.Sums > 0 }

// CountsOffset returns the offset of the filter's per-writer item counts
// page (when HasCounts).
func (f *FilterDesc) CountsOffset() int64 { return f.Offset + f.CounterBytes() }

// IndexBytes returns the size of the filter's late-add index (0: none).
func (f *FilterDesc) IndexBytes() int64 { return max(f.Extra-f.Sums-PageSize, 0) }

// IndexOffset returns the offset of the filter's late-add index.
func (f *FilterDesc) IndexOffset() int64 { return f.CountsOffset() + PageSize }

// Meta is a decoded metadata copy.
type Meta struct {
	Major, Minor uint16
	Flags        uint64
	Generation   uint64
	Params       Params
	Created      int64 // Unix nanoseconds
	// Retired counts the filters ever retired from the front of the chain
	// (0 without FlagRing): filter j of Filters is the chain's filter
	// number Retired+j since the file was created.
	Retired uint64
	Filters []FilterDesc // the chain, oldest first
}

// End returns the file size the directory implies: the end of the filter
// that ends last, or DataOffset when there is none.
func (m *Meta) End() int64 {
	end := int64(DataOffset)
	for i := range m.Filters {
		end = max(end, m.Filters[i].Offset+m.Filters[i].Length)
	}
	return end
}

// SameDirectory reports whether m and o describe the same file, their
// generations aside: every write of a copy advances its generation, and
// a whole metadata write leaves both copies otherwise alike, so two
// copies that differ in anything else were left by a write cut short.
func (m *Meta) SameDirectory(o *Meta) bool {
	return m.Major == o.Major && m.Minor == o.Minor && m.Flags == o.Flags &&
		m.Params == o.Params && m.Created == o.Created && m.Retired == o.Retired &&
		slices.Equal(m.Filters, o.Filters)
}

// Slots returns the directory entries the chain uses: bit e for entry e.
func (m *Meta) Slots() uint64 {
	var used uint64
	for i := range m.Filters {
		used |= 1 << m.Filters[i].Slot
	}
	return used
}

// FreeSlot returns the lowest directory entry that no filter of the chain
// uses and avoid does not name (bit e: entry e), or -1 if there is none.
func (m *Meta) FreeSlot(avoid uint64) int {
	taken := m.Slots() | avoid
	for s := range MaxFilters {
		if taken&(1<<s) == 0 {
			return s
		}
	}
	return -1
}

// Place returns the lowest page-aligned offset at or after DataOffset
// where length bytes overlap no filter of the chain: the first gap a
// retired filter left that is large enough, or the end of the directory.
func (m *Meta) Place(length int64) int64 {
	spans := make([][2]int64, len(m.Filters))
	for i := range m.Filters {
		spans[i] = [2]int64{m.Filters[i].Offset, m.Filters[i].Offset + m.Filters[i].Length}
	}
	slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	at := int64(DataOffset)
	for _, sp := range spans {
		if sp[0]-at >= length {
			return at
		}
		at = max(at, sp[1])
	}
	return at
}

// Encode writes m into dst, which must be MetaSize bytes, and seals it with a
// checksum. It does not validate m; callers build m from validated values.
func Encode(dst []byte, m *Meta) {
	_ = dst[MetaSize-1]
	clear(dst[:MetaSize])
	le := binary.LittleEndian
	copy(dst[offMagic:], Magic[:])
	le.PutUint16(dst[offMajor:], VersionMajor)
	le.PutUint16(dst[offMinor:], VersionMinor)
	le.PutUint32(dst[offMetaSize:], MetaSize)
	le.PutUint64(dst[offFlags:], m.Flags)
	le.PutUint64(dst[offGeneration:], m.Generation)
	p := &m.Params
	le.PutUint64(dst[offCapacity:], p.Capacity)
	le.PutUint64(dst[offErrorRate:], math.Float64bits(p.ErrorRate))
	le.PutUint64(dst[offGrowth:], math.Float64bits(p.GrowthFactor))
	le.PutUint64(dst[offTighten:], math.Float64bits(p.TighteningRatio))
	le.PutUint64(dst[offSeed:], p.Seed)
	le.PutUint32(dst[offHashID:], p.HashID)
	le.PutUint32(dst[offLayoutID:], p.LayoutID)
	le.PutUint32(dst[offMaxFilters:], MaxFilters)
	le.PutUint32(dst[offNumSlots:], NumSlots)
	le.PutUint32(dst[offSlotSize:], SlotSize)
	le.PutUint32(dst[offRecords:], RecordsPerSlot)
	le.PutUint64(dst[offDataOffset:], DataOffset)
	le.PutUint32(dst[offNumFilters:], uint32(len(m.Filters)))
	le.PutUint64(dst[offCreated:], uint64(m.Created))
	ring := m.Flags&FlagRing != 0
	if ring {
		le.PutUint64(dst[offRetired:], m.Retired)
	}
	for i, f := range m.Filters {
		slot := i
		if ring {
			slot = f.Slot
			dst[offOrder+i] = uint8(slot)
		}
		e := dst[offDirectory+slot*entrySize:]
		le.PutUint64(e[entFirstID:], f.FirstID)
		le.PutUint64(e[entCapacity:], f.Capacity)
		le.PutUint64(e[entCounters:], f.Counters)
		le.PutUint64(e[entOffset:], uint64(f.Offset))
		le.PutUint64(e[entLength:], uint64(f.Length))
		le.PutUint64(e[entErrorRate:], math.Float64bits(f.ErrorRate))
		le.PutUint16(e[entK:], uint16(f.K))
		e[entHashID] = f.HashID
		e[entLayoutID] = f.LayoutID
		le.PutUint32(e[entExtraPages:], uint32(f.Extra/PageSize))
	}
	le.PutUint32(dst[offChecksum:], crc32.Checksum(dst[:offChecksum], castagnoli))
}

// EncodeBoth writes m as both metadata copies of head, a file's bytes from
// offset 0 (at least 2×MetaSize of them), with Encode: for a tool that
// writes a file's head afresh. (A writer of a live file writes one copy at
// a time and makes it durable before it touches the other: see the
// package documentation.)
func EncodeBoth(head []byte, m *Meta) {
	Encode(head[MetaAOffset:MetaAOffset+MetaSize], m)
	Encode(head[MetaBOffset:MetaBOffset+MetaSize], m)
}

// Checksum returns the checksum stored in a copy and the one its bytes have.
func Checksum(b []byte) (stored, actual uint32) {
	return binary.LittleEndian.Uint32(b[offChecksum:]), crc32.Checksum(b[:offChecksum], castagnoli)
}

// Decode parses and validates one metadata copy found at file offset base in
// a file of fileSize bytes. The directory must fit in fileSize; pass
// fileSize < 0 to skip that check (a copy is then validated on its own).
func Decode(b []byte, base, fileSize int64) (*Meta, error) {
	if len(b) < MetaSize {
		return nil, corrupt(ErrNotDablooms, base, -1, "metadata", "only %d bytes, need %d", len(b), MetaSize)
	}
	b = b[:MetaSize]
	m, err := decodeFixed(b, base)
	if err != nil {
		return nil, err
	}
	if err := decodeParams(b, base, &m.Params); err != nil {
		return nil, err
	}
	if m.Filters, m.Retired, err = decodeDirectory(b, base, fileSize, m.Flags&FlagRing != 0, m.Flags&FlagPageSums != 0); err != nil {
		return nil, err
	}
	for i := range m.Filters {
		if m.Filters[i].Extra > m.Filters[i].Sums && m.Flags&FlagExtras == 0 {
			// A 1.0 library would open the file and miscount its items.
			return nil, corrupt(ErrCorrupt, base+offFlags, i, "flags", "filter %d has extra pages but the FlagExtras feature flag is not set", i)
		}
	}
	return m, nil
}

// decodeFixed checks the magic, the checksum, the version and the fields
// every copy holds the same, and reads the generation, flags and time.
func decodeFixed(b []byte, base int64) (*Meta, error) {
	le := binary.LittleEndian
	if [8]byte(b[offMagic:offMagic+8]) != Magic {
		return nil, corrupt(ErrNotDablooms, base+offMagic, -1, "magic", "got %q", b[offMagic:offMagic+8])
	}
	if stored, actual := Checksum(b); stored != actual {
		return nil, corrupt(ErrChecksum, base+offChecksum, -1, "checksum", "stored %08x, computed %08x", stored, actual)
	}
	m := &Meta{
		Major:      le.Uint16(b[offMajor:]),
		Minor:      le.Uint16(b[offMinor:]),
		Flags:      le.Uint64(b[offFlags:]),
		Generation: le.Uint64(b[offGeneration:]),
		Created:    int64(le.Uint64(b[offCreated:])),
	}
	if m.Major != VersionMajor {
		return nil, corrupt(ErrVersion, base+offMajor, -1, "version", "major version %d, this library reads %d", m.Major, VersionMajor)
	}
	if m.Flags&^KnownFlags != 0 {
		return nil, corrupt(ErrVersion, base+offFlags, -1, "flags", "unknown feature flags %#x", m.Flags&^KnownFlags)
	}
	type u32field struct {
		off  int64
		name string
		want uint32
	}
	for _, f := range []u32field{
		{offMetaSize, "meta size", MetaSize}, {offMaxFilters, "max filters", MaxFilters},
		{offNumSlots, "slot count", NumSlots}, {offSlotSize, "slot size", SlotSize},
		{offRecords, "records per slot", RecordsPerSlot},
	} {
		if v := le.Uint32(b[f.off:]); v != f.want {
			return nil, corrupt(ErrCorrupt, base+f.off, -1, f.name, "%d, expected %d", v, f.want)
		}
	}
	if v := le.Uint64(b[offDataOffset:]); v != DataOffset {
		return nil, corrupt(ErrCorrupt, base+offDataOffset, -1, "data offset", "%d, expected %d", v, DataOffset)
	}
	return m, nil
}

// decodeParams reads and validates the file parameters into p.
func decodeParams(b []byte, base int64, p *Params) error {
	le := binary.LittleEndian
	p.Capacity = le.Uint64(b[offCapacity:])
	p.ErrorRate = math.Float64frombits(le.Uint64(b[offErrorRate:]))
	p.GrowthFactor = math.Float64frombits(le.Uint64(b[offGrowth:]))
	p.TighteningRatio = math.Float64frombits(le.Uint64(b[offTighten:]))
	p.Seed = le.Uint64(b[offSeed:])
	p.HashID = le.Uint32(b[offHashID:])
	p.LayoutID = le.Uint32(b[offLayoutID:])
	if err := ValidateParams(p); err != nil {
		ce := err.(*CorruptionError)
		ce.Offset += base
		return ce
	}
	return nil
}

// decodeDirectory reads and validates the directory: 1 … MaxFilters
// page-aligned entries within fileSize (if ≥ 0), and the unused entries all
// zero, so stale data can't be mistaken for a filter. Without FlagRing the
// chain is entries 0 … n-1, its filters contiguous from DataOffset; with it,
// the order list names the chain's entries, whose filters may lie anywhere
// after DataOffset but never overlap.
func decodeDirectory(b []byte, base, fileSize int64, ring, sums bool) ([]FilterDesc, uint64, error) {
	le := binary.LittleEndian
	n := le.Uint32(b[offNumFilters:])
	if n == 0 || n > MaxFilters {
		return nil, 0, corrupt(ErrCorrupt, base+offNumFilters, -1, "filter count", "%d, must be 1 to %d", n, MaxFilters)
	}
	retired := le.Uint64(b[offRetired:])
	if err := checkRetired(b, base, retired, ring); err != nil {
		return nil, 0, err
	}
	var used [MaxFilters]bool
	filters := make([]FilterDesc, n)
	prevEnd := int64(DataOffset)
	for i := range filters {
		slot := i
		if ring {
			slot = int(b[offOrder+i])
			if slot >= MaxFilters || used[slot] {
				return nil, 0, corrupt(ErrCorrupt, base+offOrder+int64(i), i, "order", "entry %d is not a free directory entry", slot)
			}
		}
		used[slot] = true
		f, err := decodeEntry(b, base, slot, prevEnd, fileSize, ring, sums)
		if err != nil {
			return nil, 0, err
		}
		f.Slot = slot
		filters[i] = f
		prevEnd = f.Offset + f.Length
	}
	if ring {
		if err := checkRing(b, base, filters); err != nil {
			return nil, 0, err
		}
	}
	if err := checkUnused(b, base, &used); err != nil {
		return nil, 0, err
	}
	return filters, retired, nil
}

// checkRetired checks the retired count and, without FlagRing (ring),
// that neither it nor the order list is used.
func checkRetired(b []byte, base int64, retired uint64, ring bool) error {
	if ring {
		if retired > MaxID-MaxFilters {
			return corrupt(ErrCorrupt, base+offRetired, -1, "retired", "%d is beyond any chain", retired)
		}
		return nil
	}
	if retired != 0 {
		return corrupt(ErrCorrupt, base+offRetired, -1, "retired", "%d retired filters without the FlagRing feature flag", retired)
	}
	for i, c := range b[offOrder : offOrder+MaxFilters] {
		if c != 0 {
			return corrupt(ErrCorrupt, base+offOrder+int64(i), -1, "order", "order list without the FlagRing feature flag")
		}
	}
	return nil
}

// checkRing checks a ring directory's order list past the chain (zero)
// and that no two of its filters overlap.
func checkRing(b []byte, base int64, filters []FilterDesc) error {
	for i := len(filters); i < MaxFilters; i++ {
		if b[offOrder+i] != 0 {
			return corrupt(ErrCorrupt, base+offOrder+int64(i), -1, "order", "byte %d past the chain is not zero", i)
		}
	}
	spans := slices.Clone(filters)
	slices.SortFunc(spans, func(x, y FilterDesc) int { return cmp.Compare(x.Offset, y.Offset) })
	for i := 1; i < len(spans); i++ {
		if prev := spans[i-1]; spans[i].Offset < prev.Offset+prev.Length {
			at := base + int64(offDirectory+spans[i].Slot*entrySize) + entOffset
			return corrupt(ErrCorrupt, at, spans[i].Slot, "offset", "filter at %d overlaps the one at %d", spans[i].Offset, prev.Offset)
		}
	}
	return nil
}

// checkUnused checks that every directory entry no filter uses is zero.
func checkUnused(b []byte, base int64, used *[MaxFilters]bool) error {
	for i := range MaxFilters {
		if used[i] {
			continue
		}
		e := b[offDirectory+i*entrySize : offDirectory+(i+1)*entrySize]
		for _, c := range e {
			if c != 0 {
				return corrupt(ErrCorrupt, base+int64(offDirectory+i*entrySize), i, "directory", "unused entry is not zero")
			}
		}
	}
	return nil
}

// decodeEntry reads and validates directory entry i, which must start at
// prevEnd (the end of the one before it) unless ring (then at or after
// DataOffset). With sums (FlagPageSums) the filter ends with check pages.
func decodeEntry(b []byte, base int64, i int, prevEnd, fileSize int64, ring, sums bool) (FilterDesc, error) {
	le := binary.LittleEndian
	eoff := int64(offDirectory + i*entrySize)
	e := b[eoff:]
	f := FilterDesc{
		FirstID:   le.Uint64(e[entFirstID:]),
		Capacity:  le.Uint64(e[entCapacity:]),
		Counters:  le.Uint64(e[entCounters:]),
		ErrorRate: math.Float64frombits(le.Uint64(e[entErrorRate:])),
		K:         int(le.Uint16(e[entK:])),
		HashID:    e[entHashID],
		LayoutID:  e[entLayoutID],
		Extra:     int64(le.Uint32(e[entExtraPages:])) * PageSize,
	}
	off, length := le.Uint64(e[entOffset:]), le.Uint64(e[entLength:])
	at := base + eoff
	switch {
	case off > MaxFileSize || length > MaxFileSize:
		return f, corrupt(ErrCorrupt, at+entOffset, i, "offset/length", "offset %d length %d beyond the largest file", off, length)
	case !ring && int64(off) != prevEnd:
		return f, corrupt(ErrCorrupt, at+entOffset, i, "offset", "%d, expected %d (filters are contiguous)", off, prevEnd)
	case ring && int64(off) < DataOffset:
		return f, corrupt(ErrCorrupt, at+entOffset, i, "offset", "%d, before the data at %d", off, DataOffset)
	case off%PageSize != 0 || length%PageSize != 0 || length == 0:
		return f, corrupt(ErrCorrupt, at+entLength, i, "length", "offset %d length %d not page-aligned or empty", off, length)
	}
	f.Offset, f.Length = int64(off), int64(length)
	end := f.Offset + f.Length // no overflow: both ≤ 2^40
	if end > MaxFileSize {
		return f, corrupt(ErrCorrupt, at+entLength, i, "length", "filter ends at %d, beyond the largest file", end)
	}
	if fileSize >= 0 && end > fileSize {
		return f, corrupt(ErrCorrupt, at+entLength, i, "length", "filter ends at %d, file has %d bytes", end, fileSize)
	}
	if sums {
		l, ok := SumLayoutOf(f.Offset, f.Length)
		if !ok || l.End-l.MapOffset > f.Extra {
			return f, corrupt(ErrCorrupt, at+entLength, i, "length", "%d bytes with %d extra have no room for the check pages of a file with page checksums", f.Length, f.Extra)
		}
		f.Sums = l.End - l.MapOffset
	}
	if err := validateEntry(&f); err != nil {
		ce := err.(*CorruptionError)
		ce.Offset, ce.Filter = at+ce.Offset, i
		return f, ce
	}
	return f, nil
}

func validateEntry(f *FilterDesc) error {
	switch {
	case f.K < 1 || f.K > MaxK:
		return corrupt(ErrCorrupt, entK, -1, "k", "%d outside [1, %d]", f.K, MaxK)
	case f.Capacity == 0:
		return corrupt(ErrCorrupt, entCapacity, -1, "capacity", "zero")
	case !(f.ErrorRate > 0 && f.ErrorRate < 1):
		return corrupt(ErrCorrupt, entErrorRate, -1, "error rate", "%v outside (0, 1)", f.ErrorRate)
	case f.HashID != HashXXH64Seeded && f.HashID != HashMurmur3Orig:
		return corrupt(ErrCorrupt, entHashID, -1, "hash id", "unknown hash %d", f.HashID)
	case f.LayoutID < LayoutBlocked512 || f.LayoutID > LayoutBlocked1024:
		return corrupt(ErrCorrupt, entLayoutID, -1, "layout id", "unknown layout %d", f.LayoutID)
	case f.Extra >= f.Length:
		return corrupt(ErrCorrupt, entExtraPages, -1, "extra pages", "%d extra bytes leave no room for counters in %d bytes", f.Extra, f.Length)
	case f.IndexBytes() != 0 && f.HashID != HashXXH64Seeded:
		return corrupt(ErrCorrupt, entExtraPages, -1, "extra pages", "a filter with hash %d has no late-add index", f.HashID)
	case f.Counters == 0 || f.Counters > uint64(f.CounterBytes())*2:
		return corrupt(ErrCorrupt, entCounters, -1, "counters", "%d counters do not fit in %d bytes", f.Counters, f.CounterBytes())
	case f.LayoutID == LayoutBlocked1024 && f.Counters%256 != 0:
		return corrupt(ErrCorrupt, entCounters, -1, "counters", "%d is not a whole number of 256-counter blocks", f.Counters)
	case f.LayoutID == LayoutBlocked512 && f.Counters%128 != 0:
		return corrupt(ErrCorrupt, entCounters, -1, "counters", "%d is not a whole number of 128-counter blocks", f.Counters)
	case f.LayoutID == LayoutPartitioned && (f.Counters%uint64(f.K) != 0 || f.Counters/uint64(f.K) > math.MaxUint32):
		return corrupt(ErrCorrupt, entCounters, -1, "counters", "%d is not k=%d partitions of at most 2^32 counters", f.Counters, f.K)
	}
	return nil
}

// ValidateParams checks file parameters. Errors are *CorruptionError with
// offsets relative to the start of a metadata copy.
func ValidateParams(p *Params) error {
	switch {
	case p.Capacity == 0 || p.Capacity > MaxFileSize:
		return corrupt(ErrCorrupt, offCapacity, -1, "capacity", "%d outside [1, 2^40]", p.Capacity)
	case !(p.ErrorRate > 0 && p.ErrorRate < 1):
		return corrupt(ErrCorrupt, offErrorRate, -1, "error rate", "%v outside (0, 1)", p.ErrorRate)
	case !(p.GrowthFactor >= 1 && p.GrowthFactor <= 1024):
		return corrupt(ErrCorrupt, offGrowth, -1, "growth factor", "%v outside [1, 1024]", p.GrowthFactor)
	case !(p.TighteningRatio > 0 && p.TighteningRatio < 1):
		return corrupt(ErrCorrupt, offTighten, -1, "tightening ratio", "%v outside (0, 1)", p.TighteningRatio)
	case p.HashID != HashXXH64Seeded:
		return corrupt(ErrCorrupt, offHashID, -1, "hash id", "new filters must use hash %d, got %d", HashXXH64Seeded, p.HashID)
	case p.LayoutID != LayoutBlocked512 && p.LayoutID != LayoutBlocked1024 && p.LayoutID != LayoutClassic:
		return corrupt(ErrCorrupt, offLayoutID, -1, "layout id", "new filters must use layout %d, %d or %d, got %d", LayoutBlocked512, LayoutBlocked1024, LayoutClassic, p.LayoutID)
	}
	return nil
}

// Picked is the metadata copy Pick chose.
type Picked struct {
	*Meta       // the valid copy with the higher generation
	Which int   // which copy it is: 0 = A, 1 = B
	Bad   error // the other copy's error, if only one is valid
}

// Pick decodes both copies from the first 2×MetaSize bytes of a file of
// fileSize bytes and returns the valid one with the higher generation. If
// only one copy is valid, Bad holds the other's error. If neither is valid
// the error of copy A is returned (or B's, if A's is only a checksum error
// and B's says more).
func Pick(b []byte, fileSize int64) (*Picked, error) {
	if len(b) < 2*MetaSize || fileSize < DataOffset {
		n := int64(len(b))
		if fileSize >= 0 && fileSize < n {
			n = fileSize
		}
		if n >= 8 && [8]byte(b[:8]) != Magic {
			return nil, corrupt(ErrNotDablooms, 0, -1, "magic", "got %q", b[:8])
		}
		return nil, corrupt(ErrNotDablooms, 0, -1, "size", "file has %d bytes, a dablooms file has at least %d", n, DataOffset)
	}
	a, errA := Decode(b[MetaAOffset:], MetaAOffset, fileSize)
	bm, errB := Decode(b[MetaBOffset:], MetaBOffset, fileSize)
	switch {
	case errA == nil && errB == nil:
		if bm.Generation > a.Generation {
			return &Picked{Meta: bm, Which: 1}, nil
		}
		return &Picked{Meta: a}, nil
	case errA == nil:
		return &Picked{Meta: a, Bad: errB}, nil
	case errB == nil:
		return &Picked{Meta: bm, Which: 1, Bad: errA}, nil
	}
	if errors.Is(errA, ErrChecksum) && (errors.Is(errB, ErrVersion) || errors.Is(errB, ErrCorrupt)) {
		return nil, errB
	}
	return nil, errA
}
