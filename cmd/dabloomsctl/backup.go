package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type backupJSON struct {
	Schema     string `json:"schema"`
	Path       string `json:"path"`
	Dest       string `json:"dest"`
	Bytes      int64  `json:"bytes"`
	MemSeqnum  uint64 `json:"mem_seqnum"`
	DiskSeqnum uint64 `json:"disk_seqnum"`
	Epoch      uint64 `json:"epoch"`
	Attempts   int    `json:"attempts"`
	// HeldSeconds is how long writers were held for the copy (0: not held).
	HeldSeconds float64 `json:"held_seconds"`
}

// backupOptions are the flags of backup.
type backupOptions struct {
	wait  time.Duration
	hold  time.Duration
	force bool
}

func (o *backupOptions) bindFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.wait, "wait", time.Second, "how long to keep retrying a copy without holding writers while they change the file")
	fs.DurationVar(&o.hold, "hold", time.Second, "then the longest to hold the writers for one copy (0: never hold them)")
	fs.BoolVarP(&o.force, "force", "f", false, "replace DEST if it exists")
}

func newBackupCmd(a *app) *cobra.Command {
	var o backupOptions
	cmd := &cobra.Command{
		Use:   "backup FILE DEST",
		Short: "Copy a clean, consistent snapshot of a file that others may be using",
		Long: `backup writes to DEST a copy of FILE that is exactly the file as of a
completed flush, while other processes keep the file open.

What it does, and so what consistency it gives:
  1. it opens FILE for writing and flushes it (as 'flush' does), opening
     the file at FILE again if a compact or repair replaced it;
  2. it reads the state word (phase and epoch), the replaced word, the
     number of filters, the two metadata copies and the file size: the
     phase must be "clean", no rewrite may hold the file, and both copies
     must list the published number of filters (no growth is half done);
  3. it copies every byte of FILE to a temporary file beside DEST;
  4. it reads those words again. Any change to a filter's counters is
     preceded by moving the phase away from "clean", which returns to
     "clean" only through a flush that advances the epoch; a new filter
     changes the filter count and the metadata. So if nothing changed, the
     copy equals the flushed file. It also checks that the copy holds no
     operation in flight;
  5. it marks every writer slot of the copy closed (the slots' owners are
     processes using the original), gives it FILE's permissions, fsyncs it,
     opens it read-only and verifies it: it must be clean. Only then is it
     renamed to DEST (a DEST made meanwhile is not replaced without
     --force) and the directory fsynced.

If writers change the file during every copy for --wait (default 1s),
backup holds them for one copy, at most --hold (default 1s): adds and
removes in other processes wait (lookups go on), exactly as during a
compact, and go on when the copy is done; the summary says for how long
they were held. A copy that would take longer than --hold is given up at
once and backup fails (exit 1). --hold 0 never holds writers: backup then
fails after --wait if it found no quiet moment. Files older than format
1.3 cannot be held.

On any failure DEST is left as it was. A file that is interrupted or dirty
is refused: repair it first. DEST is refused if it exists, unless --force.
Put a backup back with 'restore', not cp.`,
		Example: `  dabloomsctl backup spam.dbl /backups/spam-$(date +%F).dbl
  dabloomsctl backup spam.dbl spam.copy --wait 1m --hold 0 --force`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runBackup(cmd.Context(), args[0], args[1], &o)
		},
	}
	o.bindFlags(cmd.Flags())
	return cmd
}

// runBackup copies src to dest with recover.Backup (which holds the
// protocol) and reports the copy.
func (a *app) runBackup(ctx context.Context, src, dest string, o *backupOptions) error {
	if err := checkFile(src); err != nil {
		return err
	}
	rep, err := recover.Backup(ctx, src, dest, withBootID(&recover.BackupOptions{
		Wait: o.wait, Hold: o.hold, Overwrite: o.force, LockTimeout: a.lockTimeout,
	}, a.bootID))
	if errors.Is(err, recover.ErrNoQuietMoment) {
		return fmt.Errorf("%w; stop the writers, or raise --wait or --hold", err)
	}
	if err != nil {
		// src was checked: a missing file or directory, or one that
		// exists, is dest's.
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, scaling.ErrExists) || isPathError(err, dest) {
			return explain(dest, err)
		}
		// The copy is written under a temporary name in DEST's directory:
		// an error about that name is DEST's.
		var pe *fs.PathError
		if errors.As(err, &pe) && filepath.Dir(pe.Path) == filepath.Dir(dest) && pe.Path != src {
			return explain(dest, err)
		}
		return explain(src, err)
	}
	res := &backupJSON{
		Schema: "dabloomsctl.backup/v1", Path: src, Dest: dest, Bytes: rep.Bytes,
		MemSeqnum: rep.MemSeqnum, DiskSeqnum: rep.DiskSeqnum, Epoch: rep.Epoch, Attempts: rep.Attempts,
		HeldSeconds: rep.Held.Seconds(),
	}
	if a.json {
		return a.writeJSON(res)
	}
	held := ""
	if rep.Held > 0 {
		held = fmt.Sprintf(", writers held for %v", rep.Held.Round(time.Microsecond))
	}
	a.logf("backed up %s to %s: %s, clean at disk_seqnum %d (epoch %d), %d attempt(s)%s",
		src, dest, humanBytes(res.Bytes), res.DiskSeqnum, res.Epoch, res.Attempts, held)
	return nil
}
