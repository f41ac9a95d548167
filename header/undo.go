package header

import "unsafe"

// The undo block (version 1.5, FlagUndoBlock; docs/FORMAT.md, "Undo
// block"): where the exclusive writer saves a key's counter block before
// it changes it, so that a writer killed in the middle of the change
// leaves the block's old words for whoever comes next. A file has one, in
// the hot page's tail: a file has at most one exclusive writer at a time
// (it holds the growth lock from Open to Close).
//
//	UndoOwnerOffset  uint64  writer slot + 1 of the exclusive writer using
//	                         the block (0: none); set after its freeze,
//	                         cleared before it lets go at Close
//	UndoBlockOffset  uint64  while armed: bits 56-63 the directory entry of
//	                         the block's filter, bits 0-55 the block's
//	                         first counter word within the filter, plus 1;
//	                         0: not armed (then UndoSavedOffset means
//	                         nothing)
//	UndoSavedOffset  [16]uint64  the block's words before the change (a
//	                         Blocked512 block uses the first 8)
//
// An armed block is undone by storing the saved words back over the block
// (scaling's thaw, before any other writer may write again; recover's
// Repair), which is exact because no other writer wrote the block since
// the owner saved it.
const (
	UndoOffset      = HotOffset + 2*LineSize
	UndoOwnerOffset = UndoOffset
	UndoBlockOffset = UndoOffset + 8
	UndoSavedOffset = UndoOffset + LineSize
	// UndoSavedWords is the size of the saved block: a Blocked1024 block.
	UndoSavedWords = 16
	// UndoEntryShift places the directory entry in an armed block word.
	UndoEntryShift = 56
	// UndoEnd ends the undo block; the rest of the hot page is reserved
	// (zero).
	UndoEnd = UndoSavedOffset + UndoSavedWords*8
)

// FlagUndoBlock is set in a file whose exclusive writer may save blocks in
// the undo block (version 1.5). A library that does not know it would
// take a block a killed exclusive writer left half changed for the result
// of a finished change, so it must refuse the file.
const FlagUndoBlock uint64 = 16

// Undo is the undo block (UndoOffset).
type Undo struct {
	Owner    uint64                 `format:"undo owner"` // UndoOwnerOffset
	Block    uint64                 `format:"undo block"` // UndoBlockOffset
	Reserved [6]uint64              `format:"reserved"`
	Saved    [UndoSavedWords]uint64 `format:"saved"` // UndoSavedOffset
}

func _() {
	var same [1]struct{}
	var u Undo
	_ = same[unsafe.Sizeof(u)-(UndoEnd-UndoOffset)]
	_ = same[unsafe.Offsetof(u.Block)-(UndoBlockOffset-UndoOffset)]
	_ = same[unsafe.Offsetof(u.Saved)-(UndoSavedOffset-UndoOffset)]
}

// UndoAt lays the undo block over the hot region's words.
func UndoAt(hot []uint64) *Undo {
	return (*Undo)(unsafe.Pointer((*[(UndoEnd - UndoOffset) / 8]uint64)(hot[word(UndoOffset):])))
}

// ReadUndo reads the undo block from a file's first DataOffset bytes.
func ReadUndo(head []byte) Undo { return readView[Undo](head[UndoOffset:]) }
