// Floor 5 (maintenance) of package scaling: Freeze: rewriting the whole file
// under live handles.

package scaling

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/mmapfile"
)

// Replacing a live file (version 1.3, header.FlagLiveReplace): the freeze
// of I14, docs/PROTOCOLS.md; the package documentation and docs/FORMAT.md,
// "Replacing a live file", give the user's view.
//
// A whole-file rewrite (recover.Compact, recover.Repair in place, Create with
// Overwrite) makes a new file and renames it over the path. Handles that
// have the old file open would go on answering from it, and on changing it,
// for ever. The hot replaced word tells them:
//
//   - The rewrite freezes the old file (Freeze, freeze; stop.go); writers
//     back out at their gate and wait (waitReplace).
//   - The rewrite makes the new file (from the frozen old one, or from a
//     Source), renames it over the path, and stores ReplaceDone (Done).
//   - Every handle checks the word with the published and retired words
//     on each operation (stale, I12). On ReplaceDone it opens the path with
//     its own options and forwards every call to the new Filter from then
//     on (move, live; successor.go); the old file's mapping, slot and descriptor are
//     released once the operations in flight on them have returned.
//
// A rewrite that gives up stores ReplaceNone again (Abort). One that dies
// is thawed by the next handle that takes the growth lock (a writer
// waiting in waitReplace takes it for this; thaw, thawIfDead; all three in
// successor.go).

// Frozen is a file held for a whole-file rewrite (see Freeze).
type Frozen struct {
	f     *Filter // hot words only: no chain, no slot
	file  *os.File
	ended bool
}

// Freeze prepares the file at path to be replaced while handles have it
// open: it takes the growth lock, marks the file ReplaceFreezing and waits
// for the modifications in flight of live writers to finish (records of
// dead writers stay, for Repair). From then until Done or Abort no handle
// changes the file; lookups go on. After Done every handle moves to the
// file then at path.
//
// It waits at most wait (at least DefaultLockTimeout) for the lock and the
// writers; ErrBusy if they do not finish. It returns an error wrapping
// ErrNotLive, having changed nothing, for a file without
// header.FlagLiveReplace.
func Freeze(path string, wait time.Duration) (*Frozen, error) {
	wait = max(wait, DefaultLockTimeout)
	deadline := time.Now().Add(wait)
	for tries := 0; ; tries++ {
		fz, err := freezeOnce(path, max(time.Until(deadline), 0))
		if !errors.Is(err, errRetry) {
			return fz, err
		}
		if tries == 10 {
			return nil, fmt.Errorf("%w: %s was replaced %d times while it was being frozen", ErrBusy, path, tries+1)
		}
	}
}

func freezeOnce(path string, wait time.Duration) (_ *Frozen, err error) {
	mf, err := mmapfile.Open(path, nil)
	if err != nil {
		return nil, err
	}
	f := &Filter{mapping: mapping{r: mf, file: mf}, settings: settings{timeout: wait}, slotState: slotState{slot: -1}, succ: successor{path: path}}
	f.setWriter(sharedWriter{})
	defer func() {
		if err != nil {
			mf.Close()
		}
	}()
	live := false
	err = mmapfile.Guard(func() error {
		if mf.Size() < header.DataOffset {
			return nil
		}
		if err := f.mapHot(); err != nil {
			return err
		}
		m, _, err := f.readDirectory(0)
		live = err == nil && m.Flags&header.FlagLiveReplace != 0
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !live {
		return nil, fmt.Errorf("%w: %s", ErrNotLive, path)
	}
	if _, held, err := lockFreeze(mf, wait); err != nil {
		if errors.Is(err, ErrLockTimeout) {
			return nil, fmt.Errorf("%w: %s: the %s lock was held for over %v", ErrBusy, path, held, wait)
		}
		return nil, err
	}
	if same, err := mf.SamePath(); err != nil || !same {
		// Replaced since it was opened: freeze the file at path.
		if err == nil {
			err = errRetry
		}
		return nil, err
	}
	fz := &Frozen{f: f}
	// A dead exclusive writer's armed block is undone before the rewrite
	// reads the file and before Abort lets the writers go on (undoDead;
	// if it cannot be, Abort leaves the file frozen for writers).
	f.undoDead()
	if err = f.freeze(); err != nil {
		fz.Abort()
		if errors.Is(err, ErrLockTimeout) {
			err = fmt.Errorf("%w: %s: writers' operations still in flight after %v", ErrBusy, path, wait)
		}
		return nil, err
	}
	if fz.file, err = os.OpenFile(path, os.O_RDWR, 0); err != nil {
		fz.Abort()
		return nil, err
	}
	return fz, nil
}

// File returns a descriptor of the frozen file, open for reading and
// writing; Done and Abort close it.
func (fz *Frozen) File() *os.File { return fz.file }

// Done tells every handle of the frozen file to move to the file now at its
// path, and releases it. The caller has renamed the new file over the path
// (and synced the directory). Done and Abort are idempotent; the first one
// called counts.
func (fz *Frozen) Done() error { return fz.end(header.ReplaceDone) }

// Abort releases the frozen file unreplaced: writers go on with it.
func (fz *Frozen) Abort() error { return fz.end(header.ReplaceNone) }

func (fz *Frozen) end(word uint64) error {
	if fz.ended {
		return nil
	}
	fz.ended = true
	if word == header.ReplaceNone && !fz.f.undoDead() {
		word = header.ReplaceFreezing // (see undoDead)
	}
	atomic.StoreUint64(fz.f.replaced, word)
	fz.f.file.Unlock(header.FlushLockOffset)
	fz.f.file.Unlock(header.GrowthLockOffset)
	if fz.file != nil {
		fz.file.Close()
	}
	return fz.f.file.Close()
}
