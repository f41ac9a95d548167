package recover

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/mmapfile"
	"github.com/dablooms/dablooms/scaling"
)

// exclusive holds the growth lock and every writer slot's lock byte of a
// file, so that no other process writes it: a writer holds its slot's
// open-file-description lock for its lifetime, and a new one cannot claim a
// slot. The locks are exclusive on a descriptor open for writing, shared on
// a read-only one (a shared lock conflicts with every writer's all the same).
// For a whole-file rewrite (Repair's rename over the path) it also holds the
// open lock exclusively: every handle, read-only ones included, holds it
// shared for its lifetime, so none is left on the replaced file.
type exclusive struct {
	f    *os.File
	held []int64
}

// lockOffsets are the bytes exclusive locks: the growth lock, the slots,
// then the open lock if replace (last, so that ErrBusy names a writer's
// slot when a writer has the file open).
func lockOffsets(replace bool) []int64 {
	offs := []int64{header.GrowthLockOffset}
	for s := range header.NumSlots {
		offs = append(offs, header.SlotOffset(s))
	}
	if replace {
		offs = append(offs, header.OpenLockOffset)
	}
	return offs
}

// lockName says what holds the lock byte off, for ErrBusy.
func lockName(off int64) string {
	switch off {
	case header.OpenLockOffset:
		return "the open lock (it has the file open: every handle, read-only ones included, holds it)"
	case header.GrowthLockOffset:
		return "the growth lock"
	}
	return fmt.Sprintf("writer slot %d", (off-header.SlotsOffset)/header.SlotSize)
}

// takeExclusive locks f as exclusive describes; replace (the file is to be
// replaced by a rename) adds the open lock, which needs writable. It waits
// at most wait for all the locks together.
func takeExclusive(f *os.File, writable, replace bool, wait time.Duration) (*exclusive, error) {
	ex := &exclusive{f: f}
	deadline := time.Now().Add(wait)
	for _, off := range lockOffsets(replace && writable) {
		err := mmapfile.LockFile(f, off, writable, max(time.Until(deadline), 0))
		if errors.Is(err, mmapfile.ErrLockTimeout) {
			ex.release()
			return nil, fmt.Errorf("%w: %s: another process holds %s (waited %v); close it first, or wait longer", ErrBusy, f.Name(), lockName(off), wait)
		}
		if err != nil {
			ex.release()
			return nil, fmt.Errorf("recover: %w", err)
		}
		ex.held = append(ex.held, off)
	}
	return ex, nil
}

func (ex *exclusive) release() {
	for _, off := range ex.held {
		mmapfile.UnlockFile(ex.f, off)
	}
	ex.held = nil
}

// heldByOther reports whether another open file description holds a lock on
// byte off of f that conflicts with an exclusive one. It changes nothing.
func heldByOther(f *os.File, off int64) bool {
	held, err := mmapfile.HeldFile(f, off)
	return err == nil && held
}

// rewriteHold is a file held for a whole-file rewrite (Compact, Repair in
// place): frozen (scaling.Freeze) if its handles follow a replacement
// (header.FlagLiveReplace), else taken exclusively with the open lock, so
// that no handle has it open (see exclusive).
type rewriteHold struct {
	f    *os.File
	size int64
	fz   *scaling.Frozen // frozen, or
	ex   *exclusive      // exclusive
	// word is the replaced word of a frozen file as it was before the
	// freeze stored ReplaceFreezing over it: the analysis of the held file
	// reads it (image), so that the hold's own freeze is not a finding.
	word uint64
}

// image is the held file's bytes as they were before the hold: with the
// replaced word a freeze overwrote.
func (h *rewriteHold) image() image {
	img := &fileImage{f: h.f, size: h.size}
	var hot header.Hot
	off := header.HotWordOffset(&hot, &hot.Replaced)
	if h.fz == nil || h.size < off+8 {
		return img
	}
	return &wordImage{image: img, off: off, word: h.word}
}

// wordImage is an image with the word at off read as word.
type wordImage struct {
	image
	off  int64
	word uint64
}

func (w *wordImage) ReadAt(p []byte, off int64) (int, error) {
	n, err := w.image.ReadAt(p, off)
	var b [8]byte
	le.PutUint64(b[:], w.word)
	for i := range b {
		if j := w.off + int64(i) - off; j >= 0 && j < int64(n) {
			p[j] = b[i]
		}
	}
	return n, err
}

// wordBefore opens the file at path and reads what its replaced word says
// before a freeze overwrites it, as the analysis is to see it:
//
//   - ReplaceNone: nobody holds the file.
//   - ReplaceFreezing with the growth lock free: a rewrite or an exclusive
//     writer died holding the file (a finding, though no damage). With the
//     growth lock held, a live one holds it: the freeze waits until it
//     ends, and finds the word it leaves, ReplaceNone (or a replaced file,
//     and freezes the one at the path), so it reads as ReplaceNone.
//   - anything else (ReplaceDone while the file is still at its path, which
//     no rewrite leaves, or a value no rewrite stores): damage, which Open
//     refuses and Repair clears.
//
// It returns the file it read (nil if none), so that the caller can check
// that the file frozen is the one read.
func wordBefore(path string) (*os.File, uint64) {
	f, size, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return nil, header.ReplaceNone
	}
	var hot header.Hot
	replaced := func() (uint64, error) {
		err := header.ReadHotWords(f, &hot, &hot.Replaced)
		return hot.Replaced, err
	}
	if size < header.HotWordOffset(&hot, &hot.Replaced)+8 {
		return f, header.ReplaceNone
	}
	w, err := replaced()
	switch {
	case err != nil || w == header.ReplaceNone:
		return f, header.ReplaceNone
	case w == header.ReplaceFreezing:
		if heldByOther(f, header.GrowthLockOffset) {
			return f, header.ReplaceNone
		}
		// Read again with the lock seen free: a live holder that ended
		// between the two reads left another word.
		if w, err = replaced(); err != nil || w != header.ReplaceFreezing {
			return f, header.ReplaceNone
		}
		return f, w
	case w == header.ReplaceDone && !sameOpenFile(f, path):
		// Replaced while it was read: the freeze takes the new file.
		return f, header.ReplaceNone
	}
	return f, w
}

// holdForRewrite opens the file at path read-write and holds it for a
// rewrite, waiting at most wait for other processes (a frozen file: at
// least scaling.DefaultLockTimeout, for the writers' operations in flight).
func holdForRewrite(path string, wait time.Duration) (*rewriteHold, error) {
	seen, word := wordBefore(path)
	if seen != nil {
		defer seen.Close()
	}
	fz, err := scaling.Freeze(path, wait)
	switch {
	case err == nil:
		st, err := fz.File().Stat()
		if err != nil {
			fz.Abort()
			return nil, fmt.Errorf("recover: %w", err)
		}
		h := &rewriteHold{f: fz.File(), size: st.Size(), fz: fz}
		if seen != nil {
			// The word read is that of the file frozen, unless a
			// rewrite replaced it meanwhile: the new file's word was
			// clear (its rewrite renamed it there before it stored
			// ReplaceDone on the old one).
			if sf, err := seen.Stat(); err == nil && os.SameFile(sf, st) {
				h.word = word
			}
		}
		return h, nil
	case !errors.Is(err, scaling.ErrNotLive):
		return nil, fmt.Errorf("recover: %w", err)
	}
	f, size, ex, err := lockExclusive(path, wait)
	if err != nil {
		return nil, err
	}
	return &rewriteHold{f: f, size: size, ex: ex}, nil
}

// done tells the handles of a frozen file that the new file is at the path
// (the caller renamed it there): they move to it.
func (h *rewriteHold) done() {
	if h.fz != nil {
		h.fz.Done()
	}
}

// release ends the hold; a frozen file not replaced (no done) goes on as
// it was.
func (h *rewriteHold) release() {
	if h.fz != nil {
		h.fz.Abort() // closes h.f; nothing after Done
		return
	}
	h.ex.release()
	h.f.Close()
}

// lockExclusive opens the file at path read-write and takes it
// exclusively, with the open lock (see exclusive). A handle that held the
// open lock until a whole-file rewrite renamed another file over path
// leaves the lock on a file that is no longer at path: it opens again.
func lockExclusive(path string, wait time.Duration) (*os.File, int64, *exclusive, error) {
	deadline := time.Now().Add(wait)
	for tries := 0; ; tries++ {
		f, size, err := openRegular(path, os.O_RDWR)
		if err != nil {
			return nil, 0, nil, err
		}
		ex, err := takeExclusive(f, true, true, max(time.Until(deadline), 0))
		if err != nil {
			f.Close()
			return nil, 0, nil, err
		}
		if sameOpenFile(f, path) {
			return f, size, ex, nil
		}
		ex.release()
		f.Close()
		if tries >= 100 {
			return nil, 0, nil, fmt.Errorf("%w: %s was replaced %d times while it was being taken", ErrBusy, path, tries+1)
		}
	}
}
