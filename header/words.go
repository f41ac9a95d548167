package header

import (
	"encoding/binary"
	"io"
)

// Single words of a file, read and written by field through the views: for
// tools that work on a file they do not map and touch a few of its words,
// each on its own (a word that others may change beside it, or one of a
// file that may be shorter than its hot region). A field is named by its
// address in a view value, as FieldOffset names it: &h.Replaced, or a word
// of an array field (&h.BootID[1]); the functions read it from and write it
// at its place in the file, little-endian, one word at a time in the order
// given, and stop at the first error. Each panics if a field is not a word
// of the view it is given with.

// ReadHotWords reads the fields of h from r, a file's bytes, each from its
// place in the hot page; h's other words are left as they are.
func ReadHotWords(r io.ReaderAt, h *Hot, fields ...*uint64) error {
	return readWords(r, HotOffset, h, fields)
}

// WriteHotWords writes the fields of h to w, a file, each at its place in
// the hot page.
func WriteHotWords(w io.WriterAt, h *Hot, fields ...*uint64) error {
	return writeWords(w, HotOffset, h, fields)
}

// ReadLineWords reads the fields of l from r, a file's bytes, each from its
// place in filter line i; l's other words are left as they are.
func ReadLineWords(r io.ReaderAt, i int, l *Line, fields ...*uint64) error {
	return readWords(r, FilterLineOffset(i), l, fields)
}

// WriteSlotWords writes the fields of sl to w, a file, each at its place in
// writer slot s.
func WriteSlotWords(w io.WriterAt, s int, sl *Slot, fields ...*uint64) error {
	return writeWords(w, SlotOffset(s), sl, fields)
}

// HotWordOffset returns the file offset of the field w of h, where
// ReadHotWords reads it: for a tool that must know whether a file is long
// enough to hold it (it holds the word if its size is at least the offset
// + 8), or that shows the word in another image of the file.
func HotWordOffset(h *Hot, w *uint64) int64 { return wordOffset(HotOffset, h, w) }

// wordOffset is the file offset of the field w of v, a view whose first
// word is at base.
func wordOffset[V View](base int64, v *V, w *uint64) int64 {
	off := FieldOffset(v, w)
	if off < 0 {
		panic("header: a field that is not a word of its view")
	}
	return base + off
}

func readWords[V View](r io.ReaderAt, base int64, v *V, fields []*uint64) error {
	var b [8]byte
	for _, w := range fields {
		// (A reader may return io.EOF with the whole word read.)
		if n, err := r.ReadAt(b[:], wordOffset(base, v, w)); n < len(b) {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		*w = binary.LittleEndian.Uint64(b[:])
	}
	return nil
}

func writeWords[V View](wr io.WriterAt, base int64, v *V, fields []*uint64) error {
	var b [8]byte
	for _, w := range fields {
		binary.LittleEndian.PutUint64(b[:], *w)
		if _, err := wr.WriteAt(b[:], wordOffset(base, v, w)); err != nil {
			return err
		}
	}
	return nil
}
