package recover

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/mmapfile"
)

// Verify deep-checks the file at path and reports its state and every
// finding. It only reads: it never changes a byte of the file (it opens it
// read-only and takes no lock) and never panics. The error is for operational
// failures only (the file cannot be opened or read, or is not a regular
// file); a bad file gives a Report with State Damaged or Corrupt. A file
// that another process is growing is read again until a snapshot no growth
// overlapped confirms any damage; if growths overlap every read for 5 s,
// the error wraps ErrBusy (a growth in progress is never reported as
// damage). While other processes write the file, the operations that dead
// writers cut short are judged by counts those writers are changing: Verify
// then reports them Interrupted and says it cannot tell whether Repair ends
// them exactly (Repair holds the writers while it decides); it never lists
// a filter for Rebuild on such counts. Saturated counters are checked for
// runs that hashing does not make (docs/FORMAT.md, "Saturated counters:
// what Verify believes"): such a run is damage, and the filter is listed
// for Rebuild. In a file with page checksums (version 1.4) every page whose
// checksum it can trust is read and compared (recover/pagesums.go): a page
// that differs is damage at its filter and page, and the filter is listed
// for Rebuild (VerifyOptions.Quick skips this).
func Verify(path string) (*Report, error) { return VerifyContext(context.Background(), path, nil) }

// VerifyWithOptions is Verify with options (a boot identity for tests).
func VerifyWithOptions(path string, o *VerifyOptions) (*Report, error) {
	return VerifyContext(context.Background(), path, o)
}

// VerifyContext is Verify with options, stopped when ctx is done: it then
// returns ctx's error (see Verify for the rest).
func VerifyContext(ctx context.Context, path string, o *VerifyOptions) (*Report, error) {
	var opt VerifyOptions
	if o != nil {
		opt = *o
	}
	f, _, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	a, err := settledAnalysis(ctx, f, currentBoot(opt.knobs), opt.Quick)
	if err != nil {
		return nil, fmt.Errorf("recover: verify %s: %w", path, err)
	}
	return a.report(path), nil
}

// verifySettle bounds how long Verify retries a file that another process
// is growing.
const verifySettle = 5 * time.Second

// settledAnalysis analyzes a file that other processes may be using. A
// snapshot taken during a growth (docs/FORMAT.md, Protocol summary) can show
// metadata copies that disagree, a torn copy, a directory past the end of
// the file or a published count ahead of it; and a writer that closes while
// the file is read leaves counters newer than the item counts read before.
// None of that is damage. So findings of damage are only believed when no
// growth overlapped the snapshot (the growth lock was free before and after,
// and the file's size and metadata copies did not change while it was read)
// and a second snapshot finds damage too; otherwise Verify reads the file
// again, until verifySettle runs out, and then reports an error wrapping
// ErrBusy rather than damage. A slot counts as live if its lock was held
// before or while the file was read. Every snapshot is decoded from a
// private copy of the bytes (pread), never from memory another process
// writes.
func settledAnalysis(ctx context.Context, f *os.File, boot bootID, quick bool) (*analysis, error) {
	deadline := time.Now().Add(verifySettle)
	delay := time.Millisecond
	seen := false // the previous snapshot was settled and found damage
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		growing := heldByOther(f, header.GrowthLockOffset)
		liveBefore := map[int64]bool{}
		for s := range header.NumSlots {
			if off := header.SlotOffset(s); heldByOther(f, off) {
				liveBefore[off] = true
			}
		}
		live := func(off int64) bool { return liveBefore[off] || heldByOther(f, off) }
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		a, err := analyzeWith(withContext(ctx, &fileImage{f: f, size: st.Size()}), boot, live, quick)
		settled := err == nil && !growing && !heldByOther(f, header.GrowthLockOffset) && unchanged(f, a, st.Size())
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil && !growing:
			return nil, err
		case err == nil && !a.damaged():
			return a, nil
		case settled && seen:
			return a, nil // the damage is real: twice, with no growth overlapping
		}
		seen = settled
		if !time.Now().Before(deadline) {
			return nil, fmt.Errorf("%w: a growth of the file was in progress for %v (another process held the growth lock — growing the file, rewriting it, or holding it as an exclusive writer — or rewrote the metadata, at every try); verify again", ErrBusy, verifySettle)
		}
		if !settled {
			time.Sleep(delay)
			delay = min(2*delay, 20*time.Millisecond)
		}
	}
}

// damaged reports whether a finding says the file is damaged or corrupt.
func (a *analysis) damaged() bool {
	for _, f := range a.findings {
		if f.State >= Damaged {
			return true
		}
	}
	return false
}

// unchanged reports whether the file still has size bytes and the metadata
// copies and published count the analysis read.
func unchanged(f *os.File, a *analysis, size int64) bool {
	img := &fileImage{f: f, size: size}
	if st, err := f.Stat(); err != nil || st.Size() != size {
		return false
	}
	meta := make([]byte, min(size, 2*header.MetaSize))
	if err := readFull(img, meta, 0); err != nil || !bytes.Equal(meta, a.head[:len(meta)]) {
		return false
	}
	var h header.Hot
	if size < header.HotWordOffset(&h, &h.Retired)+8 {
		return true
	}
	seen := header.ReadHot(a.head) // what the analysis read
	return header.ReadHotWords(full{img}, &h, &h.Published, &h.Retired) == nil && h.Published == seen.Published && h.Retired == seen.Retired
}

// openRegular opens path as mmapfile.OpenRegular does (without blocking,
// refusing anything but a regular file) and returns the file's size.
func openRegular(path string, flag int) (*os.File, int64, error) {
	f, err := mmapfile.OpenRegular(path, flag, 0)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}
