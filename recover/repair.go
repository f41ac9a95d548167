package recover

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/dablooms/dablooms/mmapfile"
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
// It takes the file exclusively (ErrBusy while another process holds a
// writer slot or the growth lock, or, for a repair in place, while any
// handle has the file open, read-only ones included: they hold the open
// lock shared; unless o.Wait lets it wait), works on a
// copy in the same directory, syncs it and renames it over the original,
// keeping the original at o.Backup (default path+".bak"); or writes the
// result to o.Output. It returns the Verify report of the file it wrote. A
// file with nothing to repair is left alone. The error is non-nil when
// nothing was written (the report, if any, is then the original's).
func Repair(path string, o *RepairOptions) (*Report, error) { return run(path, nil, o) }

// Rebuild is Repair for files whose counters cannot be trusted (dirty after
// a machine restart, corrupt filters): each filter that needs it is zeroed
// and its keys are re-added from src, which is called once per such filter
// with the filter's id range: [FirstID, LastID] of its line, open-ended for
// the newest filter, whose line may lag behind its adds. Filters untouched
// since the last flush are kept as they are. The result is marked clean.
func Rebuild(path string, src Source, o *RepairOptions) (*Report, error) {
	if src == nil {
		return nil, ErrNoSource
	}
	return run(path, src, o)
}

// hook, if set, is called at each step of run; an error stops the run there
// as a crash would, leaving whatever temporary file exists (tests).
var hook func(step string) error

func step(name string) error {
	if hook != nil {
		return hook(name)
	}
	return nil
}

func run(path string, src Source, o *RepairOptions) (*Report, error) {
	var opt RepairOptions
	if o != nil {
		opt = *o
	}
	boot := currentBoot(opt.BootID)
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	inPlace := opt.Output == "" || sameFile(opt.Output, path)
	writable := true
	f, size, err := openRegular(path, os.O_RDWR)
	if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
		if inPlace {
			return nil, err
		}
		writable = false
		f, size, err = openRegular(path, os.O_RDONLY)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ex, err := takeExclusive(f, writable, inPlace && !opt.DryRun, opt.Wait)
	if err != nil {
		return nil, err
	}
	defer ex.release()

	img := &fileImage{f: f, size: size}
	a, err := analyze(img, boot, nil)
	if err != nil {
		return nil, fmt.Errorf("recover: reading %s: %w", path, err)
	}
	p, err := a.plan(img, src)
	if err != nil {
		return a.report(path), err
	}
	target := path
	if !inPlace {
		target = opt.Output
	}
	if inPlace && !p.changed && a.size == p.size {
		rep := a.report(path)
		rep.Actions = append(p.actions, "nothing to repair: the file was left as it is, and no backup was written")
		return rep, nil
	}

	dir := filepath.Dir(target)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".repair-*")
	if err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	tmpName := tmp.Name()
	keep := false // the temporary file was renamed, or a test crashed the run
	defer func() {
		tmp.Close()
		if !keep {
			os.Remove(tmpName)
		}
	}()
	fail := func(e error) (*Report, error) {
		return nil, fmt.Errorf("recover: writing %s: %w", tmpName, e)
	}
	if st, e := f.Stat(); e == nil {
		tmp.Chmod(st.Mode().Perm())
	}
	if n, e := io.Copy(tmp, io.NewSectionReader(f, 0, p.size)); e != nil || n != min(p.size, size) {
		if e == nil {
			e = io.ErrShortWrite
		}
		return fail(e)
	}
	if p.size > size { // a truncated file: the filters cut short are rebuilt
		if e := tmp.Truncate(p.size); e != nil {
			return fail(e)
		}
	}
	if err = step("copied"); err != nil {
		keep = true
		return nil, err
	}
	if e := p.writeTo(tmp); e != nil {
		return fail(e)
	}
	if err = step("patched"); err != nil {
		keep = true
		return nil, err
	}
	if e := tmp.Sync(); e != nil {
		return fail(e)
	}
	ta, e := analyze(&fileImage{f: tmp, size: p.size}, boot, nil)
	if e != nil {
		return fail(e)
	}
	rep := ta.report(target)
	rep.Actions = p.actions
	if p.keys > 0 {
		rep.Actions = append(rep.Actions, fmt.Sprintf("re-added %d key(s) in all", p.keys))
	}
	if opt.DryRun {
		return rep, nil
	}
	if inPlace {
		backup := opt.Backup
		if backup == "" {
			backup = path + ".bak"
		}
		if e := keepBackup(f, path, backup, size); e != nil {
			return nil, fmt.Errorf("recover: keeping the original as %s: %w", backup, e)
		}
		rep.Actions = append(rep.Actions, "kept the original as "+backup)
		rep.Backup = backup
		if err = step("backup"); err != nil {
			keep = true
			return nil, err
		}
	}
	if e := tmp.Close(); e != nil {
		return fail(e)
	}
	if e := os.Rename(tmpName, target); e != nil {
		return nil, fmt.Errorf("recover: %w", e)
	}
	keep = true
	if err = step("renamed"); err != nil {
		return nil, err
	}
	if e := mmapfile.SyncDir(dir); e != nil {
		return nil, fmt.Errorf("recover: the repaired file is in place, but: %w", e)
	}
	return rep, nil
}

func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// keepBackup makes backup name the original file: a hard link where the file
// system allows, else a synced copy. An existing backup is replaced.
func keepBackup(f *os.File, path, backup string, size int64) error {
	if sameFile(path, backup) {
		return nil
	}
	tmp := backup + ".tmp"
	os.Remove(tmp)
	if err := os.Link(path, tmp); err != nil {
		c, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		if st, err := f.Stat(); err == nil {
			c.Chmod(st.Mode().Perm())
		}
		_, err = io.Copy(c, io.NewSectionReader(f, 0, size))
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
