package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dablooms/dablooms/recover"
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
}

// backupOptions are the flags of backup.
type backupOptions struct {
	wait  time.Duration
	force bool
}

func (o *backupOptions) bindFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.wait, "wait", 10*time.Second, "how long to keep retrying while writers change the file")
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
  1. it opens FILE for writing and flushes it (as 'flush' does);
  2. it reads the state word (phase and epoch), the number of filters, the
     two metadata copies and the file size: the phase must be "clean", and
     both copies must list the published number of filters (no growth is
     half done: a growth rewrites the copies while the phase is clean);
  3. it copies every byte of FILE to a temporary file beside DEST;
  4. it reads those words again. Any change to a filter's counters is
     preceded by moving the phase away from "clean", and the phase returns
     to "clean" only through a flush, which advances the epoch; a new filter
     changes the filter count and the metadata. So if nothing changed, no
     counter, item count or id range changed during the copy, and the copy
     equals the flushed file. It also checks that the copy holds no
     operation in flight;
  5. it marks every writer slot of the copy closed (the slots' owners are
     processes using the original), fsyncs the copy, renames it to DEST,
     fsyncs the directory, and opens DEST read-only to check that it is
     clean.

It takes no lock that stops other processes: readers and writers are never
blocked. The price is that a snapshot needs a quiet moment as long as the
copy (a few milliseconds per megabyte): if a writer changes the file during
the copy, backup flushes and tries again, for at most --wait, and then fails
(exit 1) leaving no DEST. With writers that never pause, stop them or use
a longer --wait. A file that is interrupted or dirty is refused: repair it
first. DEST is refused if it exists, unless --force.`,
		Example: `  dabloomsctl backup spam.dbl /backups/spam-$(date +%F).dbl
  dabloomsctl backup spam.dbl spam.copy --wait 1m --force`,
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
	rep, err := recover.Backup(ctx, src, dest, &recover.BackupOptions{
		Wait: o.wait, Overwrite: o.force, LockTimeout: a.lockTimeout, BootID: a.bootID,
	})
	if errors.Is(err, recover.ErrNoQuietMoment) {
		return fmt.Errorf("%w; stop the writers or raise --wait", err)
	}
	if err != nil {
		return err
	}
	res := &backupJSON{
		Schema: "dabloomsctl.backup/v1", Path: src, Dest: dest, Bytes: rep.Bytes,
		MemSeqnum: rep.MemSeqnum, DiskSeqnum: rep.DiskSeqnum, Epoch: rep.Epoch, Attempts: rep.Attempts,
	}
	if a.json {
		return a.writeJSON(res)
	}
	a.logf("backed up %s to %s: %s, clean at disk_seqnum %d (epoch %d), %d attempt(s)",
		src, dest, humanBytes(res.Bytes), res.DiskSeqnum, res.Epoch, res.Attempts)
	return nil
}
