package header

import (
	"encoding/binary"
	"unsafe"
)

// Typed views of the hot region: the global hot page, the per-filter lines
// and the writer slots, the words [HotOffset, DataOffset) that change on
// every operation. Each view is a struct of uint64 words whose layout is the
// format's: its size is its region's and each field lies at the offset of
// its …Offset constant (checked at compile time below, and against
// docs/FORMAT.md's tables by format_doc_test.go; a field's `format` tag is
// its name in those tables). The …Offset constants stay the format's
// definition; the views are how code reads and writes the words.
//
// A view is used two ways:
//   - laid over mapped words (HotAt, LineAt, SlotAt, RecordAt), for atomic
//     access to the live file: hot holds the words from HotOffset to
//     DataOffset, as a writer maps them;
//   - copied out of and into bytes of the file (ReadHot, ReadLine,
//     ReadSlot and the Put functions), little-endian whatever the machine,
//     for tools that work on an image of the file: head holds the file's
//     bytes from offset 0, at least up to the end of the region read.
//   - one word at a time, by field, from and to a file the caller does
//     not map (ReadHotWords, WriteHotWords, ReadLineWords, WriteSlotWords
//     in words.go).
//
// 32-bit platforms: the atomic functions of sync/atomic need 64-bit words
// aligned to 8 bytes, which the compiler guarantees on 386 and arm only for
// the first word of an allocated struct, array or slice. A view laid over
// []uint64 is aligned as its words are: a mapping starts on a page, and the
// elements of an allocated []uint64 are 8-byte aligned (its first word is,
// and each is 8 bytes), so every field of a view is too. Only views from
// these functions may be used atomically, never a Line or Record value
// embedded in another struct.

// View is the set of view types.
type View interface {
	Hot | Line | Slot | Record | Undo
}

// Hot is the start of the global hot page (HotOffset): its words up to
// HotTailOffset; the rest of the page is reserved (zero).
type Hot struct {
	State       uint64    `format:"state"`         // StateOffset: phase in bits 0-1, epoch in bits 2-63
	DiskSeq     uint64    `format:"disk_seqnum"`   // DiskSeqOffset
	Published   uint64    `format:"published"`     // PublishedOffset
	FlushCount  uint64    `format:"flush count"`   // FlushCountOffset
	Retired     uint64    `format:"retired"`       // RetiredOffset (version 1.2)
	Replaced    uint64    `format:"replaced"`      // ReplacedOffset (version 1.3)
	Reserved    [2]uint64 `format:"reserved"`      // HotReservedOffset: zero
	BootID      [2]uint64 `format:"boot id"`       // BootIDOffset: the 16 bytes, as two little-endian words
	DirtySince  uint64    `format:"dirty since"`   // DirtySinceOffset
	CleanBootID uint64    `format:"clean boot id"` // CleanBootIDOffset
	Taking      uint64    `format:"taking"`        // TakingOffset: 0, or the changed-map page a Flush takes
}

// Line is a filter's hot line (FilterLineOffset).
type Line struct {
	Items    uint64 `format:"items"`    // FilterItemsOffset: int64 item count, the part not in the writers' counts
	Mark     uint64 `format:"mark"`     // FilterMarkOffset: epoch of the dirty mark (bit 63: pending)
	MinID    uint64 `format:"min id"`   // FilterMinIDOffset: 2^64−1 while empty
	MaxID    uint64 `format:"max id"`   // FilterMaxIDOffset: bit 63 is Sealed
	Pending  uint64 `format:"pending"`  // FilterPendingOffset: Adds admitted, not yet counted
	Index    uint64 `format:"index"`    // FilterIndexOffset: IndexNone or IndexAllocated
	Writers  uint64 `format:"writers"`  // FilterWritersOffset: bit s: slot s may have a count
	Reserved uint64 `format:"reserved"` // FilterReservedOffset: zero
}

// Slot is a writer slot (SlotOffset): its header line, then its in-flight
// records.
type Slot struct {
	Owner    uint64                 `format:"owner"`    // SlotOwnerOffset: random token, 0 = free
	PID      uint64                 `format:"pid"`      // SlotPIDOffset (informational)
	Reserved uint64                 `format:"reserved"` // SlotReservedOffset: zero
	Opened   uint64                 `format:"opened"`   // SlotOpenedOffset: Unix nanoseconds
	Unused   [4]uint64              `format:"unused"`   // the rest of the header line
	Records  [RecordsPerSlot]Record // RecordOffset: lines 1 … RecordsPerSlot
}

// Record is an in-flight operation record (RecordOffset).
type Record struct {
	Op        uint64 `format:"op"`                // RecOpOffset: an OpWord
	Hash      uint64 `format:"hash"`              // RecHashOffset
	Changed   uint64 `format:"changed"`           // RecChangedOffset
	Doubt     uint64 `format:"doubt"`             // RecDoubtOffset
	Word      uint64 `format:"word"`              // RecWordOffset: evidence, counter word + 1 (0 none)
	New       uint64 `format:"new"`               // RecNewOffset: evidence, the value its CAS stores
	IndexSlot uint64 `format:"index slot"`        // RecIndexSlotOffset: + 1 (0 none); IndexDone
	IndexFP   uint64 `format:"index fingerprint"` // RecIndexFPOffset
}

// Masks returns the record's changed mask, doubt mask and evidence
// (Changed, Doubt, Word, New: four words in a row) as one array, which an
// operation's finish clears in one call.
func (r *Record) Masks() *[4]uint64 { return (*[4]uint64)(unsafe.Pointer(&r.Changed)) }

// The views' layout is the format's. same[x-y] compiles only when x == y: a
// uintptr constant below zero overflows, and an index above zero is out of
// range.
func _() {
	var same [1]struct{}
	var (
		h Hot
		l Line
		s Slot
		r Record
	)
	_ = same[unsafe.Sizeof(h)-(HotTailOffset-HotOffset)]
	_ = same[HotOffset+unsafe.Offsetof(h.State)-StateOffset]
	_ = same[HotOffset+unsafe.Offsetof(h.DiskSeq)-DiskSeqOffset]
	_ = same[HotOffset+unsafe.Offsetof(h.Published)-PublishedOffset]
	_ = same[HotOffset+unsafe.Offsetof(h.FlushCount)-FlushCountOffset]
	_ = same[HotOffset+unsafe.Offsetof(h.Retired)-RetiredOffset]
	_ = same[HotOffset+unsafe.Offsetof(h.Replaced)-ReplacedOffset]
	_ = same[HotOffset+unsafe.Offsetof(h.Reserved)-HotReservedOffset]
	_ = same[HotOffset+unsafe.Offsetof(h.BootID)-BootIDOffset]
	_ = same[HotOffset+unsafe.Offsetof(h.DirtySince)-DirtySinceOffset]
	_ = same[HotOffset+unsafe.Offsetof(h.CleanBootID)-CleanBootIDOffset]
	_ = same[HotOffset+unsafe.Offsetof(h.Taking)-TakingOffset]

	_ = same[unsafe.Sizeof(l)-LineSize]
	_ = same[unsafe.Offsetof(l.Items)-FilterItemsOffset]
	_ = same[unsafe.Offsetof(l.Mark)-FilterMarkOffset]
	_ = same[unsafe.Offsetof(l.MinID)-FilterMinIDOffset]
	_ = same[unsafe.Offsetof(l.MaxID)-FilterMaxIDOffset]
	_ = same[unsafe.Offsetof(l.Pending)-FilterPendingOffset]
	_ = same[unsafe.Offsetof(l.Index)-FilterIndexOffset]
	_ = same[unsafe.Offsetof(l.Writers)-FilterWritersOffset]
	_ = same[unsafe.Offsetof(l.Reserved)-FilterReservedOffset]

	_ = same[unsafe.Sizeof(s)-SlotSize]
	_ = same[unsafe.Offsetof(s.Owner)-SlotOwnerOffset]
	_ = same[unsafe.Offsetof(s.PID)-SlotPIDOffset]
	_ = same[unsafe.Offsetof(s.Reserved)-SlotReservedOffset]
	_ = same[unsafe.Offsetof(s.Opened)-SlotOpenedOffset]
	_ = same[unsafe.Offsetof(s.Unused)-(SlotOpenedOffset+8)]
	_ = same[unsafe.Offsetof(s.Records)-LineSize]

	_ = same[unsafe.Sizeof(r)-LineSize]
	_ = same[unsafe.Offsetof(r.Op)-RecOpOffset]
	_ = same[unsafe.Offsetof(r.Hash)-RecHashOffset]
	_ = same[unsafe.Offsetof(r.Changed)-RecChangedOffset]
	_ = same[unsafe.Offsetof(r.Doubt)-RecDoubtOffset]
	_ = same[unsafe.Offsetof(r.Word)-RecWordOffset]
	_ = same[unsafe.Offsetof(r.New)-RecNewOffset]
	_ = same[unsafe.Offsetof(r.IndexSlot)-RecIndexSlotOffset]
	_ = same[unsafe.Offsetof(r.IndexFP)-RecIndexFPOffset]
	_ = same[unsafe.Offsetof(r.New)-unsafe.Offsetof(r.Changed)-24] // (Masks)
}

// word is the index in the hot region's words of the word at file offset off.
func word(off int64) int64 { return (off - HotOffset) / 8 }

// HotAt lays a Hot over the hot region's words.
func HotAt(hot []uint64) *Hot {
	return (*Hot)(unsafe.Pointer((*[unsafe.Sizeof(Hot{}) / 8]uint64)(hot)))
}

// LineAt lays a Line over the hot region's words: filter line i.
func LineAt(hot []uint64, i int) *Line {
	return (*Line)(unsafe.Pointer((*[LineSize / 8]uint64)(hot[word(FilterLineOffset(i)):])))
}

// SlotAt lays a Slot over the hot region's words: writer slot s.
func SlotAt(hot []uint64, s int) *Slot {
	return (*Slot)(unsafe.Pointer((*[SlotSize / 8]uint64)(hot[word(SlotOffset(s)):])))
}

// RecordAt lays a Record over the hot region's words: record r of writer
// slot s.
func RecordAt(hot []uint64, s, r int) *Record {
	return (*Record)(unsafe.Pointer((*[LineSize / 8]uint64)(hot[word(RecordOffset(s, r)):])))
}

// words returns the words of a view.
func words[V View](v *V) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(v)), unsafe.Sizeof(*v)/8)
}

func readView[V View](b []byte) (v V) {
	w := words(&v)
	b = b[:8*len(w)]
	for j := range w {
		w[j] = binary.LittleEndian.Uint64(b[8*j:])
	}
	return v
}

func writeView[V View](b []byte, v *V) {
	w := words(v)
	b = b[:8*len(w)]
	for j, x := range w {
		binary.LittleEndian.PutUint64(b[8*j:], x)
	}
}

// ReadHot reads the Hot at HotOffset of head.
func ReadHot(head []byte) Hot { return readView[Hot](head[HotOffset:]) }

// PutHot writes h at HotOffset of head.
func PutHot(head []byte, h Hot) { writeView(head[HotOffset:], &h) }

// ReadLine reads filter line i of head.
func ReadLine(head []byte, i int) Line { return readView[Line](head[FilterLineOffset(i):]) }

// PutLine writes l as filter line i of head.
func PutLine(head []byte, i int, l Line) { writeView(head[FilterLineOffset(i):], &l) }

// ReadSlot reads writer slot s of head, its records included.
func ReadSlot(head []byte, s int) Slot { return readView[Slot](head[SlotOffset(s):]) }

// PutSlot writes sl as writer slot s of head, its records included.
func PutSlot(head []byte, s int, sl Slot) { writeView(head[SlotOffset(s):], &sl) }

// FieldOffset returns the offset within the view v of its word w (w is
// &v.Field, or a word of an array field): the field's …Offset constant, for
// reports that say where a word lies in the file. It returns -1 if w is not
// a word of v.
func FieldOffset[V View](v *V, w *uint64) int64 {
	d := uintptr(unsafe.Pointer(w)) - uintptr(unsafe.Pointer(v))
	if d >= unsafe.Sizeof(*v) {
		return -1
	}
	return int64(d)
}
