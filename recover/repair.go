package recover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/mmapfile"
	"github.com/dablooms/dablooms/scaling"
)

// Repair fixes what can be fixed without the application's data: it rolls
// back (or completes) the operations dead writers left in flight, frees their
// slots, restores a bad metadata copy from the good one, recounts item counts
// from the counter sums where no counter is saturated, and marks the file
// clean (epoch+1, disk_seqnum = mem_seqnum) when everything was fixed. A
// filter it cannot make exact — dirty after a machine restart, or with an
// operation whose outcome the counters cannot tell — stays marked dirty and
// is listed in Report.NeedsRebuild: run Rebuild.
//
// In place it holds the file as Compact does (a live file is frozen and its
// handles move to the result; an older one is taken exclusively: ErrBusy
// while another process uses it, unless o.Wait lets it wait), works on a
// copy in the same directory, syncs it and renames it over the original,
// keeping the original at o.Backup (default path+".bak"; none with
// o.NoBackup); or writes the result to o.Output. It returns the Verify report of the file it wrote. A
// file with nothing to repair is left alone. The error is non-nil when
// nothing was written (the report, if any, is then the original's).
func Repair(path string, o *RepairOptions) (*Report, error) {
	return run(context.Background(), path, nil, o)
}

// RepairContext is Repair, stopped when ctx is done: it then returns ctx's
// error, having replaced nothing (a cancellation after the rename that
// installs the result is too late to stop it, and is not reported).
func RepairContext(ctx context.Context, path string, o *RepairOptions) (*Report, error) {
	return run(ctx, path, nil, o)
}

// Rebuild is Repair for files whose counters cannot be trusted (dirty after
// a machine restart, corrupt filters): each filter that needs it is zeroed
// and its keys are re-added from src, which is called once per such filter
// with the filter's id range: [FirstID, LastID] of its line, open-ended for
// the newest filter, whose line may lag behind its adds (and, if it has a
// late-add index, starting above the older filters' ranges, which its
// routing never widens it over: the rebuilt ranges do not overlap; its
// keys below them come back as late Adds). Filters untouched
// since the last flush are kept as they are. The result is marked clean.
func Rebuild(path string, src Source, o *RepairOptions) (*Report, error) {
	return RebuildContext(context.Background(), path, src, o)
}

// RebuildContext is Rebuild, stopped when ctx is done (as RepairContext is;
// the Source's adds fail with ctx's error).
func RebuildContext(ctx context.Context, path string, src Source, o *RepairOptions) (*Report, error) {
	if src == nil {
		return nil, ErrNoSource
	}
	return run(ctx, path, src, o)
}

// step runs the knobs' RecoverStep (tests) at the step name of a call; an
// error stops the call there as a crash would, leaving whatever temporary
// file exists.
func step(k *testknobs.Knobs, name string) error {
	if k != nil && k.RecoverStep != nil {
		return k.RecoverStep(name)
	}
	return nil
}

// run is Repair (src nil) and Rebuild: it takes the file exclusively,
// analyzes it, plans the patch and, unless there is nothing to repair in
// place, has replace write the result.
func run(ctx context.Context, path string, src Source, o *RepairOptions) (*Report, error) {
	return runWith(ctx, path, src, o, false)
}

// runWith is run, and with upgrade also rewrites a file without page
// checksums as format 1.4 (Upgrade).
func runWith(ctx context.Context, path string, src Source, o *RepairOptions, upgrade bool) (*Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	src = ctxSource(ctx, src)
	var opt RepairOptions
	if o != nil {
		opt = *o
	}
	if opt.NoBackup && opt.Backup != "" {
		return nil, fmt.Errorf("%w: RepairOptions.Backup %q with NoBackup: keep a backup or none", scaling.ErrInvalidOption, opt.Backup)
	}
	boot := currentBoot(opt.knobs)
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	inPlace := opt.Output == "" || sameFile(opt.Output, path)
	t, err := openForRepair(path, inPlace, &opt)
	if err != nil {
		return nil, err
	}
	defer t.release()
	img := withContext(ctx, t.img)
	a, err := analyze(img, boot, nil)
	if err != nil {
		return nil, fmt.Errorf("recover: reading %s: %w", path, err)
	}
	p, err := a.plan(img, src)
	if err != nil {
		return a.report(path), err
	}
	if upgrade {
		if err := p.upgradeFormat(a, img); err != nil {
			return a.report(path), fmt.Errorf("recover: upgrading %s: %w", path, err)
		}
	}
	if inPlace && !p.changed && (a.size == p.size || p.tidy) {
		return p.leftAsItIs(a, path, t.hold), nil
	}
	target := path
	if !inPlace {
		target = opt.Output
	}
	hold := t.hold
	rep, err := replace(ctx, &original{f: t.f, path: path, size: t.size, inPlace: inPlace, frozen: hold != nil && hold.fz != nil}, p, target, boot, &opt)
	if hold != nil && !sameOpenFile(hold.f, path) {
		// Renamed over (even if a later step failed): the handles move.
		hold.done()
	}
	return rep, err
}

// repairTarget is the file Repair reads, held as it needs: hold, for a
// rewrite in place (the file is replaced), else the exclusive hold of a
// dry run or a repair to another file. release lets it go.
type repairTarget struct {
	f       *os.File
	size    int64
	img     image
	hold    *rewriteHold
	release func()
}

// openForRepair opens and holds the file at path for Repair.
func openForRepair(path string, inPlace bool, opt *RepairOptions) (*repairTarget, error) {
	if inPlace && !opt.DryRun {
		hold, err := holdForRewrite(path, opt.Wait)
		if err != nil {
			return nil, err
		}
		return &repairTarget{f: hold.f, size: hold.size, img: hold.image(), hold: hold, release: hold.release}, nil
	}
	f, size, writable, err := openOriginal(path, inPlace)
	if err != nil {
		return nil, err
	}
	ex, err := takeExclusive(f, writable, false, opt.Wait)
	if err != nil {
		f.Close()
		return nil, err
	}
	release := func() {
		ex.release()
		f.Close()
	}
	return &repairTarget{f: f, size: size, img: &fileImage{f: f, size: size}, release: release}, nil
}

// upgradeFormat adds to the patch what upgrades the file to this
// version's format: page checksums, the undo block and a count word per
// record, or what of them it lacks.
func (p *patch) upgradeFormat(a *analysis, img image) error {
	switch {
	case a.meta.Flags&header.FlagPageSums == 0:
		return p.upgrade(a, img)
	case a.meta.Flags&(header.FlagUndoBlock|header.FlagRecordCounts) != header.FlagUndoBlock|header.FlagRecordCounts:
		return p.upgradeFlags(a, img)
	}
	return nil
}

// leftAsItIs is the report of a Repair that changed nothing in place.
func (p *patch) leftAsItIs(a *analysis, path string, hold *rewriteHold) *Report {
	rep := a.report(path)
	left := "nothing to repair: the file was left as it is, and no backup was written"
	if hold != nil && hold.fz != nil && hold.word == header.ReplaceFreezing {
		// The freeze's end clears the word, as the next writer would.
		left = "nothing to repair: the file was left as it is but for the replaced word a dead rewrite or exclusive writer left, cleared as Repair let go of the file; no backup was written"
	}
	rep.Actions = append(p.actions, left)
	return rep
}

// openOriginal opens the file to repair read-write, or read-only when the
// result goes elsewhere (Output) and the file cannot be written. writable
// says which.
func openOriginal(path string, inPlace bool) (f *os.File, size int64, writable bool, err error) {
	writable = true
	f, size, err = openRegular(path, os.O_RDWR)
	if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
		if inPlace {
			return nil, 0, false, err
		}
		writable = false
		f, size, err = openRegular(path, os.O_RDONLY)
	}
	if err != nil {
		return nil, 0, false, err
	}
	return f, size, writable, nil
}

// original is the file Repair or Rebuild reads, held open.
type original struct {
	f       *os.File
	path    string // symbolic links resolved
	size    int64
	inPlace bool // the result replaces it (no Output)
	frozen  bool // held by scaling.Freeze: its handles move to the result
}

// replace writes the patched copy of the original to a temporary file beside
// target and checks it; unless opt.DryRun, it then keeps the original as the
// backup (for a repair in place) and renames the copy over target. It
// returns the report of the copy.
func replace(ctx context.Context, orig *original, p *patch, target string, boot bootID, opt *RepairOptions) (*Report, error) {
	r, err := newReplacement(target, opt.knobs)
	if err != nil {
		return nil, err
	}
	defer r.cleanup()
	if err := r.write(orig, p); err != nil {
		return nil, err
	}
	ta, e := analyze(&fileImage{f: r.tmp, size: p.size}, boot, nil)
	if e != nil {
		return nil, r.fail(e)
	}
	rep := ta.report(target)
	rep.Actions = p.actions
	if p.keys > 0 {
		rep.Actions = append(rep.Actions, fmt.Sprintf("re-added %d key(s) in all", p.keys))
	}
	if opt.DryRun {
		return rep, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err // the last moment nothing was replaced
	}
	if orig.inPlace && opt.NoBackup {
		rep.Actions = append(rep.Actions, "kept no backup of the original")
	} else if orig.inPlace {
		backup := opt.Backup
		if backup == "" {
			backup = orig.path + ".bak"
		}
		if e := keepBackup(orig.f, orig.path, backup, orig.size, orig.frozen); e != nil {
			return nil, fmt.Errorf("recover: keeping the original as %s: %w", backup, e)
		}
		rep.Actions = append(rep.Actions, "kept the original as "+backup)
		rep.Backup = backup
		if err := r.step("backup"); err != nil {
			return nil, err
		}
	}
	if err := r.install(target); err != nil {
		return nil, err
	}
	rep.Written = true
	return rep, nil
}

// replacement is the temporary file a repaired file is written to, in the
// directory of its target.
type replacement struct {
	tmp  *os.File
	name string
	keep bool // the temporary file was renamed, or a test crashed the run
	tk   *testknobs.Knobs
}

func newReplacement(target string, k *testknobs.Knobs) (*replacement, error) {
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".repair-*")
	if err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	return &replacement{tmp: tmp, name: tmp.Name(), tk: k}, nil
}

// cleanup closes the temporary file and removes it unless it is kept.
func (r *replacement) cleanup() {
	r.tmp.Close()
	if !r.keep {
		os.Remove(r.name)
	}
}

func (r *replacement) fail(e error) error {
	return fmt.Errorf("recover: writing %s: %w", r.name, e)
}

// step is the package's step; an error keeps the temporary file, as a crash
// would.
func (r *replacement) step(name string) error {
	err := step(r.tk, name)
	if err != nil {
		r.keep = true
	}
	return err
}

// write copies the original's first p.size bytes (zero-extended for a
// truncated file: the filters cut short are rebuilt) with its permissions,
// patches them and syncs the copy.
func (r *replacement) write(orig *original, p *patch) error {
	if st, e := orig.f.Stat(); e == nil {
		r.tmp.Chmod(st.Mode().Perm())
	}
	if p.ranges != nil {
		// A ring file: the head and the chain's filters; the space that
		// retired filters left stays a hole.
		if e := r.tmp.Truncate(p.size); e != nil {
			return r.fail(e)
		}
		for _, rg := range p.ranges {
			lo, hi := rg[0], min(rg[1], p.size, orig.size)
			if lo >= hi {
				continue
			}
			w := io.NewOffsetWriter(r.tmp, lo)
			if n, e := io.Copy(w, io.NewSectionReader(orig.f, lo, hi-lo)); e != nil || n != hi-lo {
				if e == nil {
					e = io.ErrShortWrite
				}
				return r.fail(e)
			}
		}
	} else if n, e := io.Copy(r.tmp, io.NewSectionReader(orig.f, 0, p.size)); e != nil || n != min(p.size, orig.size) {
		if e == nil {
			e = io.ErrShortWrite
		}
		return r.fail(e)
	}
	if p.size > orig.size {
		if e := r.tmp.Truncate(p.size); e != nil {
			return r.fail(e)
		}
	}
	if err := r.step("copied"); err != nil {
		return err
	}
	if e := p.writeTo(r.tmp); e != nil {
		return r.fail(e)
	}
	if err := r.step("patched"); err != nil {
		return err
	}
	if e := r.tmp.Sync(); e != nil {
		return r.fail(e)
	}
	return nil
}

// install renames the temporary file over target and syncs the directory.
func (r *replacement) install(target string) error {
	if e := r.tmp.Close(); e != nil {
		return r.fail(e)
	}
	if e := os.Rename(r.name, target); e != nil {
		return fmt.Errorf("recover: %w", e)
	}
	r.keep = true
	if err := step(r.tk, "renamed"); err != nil {
		return err
	}
	if e := mmapfile.SyncDir(filepath.Dir(target)); e != nil {
		return fmt.Errorf("recover: the repaired file is in place, but: %w", e)
	}
	return nil
}

// sameOpenFile reports whether path names the open file f.
func sameOpenFile(f *os.File, path string) bool {
	sf, err1 := f.Stat()
	sp, err2 := os.Stat(path)
	return err1 == nil && err2 == nil && os.SameFile(sf, sp)
}

func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// keepBackup makes backup name the original file: a hard link where the file
// system allows, else a synced copy. An existing backup is replaced.
//
// A frozen file (a live file's Repair in place) is always copied, with its
// replaced word clear: a link would share the word that sends the file's
// handles to the repaired file, and the backup would not open.
func keepBackup(f *os.File, path, backup string, size int64, frozen bool) error {
	if sameFile(path, backup) {
		return nil
	}
	tmp := backup + ".tmp"
	os.Remove(tmp)
	if frozen || os.Link(path, tmp) != nil {
		c, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		if st, err := f.Stat(); err == nil {
			c.Chmod(st.Mode().Perm())
		}
		err = mmapfile.CopySparse(c, f, size) // (holes stay holes)
		live := header.Hot{Replaced: header.ReplaceNone}
		if err == nil && frozen && size >= header.HotWordOffset(&live, &live.Replaced)+8 {
			err = header.WriteHotWords(c, &live, &live.Replaced)
		}
		if err == nil {
			err = c.Sync()
		}
		if cerr := c.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(tmp)
			return err
		}
	}
	if err := os.Rename(tmp, backup); err != nil {
		os.Remove(tmp)
		return err
	}
	return mmapfile.SyncDir(filepath.Dir(backup))
}
