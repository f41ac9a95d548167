package header

import "strconv"

// File-level constants. Offsets are in bytes from the start of the file.
const (
	// PageSize is the unit of alignment of every region in the file.
	PageSize = 4096
	// LineSize is the size of a cache line; hot words are grouped in lines.
	LineSize = 64

	// MetaSize is the size of one metadata copy.
	MetaSize = PageSize
	// MetaAOffset and MetaBOffset are the offsets of the two metadata copies.
	MetaAOffset = 0
	MetaBOffset = PageSize

	// HotOffset is the start of the global hot page.
	HotOffset = 2 * PageSize
	// GrowthLockOffset is the byte whose exclusive OFD lock a growth holds.
	GrowthLockOffset = MetaAOffset
	// FlushLockOffset is the byte whose exclusive OFD lock a flush holds.
	FlushLockOffset = MetaBOffset
	// OpenLockOffset is the byte on which every open handle, read-only ones
	// included, holds a shared OFD lock for its lifetime. A whole-file
	// rewrite of a file without FlagLiveReplace (Repair's rename, Compact,
	// Create with Overwrite) takes it exclusive and refuses while any handle
	// has the file open; a file with the flag tells its handles through
	// ReplacedOffset instead.
	OpenLockOffset = HotOffset
	// StateOffset holds the state word: phase in bits 0-1, epoch in bits 2-63.
	StateOffset = HotOffset + 0
	// DiskSeqOffset holds disk_seqnum; meaningful only while the phase is clean.
	DiskSeqOffset = HotOffset + 8
	// PublishedOffset holds the number of published filters (atomic).
	PublishedOffset = HotOffset + 16
	// FlushCountOffset counts completed durable flushes (informational).
	FlushCountOffset = HotOffset + 24
	// RetiredOffset holds the number of filters retired from the front of
	// the chain, ever (version 1.2; see Meta.Retired). Lookups stop asking a
	// filter once this word passes it, before the directory says so.
	RetiredOffset = HotOffset + 32
	// ReplacedOffset holds the replaced word (version 1.3, FlagLiveReplace):
	// ReplaceNone, ReplaceFreezing while a whole-file rewrite holds the
	// file, ReplaceDone once the rewritten file is at the path (see
	// docs/FORMAT.md, "Replacing a live file").
	ReplacedOffset = HotOffset + 40
	// BootIDOffset holds the 16-byte boot identity recorded with the dirty mark.
	BootIDOffset = HotOffset + LineSize
	// DirtySinceOffset holds the Unix time in nanoseconds of the dirty mark.
	DirtySinceOffset = HotOffset + LineSize + 16
	// CleanBootIDOffset holds the boot identity recorded at the last clean flush.
	CleanBootIDOffset = HotOffset + LineSize + 24
	// TakingOffset holds the taking word: 0, or the changed-map page whose
	// marks a Flush is taking (directory entry + 1 << TakingEntryShift |
	// map page), left behind by a Flush killed while it took them.
	TakingOffset = CleanBootIDOffset + 8
	// TakingEntryShift is the bit of the taking word where the directory
	// entry + 1 starts.
	TakingEntryShift = 48
	// HotReservedOffset and HotTailOffset start the hot page's two reserved
	// (zero) ranges: [HotReservedOffset, BootIDOffset) and
	// [HotTailOffset, HotOffset+PageSize) (in a file with FlagUndoBlock, but
	// for the undo block: undo.go).
	HotReservedOffset = ReplacedOffset + 8
	HotTailOffset     = TakingOffset + 8

	// FilterLinesOffset is the start of the per-filter hot lines, one 64-byte
	// line per directory entry.
	FilterLinesOffset = 3 * PageSize
	// Offsets within a filter line.
	FilterItemsOffset = 0  // int64: live item count (adds minus removes)
	FilterMarkOffset  = 8  // uint64: epoch of the dirty mark (bit 63: mark pending)
	FilterMinIDOffset = 16 // uint64: smallest id routed to the filter
	FilterMaxIDOffset = 24 // uint64: largest id routed to the filter; bit 63: Sealed
	// FilterPendingOffset counts the Adds admitted to the filter whose item
	// count is not yet incremented (a hint that only makes the filter look
	// fuller: a writer killed mid-Add leaves it too high; Repair zeroes it).
	FilterPendingOffset = 32 // uint64
	// FilterIndexOffset holds the state of the filter's late-add index
	// (IndexNone or IndexAllocated; see LateIndex).
	FilterIndexOffset = 40 // uint64
	// FilterWritersOffset holds the writer slots that may have a non-zero
	// item count on the filter (bit s: slot s; see CountSize).
	FilterWritersOffset = 48 // uint64
	// FilterReservedOffset is the first reserved byte of a filter line: the
	// rest of the line is zero.
	FilterReservedOffset = 56

	// SlotsOffset is the start of the writer slots.
	SlotsOffset = 4 * PageSize
	// SlotSize is the size of one writer slot: a header line and
	// RecordsPerSlot in-flight operation records of one line each.
	SlotSize       = 1024
	RecordsPerSlot = SlotSize/LineSize - 1
	// Offsets within a slot header line.
	SlotOwnerOffset    = 0  // uint64: random owner token, 0 = free
	SlotPIDOffset      = 8  // uint64: process id of the owner (informational)
	SlotReservedOffset = 16 // uint64: reserved, 0 (the completed count lives in each record's op word)
	SlotOpenedOffset   = 24 // uint64: Unix nanoseconds when the slot was claimed
	// Offsets within an in-flight record line.
	RecOpOffset      = 0  // uint64: bits 0-1 op type (0 idle), bits 8-15 filter, bits 16-63 completed count
	RecHashOffset    = 8  // uint64: key hash for the filter's hash algorithm
	RecChangedOffset = 16 // uint64: bit j set: position j's counter was changed
	RecDoubtOffset   = 24 // uint64: bit j set: position j's CAS may or may not have happened
	RecWordOffset    = 32 // uint64: evidence: counter word (index within the filter) + 1 of the last CAS tried, 0 none
	RecNewOffset     = 40 // uint64: evidence: the value that CAS stores in the word
	// RecIndexSlotOffset and RecIndexFPOffset name the late-add index entry
	// an operation inserts (an Add) or clears (a Remove): its slot + 1 (0:
	// none) and the fingerprint it holds.
	RecIndexSlotOffset = 48 // uint64
	RecIndexFPOffset   = 56 // uint64

	// MaxFilters is the number of directory entries in a metadata copy.
	MaxFilters = 64
	// NumSlots is the number of writer slots in a file.
	NumSlots = 64
	// DataOffset is where the first filter's counters start.
	DataOffset = SlotsOffset + NumSlots*SlotSize
	// MaxK is the largest number of hash functions a filter may use.
	MaxK = 64
	// MaxFileSize bounds every offset and length (1 TiB).
	MaxFileSize = 1 << 40
)

// Ids are below 2^63: bit 63 of a filter's max id word is the Sealed flag,
// set when the next filter is appended, after which the range never widens.
const (
	MaxID  = 1<<63 - 1
	Sealed = 1 << 63
)

// Operation types in an in-flight record.
const (
	OpAdd     = 1
	OpRemove  = 2
	OpInvalid = 3 // never written: a record holding it is damaged
)

// Phases of the state word.
const (
	PhaseClean    = 0 // disk_seqnum is valid: the file equals the last durable flush
	PhaseMarking  = 1 // a writer is making the dirty mark durable
	PhaseDirty    = 2 // changed (or may change) since the last durable flush
	PhaseFlushing = 3 // a flush froze the writers and is syncing
)

// Hash algorithm identifiers.
const (
	HashXXH64Seeded = 1 // xxhash64 of the key with the file's seed
	HashMurmur3Orig = 2 // MurmurHash3 x64/128, seed 0x97c29b3a, first word (dablooms 0.9.1)
)

// HashName is the name tools show for a hash identifier: "xxh64",
// "murmur3-dablooms", or "hash(N)" for an unknown one.
func HashName(id uint32) string {
	switch id {
	case HashXXH64Seeded:
		return "xxh64"
	case HashMurmur3Orig:
		return "murmur3-dablooms"
	}
	return "hash(" + strconv.FormatUint(uint64(id), 10) + ")"
}

// Counter layout identifiers.
const (
	// LayoutBlocked512 places all k counters of a key in one 64-byte block
	// of 128 counters chosen by fastrange.
	LayoutBlocked512 = 1
	// LayoutClassic spreads the k counters over the whole filter by double hashing.
	LayoutClassic = 2
	// LayoutPartitioned is dablooms 0.9.1's: k partitions of cpf counters,
	// index (uint32)(h1+j*h2) % cpf + j*cpf.
	LayoutPartitioned = 3
	// LayoutBlocked1024 places all k counters of a key in one 128-byte block
	// (two adjacent cache lines) of 256 counters chosen by fastrange.
	LayoutBlocked1024 = 4
)

// Metadata copy field offsets (relative to the start of a copy).
const (
	offMagic      = 0   // [8]byte Magic
	offMajor      = 8   // uint16
	offMinor      = 10  // uint16
	offMetaSize   = 12  // uint32, MetaSize
	offFlags      = 16  // uint64, required feature flags
	offGeneration = 24  // uint64
	offCapacity   = 32  // uint64
	offErrorRate  = 40  // float64
	offGrowth     = 48  // float64
	offTighten    = 56  // float64
	offSeed       = 64  // uint64
	offHashID     = 72  // uint32
	offLayoutID   = 76  // uint32
	offMaxFilters = 80  // uint32
	offNumSlots   = 84  // uint32
	offSlotSize   = 88  // uint32
	offRecords    = 92  // uint32
	offDataOffset = 96  // uint64
	offNumFilters = 104 // uint32
	offCreated    = 112 // uint64, Unix nanoseconds
	offRetired    = 120 // uint64, filters retired ever (version 1.2, FlagRing)
	offDirectory  = 256
	entrySize     = 56
	offOrder      = offDirectory + MaxFilters*entrySize // [MaxFilters]uint8: the chain's entries, oldest first (FlagRing)
	offChecksum   = MetaSize - 4                        // uint32 CRC-32C of bytes [0, offChecksum)

	// Directory entry field offsets.
	entFirstID    = 0  // uint64
	entCapacity   = 8  // uint64
	entCounters   = 16 // uint64
	entOffset     = 24 // uint64
	entLength     = 32 // uint64
	entErrorRate  = 40 // float64
	entK          = 48 // uint16
	entHashID     = 50 // uint8
	entLayoutID   = 51 // uint8
	entExtraPages = 52 // uint32: pages after the counters (version 1.1): item counts, then late-add index
)

// Magic identifies a dablooms file.
var Magic = [8]byte{'D', 'A', 'B', 'L', 'O', 'O', 'M', 'S'}

// Version of the format written by this package. A file with another major
// version is refused; a newer minor version is read.
const (
	VersionMajor = 1
	VersionMinor = 6
)

// Values of the replaced word (ReplacedOffset).
const (
	// ReplaceNone: the file is live.
	ReplaceNone = 0
	// ReplaceFreezing: a whole-file rewrite holds the growth lock and is
	// making the file's successor; writers wait, lookups go on.
	ReplaceFreezing = 1
	// ReplaceDone: the successor is at the file's path; every handle moves
	// to it.
	ReplaceDone = 2
)

// FlagExtras is set in a file some of whose filters have extra pages
// (version 1.1: per-writer item counts and a late-add index): a library that
// does not know them would miscount items and route Removes without the
// index, so it must refuse the file.
const FlagExtras uint64 = 1

// FlagRing is set in a file that has retired filters (version 1.2): its
// directory is a ring whose chain order is the order list, whose entries
// need not be contiguous or start at entry 0, and whose filters need not be
// contiguous in the file. A library that reads the directory as a prefix of
// contiguous filters must not open it.
const FlagRing uint64 = 2

// FlagLiveReplace is set in a file whose every handle follows a whole-file
// rewrite through the replaced word (version 1.3): a rewrite may then
// replace the file while handles have it open. A library that does not
// watch the word would go on answering from the replaced copy, so it must
// not open the file.
const FlagLiveReplace uint64 = 4

// KnownFlags is the set of feature flags this version understands; a file
// with any other flag set is refused.
const KnownFlags uint64 = FlagExtras | FlagRing | FlagLiveReplace | FlagPageSums | FlagUndoBlock | FlagRecordCounts

// FilterLineOffset returns the offset of filter i's hot line.
func FilterLineOffset(i int) int64 { return FilterLinesOffset + int64(i)*LineSize }

// SlotOffset returns the offset of writer slot s.
func SlotOffset(s int) int64 { return SlotsOffset + int64(s)*SlotSize }

// RecordOffset returns the offset of record r of writer slot s.
func RecordOffset(s, r int) int64 { return SlotOffset(s) + int64(r+1)*LineSize }
