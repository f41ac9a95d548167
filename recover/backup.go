package recover

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/mmapfile"
	"github.com/dablooms/dablooms/scaling"
	"github.com/dablooms/dablooms/seqnum"
)

// BackupOptions configure Backup. A nil *BackupOptions means the zero value.
type BackupOptions struct {
	// Wait is how long Backup keeps retrying while other processes change
	// the file; 0 makes one attempt.
	Wait time.Duration
	// Overwrite replaces dst if it exists; otherwise an existing dst is
	// refused with an error wrapping scaling.ErrExists.
	Overwrite bool
	// LockTimeout is the longest wait for a lock of src held by another
	// process (scaling.OpenOptions.LockTimeout).
	LockTimeout time.Duration
	// Hold, if not 0, is the longest Backup may hold the file's writers
	// for one copy when no quiet copy was had within Wait (writers that
	// never pause): it freezes the file as a whole-file rewrite does
	// (scaling.Freeze: Adds and Removes wait, lookups go on), copies it,
	// and lets the writers go on (scaling.Frozen.Abort). A copy that
	// outlasts Hold is given up (the writers go on at once) and Backup
	// fails with ErrNoQuietMoment. 0 never holds writers. Files older than
	// format 1.3 cannot be held (their handles do not watch for a freeze).
	Hold time.Duration

	knobs *testknobs.Knobs // the module's tests (internal/testknobs)
}

// BackupReport describes the copy Backup wrote.
type BackupReport struct {
	Bytes    int64  // size of the copy
	Epoch    uint64 // epoch of the flush whose file the copy equals (for a held copy: of the copy's own flush)
	Attempts int    // copies made: 1, plus one per copy a writer spoiled (a held copy counts one)
	// Held is how long the writers were held for the copy (0: they were
	// not): measured from before the freeze to its end, so at most that.
	Held time.Duration
	// MemSeqnum and DiskSeqnum are the copy's, as it opens read-only.
	MemSeqnum, DiskSeqnum uint64
}

// ErrNoQuietMoment: other processes changed the file during every copy
// Backup made, until BackupOptions.Wait ran out.
var ErrNoQuietMoment = errors.New("no quiet moment")

// syncDir makes the rename of the copy durable: mmapfile.SyncDir, or the
// knobs' SyncDir (tests).
func syncDir(k *testknobs.Knobs, dir string) error {
	if k != nil && k.SyncDir != nil {
		return k.SyncDir(dir)
	}
	return mmapfile.SyncDir(dir)
}

// Backup writes to dst a copy of src that is exactly the file as of a
// completed flush, while other processes keep src open: it takes no lock
// that stops readers or writers.
//
// It opens src for writing (so an interrupted or dirty file is refused with
// scaling's error) and then, until a copy succeeds:
//  1. opens the file now at src again if a whole-file rewrite (Compact,
//     Repair in place) has renamed another file there, and flushes it;
//  2. reads the state word, the replaced word, the published filter count,
//     both metadata copies and the file size: the phase must be clean, no
//     rewrite may hold the file (the replaced word is clear), and both
//     copies must list the published number of filters (a growth rewrites
//     them while the phase is clean);
//  3. copies every byte of src to a temporary file beside dst;
//  4. reads those words again. Every change to a filter's counters first
//     moves the phase away from clean, which returns to clean only through
//     a flush that advances the epoch, a new filter changes the count and
//     the metadata, and a rewrite sets the replaced word before it renames
//     its file over src: if nothing changed, the copy equals the flushed
//     file. The copy must also hold no operation in flight.
//
// A spoiled copy is retried, for at most o.Wait, after which Backup fails
// with ErrNoQuietMoment and leaves no dst. A good copy gets every writer slot
// marked closed (their owners are processes using src) and is synced; it
// is then opened read-only and verified as Verify does, and must be clean,
// before it is renamed to dst (without Overwrite, a dst that appeared
// meanwhile is not replaced) and the directory synced. So dst is either
// untouched (every error but the last) or a copy that opens and verifies
// clean; an error of that last sync is returned (dst is then in place, but
// its name may not survive a crash).
func Backup(ctx context.Context, src, dst string, o *BackupOptions) (*BackupReport, error) {
	var opt BackupOptions
	if o != nil {
		opt = *o
	}
	if !opt.Overwrite {
		if _, err := os.Lstat(dst); err == nil {
			return nil, fmt.Errorf("%s exists: %w", dst, scaling.ErrExists)
		}
	}
	f, err := scaling.Open(src, withKnobs(&scaling.OpenOptions{LockTimeout: opt.LockTimeout}, opt.knobs))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp*")
	if err != nil {
		return nil, err
	}
	defer func() {
		if tmp != nil { // not renamed to dst
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if st, err := os.Stat(src); err == nil {
		// The copy has the source's permissions (CreateTemp made it 0600).
		if err := tmp.Chmod(st.Mode().Perm()); err != nil {
			return nil, err
		}
	}
	c := &copier{f: f, path: src, tmp: tmp, tk: opt.knobs}
	defer c.close()
	rep, err := c.quietCopy(ctx, opt.Wait)
	if errors.Is(err, ErrNoQuietMoment) && opt.Hold > 0 {
		c.close()
		rep, err = c.heldCopy(ctx, opt.Hold, opt.LockTimeout, currentBoot(opt.knobs), rep)
	}
	if err != nil {
		return nil, err
	}
	c.close()
	if err := f.Close(); err != nil {
		return nil, err
	}
	if err := seal(tmp); err != nil {
		return nil, err
	}
	if err := checkCopy(tmp.Name(), dst, opt.knobs, rep); err != nil {
		return nil, err
	}
	if err := install(tmp.Name(), dst, opt.Overwrite); err != nil {
		return nil, err
	}
	tmp = nil
	if err := syncDir(opt.knobs, filepath.Dir(dst)); err != nil {
		return nil, fmt.Errorf("recover: the copy %s is in place, but: %w", dst, err)
	}
	return rep, nil
}

// copier copies the file at path, read through in, to tmp; f is a handle
// of it (which follows a whole-file rewrite to the file that replaced it).
type copier struct {
	f    *scaling.Filter
	path string
	in   *os.File // the file at path when the attempt began
	tmp  *os.File
	tk   *testknobs.Knobs // the call's (nil: none)
}

func (c *copier) close() {
	if c.in != nil {
		c.in.Close()
		c.in = nil
	}
}

// current makes c.in the file now at c.path: a rewrite may have renamed
// another file over it since it was opened.
func (c *copier) current() error {
	if c.in != nil && sameOpenFile(c.in, c.path) {
		return nil
	}
	c.close()
	in, err := os.Open(c.path)
	if err != nil {
		return err
	}
	c.in = in
	return nil
}

// quietCopy copies until a copy equals the file as of a flush, for at most
// wait after the first attempt. With ErrNoQuietMoment it returns the report
// so far too.
func (c *copier) quietCopy(ctx context.Context, wait time.Duration) (*BackupReport, error) {
	deadline := time.Now().Add(wait)
	rep := &BackupReport{}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if rep.Attempts > 0 {
			if time.Now().After(deadline) {
				// (rep counts the attempts, for a held copy after them)
				return rep, fmt.Errorf("%w in %v: other processes kept changing %s during every copy (%d attempts)", ErrNoQuietMoment, wait, c.path, rep.Attempts)
			}
			time.Sleep(time.Duration(min(rep.Attempts, 20)) * 5 * time.Millisecond)
		}
		rep.Attempts++
		ok, err := c.copyOnce(rep)
		if err != nil {
			return nil, err
		}
		if ok {
			return rep, nil
		}
	}
}

// copyOnce flushes the file and copies it to tmp; it reports whether the
// copy equals the flushed file, and then sets rep's Bytes and Epoch.
func (c *copier) copyOnce(rep *BackupReport) (bool, error) {
	if err := c.current(); err != nil {
		return false, err
	}
	if err := step(c.tk, "backup opened"); err != nil {
		return false, err
	}
	if err := c.f.Flush(); err != nil {
		return false, fmt.Errorf("flush: %w", err)
	}
	in, tmp := c.in, c.tmp
	before, err := readFingerprint(in)
	if err != nil {
		return false, err
	}
	if _, ph := seqnum.Unpack(before.state); ph != seqnum.Clean {
		return false, nil // a writer changed it since our flush
	}
	if before.replaced != header.ReplaceNone {
		return false, nil // a rewrite holds it, or replaced it: the next attempt copies the file at the path
	}
	if !before.settled() {
		return false, nil // a growth is writing the metadata
	}
	if err := tmp.Truncate(0); err != nil {
		return false, err
	}
	// Holes stay holes: a retired filter's blocks and an unused late-add
	// index take no disk in the copy either.
	if err := mmapfile.CopySparse(tmp, in, before.size); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return false, nil // shrank? never in this format, but do not trust it
		}
		return false, fmt.Errorf("copying %s: %w", c.path, err)
	}
	n := before.size
	if err := step(c.tk, "backup copied"); err != nil {
		return false, err
	}
	after, err := readFingerprint(in)
	if err != nil || !after.equal(before) {
		return false, err
	}
	busy, err := inFlight(tmp)
	if err != nil || busy {
		return false, err // busy: caught a writer between claiming a record and marking dirty
	}
	rep.Bytes = n
	rep.Epoch, _ = seqnum.Unpack(before.state)
	return true, nil
}

// heldCopy copies the file with its writers held (scaling.Freeze), for at
// most hold; lockWait bounds the wait for the freeze's locks. The frozen
// file has no operation of a live writer in flight and does not change, so
// the copy is consistent; if the file was not flushed since its last
// change, the copy is then marked clean as a flush would (on this boot the
// page cache held every change). rep counts the attempts before.
func (c *copier) heldCopy(ctx context.Context, hold, lockWait time.Duration, boot bootID, rep *BackupReport) (*BackupReport, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep.Attempts++
	start := time.Now()
	fz, err := scaling.Freeze(c.path, lockWait)
	if errors.Is(err, scaling.ErrNotLive) {
		return nil, fmt.Errorf("%w: %s is in a format older than 1.3, whose writers cannot be held for a copy: stop them", ErrNoQuietMoment, c.path)
	}
	if err != nil {
		return nil, fmt.Errorf("holding the writers of %s: %w", c.path, err)
	}
	defer fz.Abort()
	in, err := openHeld(c.path, fz)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	fp, err := readFingerprint(in)
	if err != nil {
		return nil, err
	}
	if !fp.settled() { // the growth lock is held: a growth its process died in
		return nil, fmt.Errorf("recover: %s has a growth cut short: open it read-write or repair it first", c.path)
	}
	if err := c.tmp.Truncate(0); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		if err := step(c.tk, "backup holding"); err != nil {
			done <- err
			return
		}
		done <- mmapfile.CopySparse(c.tmp, in, fp.size)
	}()
	timer := time.NewTimer(hold)
	defer timer.Stop()
	select {
	case err = <-done:
		fz.Abort()
		rep.Held = time.Since(start)
	case <-timer.C:
		held := time.Since(start) // (before they go on: the copy cannot outrun it)
		fz.Abort()                // the writers go on now; the copy is given up
		<-done
		return nil, fmt.Errorf("%w: copying %s with its writers held took over --hold %v: the writers were held %v and then let go, and the copy, given up, stopped after %v: allow a longer hold",
			ErrNoQuietMoment, c.path, hold, held.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	}
	if err != nil {
		return nil, fmt.Errorf("copying %s: %w", c.path, err)
	}
	if err := step(c.tk, "backup held copy"); err != nil {
		return nil, err
	}
	// The freeze's word is the original's business: the copy starts live.
	live := header.Hot{Replaced: header.ReplaceNone}
	if err := header.WriteHotWords(c.tmp, &live, &live.Replaced); err != nil {
		return nil, err
	}
	if err := flushCopy(c.tmp, fp.size, boot, c.path); err != nil {
		return nil, err
	}
	if fi, err := c.tmp.Stat(); err == nil {
		rep.Bytes = fi.Size()
	}
	var h header.Hot
	if err := header.ReadHotWords(c.tmp, &h, &h.State); err != nil {
		return nil, err
	}
	rep.Epoch, _ = seqnum.Unpack(h.State)
	return rep, nil
}

// openHeld opens path, whose writers fz holds, for the copy: a descriptor
// of its own, since Abort closes the frozen file's and a copy given up at
// the hold limit may still be reading. It fails if path is no longer the
// file fz froze.
func openHeld(path string, fz *scaling.Frozen) (*os.File, error) {
	in, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	a, errA := in.Stat()
	b, errB := fz.File().Stat()
	switch {
	case errA != nil:
		in.Close()
		return nil, errA
	case errB != nil || !os.SameFile(a, b):
		in.Close()
		return nil, fmt.Errorf("%w: %s was replaced while its writers were being held", ErrNoQuietMoment, path)
	}
	return in, nil
}

// flushCopy marks a copy of a held file clean, as a flush would, if it was
// changed since its last flush (its report is then unflushed: changed on
// this boot, with no operation in flight). Anything else but clean is
// refused.
func flushCopy(tmp *os.File, size int64, boot bootID, src string) error {
	img := &fileImage{f: tmp, size: size}
	a, err := analyze(img, boot, nil)
	if err != nil {
		return fmt.Errorf("recover: reading the copy of %s: %w", src, err)
	}
	switch r := a.report(src); r.State {
	case Clean:
		return nil
	case Unflushed:
	default:
		return fmt.Errorf("recover: %s is %s (%w); repair it first", src, r.State, r.Err())
	}
	p, err := a.plan(img, nil)
	if err != nil {
		return fmt.Errorf("recover: marking the copy of %s clean: %w", src, err)
	}
	if err := p.writeTo(tmp); err != nil {
		return err
	}
	if p.size != size {
		return tmp.Truncate(p.size)
	}
	return nil
}

// seal marks every writer slot of the copy tmp closed, syncs it and closes
// it.
func seal(tmp *os.File) error {
	// The owners of the writer slots are running processes of the original
	// (this one included); in the copy nobody owns them.
	var free header.Slot // owner 0
	for s := 0; s < header.NumSlots; s++ {
		if err := header.WriteSlotWords(tmp, s, &free, &free.Owner); err != nil {
			return err
		}
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	return tmp.Close()
}

// install renames the checked copy tmp to dst. Without overwrite it links
// instead, so that a dst made since Backup began is not replaced, falling
// back to a rename where the file system has no hard links.
func install(tmp, dst string, overwrite bool) error {
	if !overwrite {
		err := os.Link(tmp, dst)
		if err == nil {
			return os.Remove(tmp)
		}
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s exists: %w", dst, scaling.ErrExists)
		}
		if _, err := os.Lstat(dst); err == nil {
			return fmt.Errorf("%s exists: %w", dst, scaling.ErrExists)
		}
	}
	return os.Rename(tmp, dst)
}

// checkCopy opens the copy at path (to be installed as dst) as a reader
// would and verifies it; it must be clean. It records its seqnums in rep.
func checkCopy(path, dst string, k *testknobs.Knobs, rep *BackupReport) error {
	c, err := scaling.Open(path, withKnobs(&scaling.OpenOptions{ReadOnly: true, AllowUnclean: true}, k))
	if err != nil {
		return fmt.Errorf("recover: the copy of %s does not open, so it was not installed: %w", dst, err)
	}
	defer c.Close()
	if cond := c.Condition(); cond != scaling.Clean {
		return fmt.Errorf("recover: the copy of %s is %s, not clean, so it was not installed", dst, cond)
	}
	v, err := VerifyWithOptions(path, withKnobs(&VerifyOptions{}, k))
	if err != nil {
		return fmt.Errorf("recover: verifying the copy of %s: %w", dst, err)
	}
	if v.State != Clean {
		return fmt.Errorf("recover: the copy of %s does not verify clean, so it was not installed: %w", dst, v.Err())
	}
	rep.MemSeqnum, rep.DiskSeqnum = c.MemSeqnum(), c.DiskSeqnum()
	return nil
}

// fingerprint is what must not change while the bytes are copied.
type fingerprint struct {
	size      int64
	state     uint64 // the state word: phase and epoch
	published uint64 // the number of filters ever published
	retired   uint64 // the hot retired word: the number of filters ever retired
	replaced  uint64 // the hot replaced word: set by a whole-file rewrite
	meta      [2][]byte
}

// metaOffsets are the offsets of the two metadata copies.
var metaOffsets = [2]int64{header.MetaAOffset, header.MetaBOffset}

func (p *fingerprint) equal(q *fingerprint) bool {
	return p.size == q.size && p.state == q.state && p.published == q.published && p.retired == q.retired && p.replaced == q.replaced &&
		bytes.Equal(p.meta[0], q.meta[0]) && bytes.Equal(p.meta[1], q.meta[1])
}

// settled reports whether no growth is half done. A growth writes metadata
// copy A, then copy B, syncing each, while the phase is still clean, and
// publishes the new filter count last: a copy made in between (the state
// word, the size and both copies can stay still for a whole copy while a
// sync runs) would hold two copies that disagree, which is not the flushed
// file. So both copies must decode and list the published number of filters.
// A retirement raises the hot retired word, then rewrites the copies the
// same way: both must also count the filters the word says are retired
// (published counts every filter ever appended, the directory lists those
// from its retired count on).
func (p *fingerprint) settled() bool {
	for c, off := range metaOffsets {
		m, err := header.Decode(p.meta[c], off, p.size)
		if err != nil || m.Retired != p.retired || m.Retired+uint64(len(m.Filters)) != p.published {
			return false
		}
	}
	return true
}

func readFingerprint(f *os.File) (*fingerprint, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	fp := &fingerprint{size: st.Size()}
	for c, off := range metaOffsets {
		fp.meta[c] = make([]byte, header.MetaSize)
		if _, err := f.ReadAt(fp.meta[c], off); err != nil {
			return nil, err
		}
	}
	var h header.Hot
	if err := header.ReadHotWords(f, &h, &h.State, &h.Published, &h.Retired, &h.Replaced); err != nil {
		return nil, err
	}
	fp.state, fp.published, fp.retired, fp.replaced = h.State, h.Published, h.Retired, h.Replaced
	return fp, nil
}

// inFlight reports whether a writer slot of the file r records an operation
// in flight.
func inFlight(r io.ReaderAt) (bool, error) {
	head := make([]byte, header.DataOffset)
	if _, err := r.ReadAt(head, 0); err != nil {
		return false, err
	}
	for s := range header.NumSlots {
		sl := header.ReadSlot(head, s)
		for _, rec := range sl.Records {
			if header.OpWord(rec.Op).InFlight() {
				return true, nil
			}
		}
	}
	return false, nil
}

// RestoreOptions configure Restore. A nil *RestoreOptions means the zero
// value.
type RestoreOptions struct {
	// Wait bounds the wait for the file being replaced (see
	// RepairOptions.Wait: a file of format 1.3 is frozen, at least
	// scaling.DefaultLockTimeout; an older one must be closed by every
	// process, and 0 refuses at once with ErrBusy).
	Wait time.Duration

	knobs *testknobs.Knobs // the module's tests (internal/testknobs)
}

// RestoreReport describes what Restore did.
type RestoreReport struct {
	Bytes int64 // size of the restored file
	// Replaced: a file was at dst and was replaced; its handles (of a file
	// of format 1.3) moved to the restored file.
	Replaced bool
}

// Restore puts the backup at dst, replacing the file there while other
// processes may have it open: the one safe way to put a backup back. A
// copy of a file under the path (cp, or a rename without the freeze)
// leaves every process that has the file open answering from, and writing
// to, the file it opened, and a copy over the open file mixes the two under
// its handles' mappings.
//
// The backup must verify clean. It is copied (keeping its holes and the
// mode of the file it replaces, else its own) to a temporary file beside
// dst, synced, opened and verified clean. If a file is at dst, it is held
// as Repair in place holds it (a file of format 1.3 is frozen: Adds and
// Removes wait, lookups answer from it, and every handle moves to the
// restored file once it is in place; an older file must be closed by every
// process); the copy is renamed over dst and the directory synced. The
// file replaced is not kept: take a Backup of it first if you may want it.
// Everything written to dst since the backup was taken is lost: that is
// what restoring means. On an error before the rename, dst is untouched.
func Restore(ctx context.Context, backup, dst string, o *RestoreOptions) (*RestoreReport, error) {
	var opt RestoreOptions
	if o != nil {
		opt = *o
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := VerifyWithOptions(backup, withKnobs(&VerifyOptions{}, opt.knobs))
	if err != nil {
		return nil, err
	}
	if v.State != Clean {
		return nil, fmt.Errorf("recover: the backup %s is %s, not clean, so it was not restored: %w", backup, v.State, v.Err())
	}
	if real, err := filepath.EvalSymlinks(dst); err == nil {
		dst = real
	}
	in, size, err := openRegular(backup, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".restore-*")
	if err != nil {
		return nil, err
	}
	defer func() {
		if tmp != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	mode, err := in.Stat()
	if st, e := os.Stat(dst); e == nil {
		mode = st
	}
	if err == nil {
		err = tmp.Chmod(mode.Mode().Perm())
	}
	if err == nil {
		err = mmapfile.CopySparse(tmp, in, size)
	}
	if err == nil {
		err = seal(tmp)
	}
	if err != nil {
		return nil, fmt.Errorf("recover: copying %s: %w", backup, err)
	}
	if err := checkCopy(tmp.Name(), dst, opt.knobs, &BackupReport{}); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep := &RestoreReport{Bytes: size}
	if _, err := os.Lstat(dst); err != nil {
		if err := install(tmp.Name(), dst, false); err != nil {
			return nil, err
		}
		tmp = nil
		return rep, syncDir(opt.knobs, filepath.Dir(dst))
	}
	hold, err := holdForRewrite(dst, opt.Wait)
	if err != nil {
		return nil, err
	}
	defer hold.release()
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	tmp = nil
	rep.Replaced = true
	err = syncDir(opt.knobs, filepath.Dir(dst))
	hold.done() // the handles of the replaced file move to the restored one
	if err != nil {
		return nil, fmt.Errorf("recover: the restored file %s is in place, but: %w", dst, err)
	}
	return rep, nil
}
