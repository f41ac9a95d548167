package recover

import (
	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
)

// The undo block (version 1.5, header.FlagUndoBlock; docs/FORMAT.md, "Undo
// block"). An exclusive writer killed while it changed a key's block left
// the block half changed and the undo block armed, holding the block's
// words from before. Nobody wrote the block since (the writer's freeze
// held the others; a scaling handle that thaws the file first stores the
// words back itself), so storing them back is exact: the analysis reads
// the block as the saved words say (withUndo), the record of the
// operation says that nothing changed, and the patch stores the words
// (plan). The hot page's reset zeroes the undo block.

// undoFix is an armed undo block of a dead writer: the block's file
// offset and its saved words.
type undoFix struct {
	off   int64
	words []uint64
	entry int
	owner int // the writer slot whose record 0 is the operation's
}

// readUndo reads the undo block of a file with FlagUndoBlock: an armed
// block of a dead owner becomes a.undo. live is analyze's.
func (a *analysis) readUndo(live func(off int64) bool) {
	if a.meta.Flags&header.FlagUndoBlock == 0 || !a.hotOK {
		return
	}
	u := header.ReadUndo(a.head)
	off := int64(header.UndoBlockOffset)
	owner := int(u.Owner) - 1
	if owner >= 0 && owner < header.NumSlots && live != nil && live(header.SlotOffset(owner)) {
		return // a live exclusive writer's (in the middle of a change, or not)
	}
	if u.Block == 0 {
		if u != (header.Undo{}) {
			a.note(Clean, -1, owner, header.UndoOffset, "undo block", nil,
				"the undo block holds what an exclusive writer that did not close left (disarmed: nothing to undo); Repair zeroes it")
		}
		return
	}
	entry, first := int(u.Block>>header.UndoEntryShift), u.Block&(1<<header.UndoEntryShift-1)-1
	if owner < 0 || owner >= header.NumSlots {
		a.note(Damaged, -1, -1, header.UndoOffset, "undo block", header.ErrCorrupt,
			"the undo block is armed, but its owner %d names no writer slot; Repair clears it", u.Owner)
		return
	}
	i := a.chainIndex(entry)
	if i < 0 {
		a.note(Damaged, -1, owner, off, "undo block", header.ErrCorrupt,
			"the undo block is armed for directory entry %d, which is not in the chain; Repair clears it", entry)
		return
	}
	d := a.filters[i].desc
	n := uint64(counting4.Layout(d.LayoutID).BlockWords())
	if n == 0 || first%n != 0 || (first+n)*8 > uint64(d.CounterBytes()) || d.Offset+d.Length > a.size {
		a.note(Damaged, entry, owner, off, "undo block", header.ErrCorrupt,
			"the undo block is armed for counter word %d of filter %d, which is not the start of a block of its counters; Repair clears it", first, entry)
		return
	}
	a.undo = &undoFix{off: d.Offset + int64(first)*8, words: u.Saved[:n], entry: entry, owner: owner}
	a.note(Interrupted, entry, owner, off, "undo block", scaling.ErrUnclean,
		"a dead exclusive writer's change of the block at counter word %d of filter %d was cut short; Repair stores the block's saved words back", first, entry)
}

// undoRecord is record r of slot s as read once a.undo is undone: the
// operation's record 0 says that nothing changed (its writer may have
// stored the changed mask just before it died: the mask comes before the
// block is disarmed).
func (a *analysis) undoRecord(s, r int, rec header.Record) header.Record {
	if a.undo != nil && s == a.undo.owner && r == 0 {
		rec.Changed = 0
	}
	return rec
}

// withUndo returns img as it reads once a.undo is undone.
func (a *analysis) withUndo(img image) image {
	if a.undo == nil {
		return img
	}
	if u, ok := img.(*undoImage); ok && u.fix == a.undo {
		return img
	}
	return &undoImage{image: img, fix: a.undo}
}

// undoImage is an image with an armed undo block undone.
type undoImage struct {
	image
	fix *undoFix
}

func (u *undoImage) ReadAt(p []byte, off int64) (int, error) {
	n, err := u.image.ReadAt(p, off)
	for i, w := range u.fix.words {
		wo := u.fix.off + int64(i)*8
		for b := range int64(8) {
			if at := wo + b - off; at >= 0 && at < int64(n) {
				p[at] = byte(w >> (8 * b))
			}
		}
	}
	return n, err
}

// undoBlock stores a.undo's saved words back over its block.
func (p *patch) undoBlock(a *analysis) {
	if a.undo == nil {
		return
	}
	for i, w := range a.undo.words {
		p.words[a.undo.off+int64(i)*8] = w
	}
	p.act("stored back the saved words of a block of filter %d that a dead exclusive writer was changing (the undo block)", a.undo.entry)
}
