package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
	"github.com/spf13/cobra"
)

type restoreJSON struct {
	Schema   string `json:"schema"`
	Backup   string `json:"backup"`
	Path     string `json:"path"`
	Bytes    int64  `json:"bytes"`
	Replaced bool   `json:"replaced"`
}

func newRestoreCmd(a *app) *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "restore BACKUP FILE",
		Short: "Put a backup back in place of a file that others may be using",
		Long: `restore puts BACKUP (a file written by 'backup') at FILE, while other
processes may have FILE open, and moves them to the restored file.

Do not cp a backup over FILE: a process that has FILE open goes on reading
and writing the file it opened (a copy to a new name and a rename leaves it
on the old file for ever; a copy over the open file mixes the two under its
memory mapping). restore is the one safe way:
  1. BACKUP must verify clean;
  2. it is copied beside FILE (keeping FILE's permissions), fsynced, opened
     and verified clean;
  3. FILE is held as an in-place repair holds it: a file of format 1.3 or later is
     frozen (adds and removes in other processes wait, lookups go on); an
     older file must be closed by every process, waiting at most --wait;
  4. the copy is renamed over FILE, the directory fsynced, and every process
     that has FILE open moves to the restored file.

Everything written to FILE since the backup was taken is lost: that is what
restoring means. The file replaced is not kept (take a backup of it first if
you may want it). On any failure before the rename FILE is left as it was.
If FILE does not exist, the backup is copied there.`,
		Example: `  dabloomsctl restore /backups/spam-2024-05-01.dbl spam.dbl`,
		Args:    exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runRestore(cmd.Context(), args[0], args[1], wait)
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 10*time.Second, "how long to wait for the processes using FILE (a file older than format 1.3: until they close it)")
	return cmd
}

func (a *app) runRestore(ctx context.Context, backup, path string, wait time.Duration) error {
	if err := checkFile(backup); err != nil {
		return fmt.Errorf("the backup %w", err)
	}
	if _, err := os.Lstat(path); err == nil {
		if err := checkFile(path); err != nil {
			return err
		}
	}
	rep, err := recover.Restore(ctx, backup, path, withBootID(&recover.RestoreOptions{Wait: wait}, a.bootID))
	if err != nil {
		// Both were checked: what the bytes say is the backup's (it must
		// verify clean); a lock or a busy file is FILE's.
		if errors.Is(err, scaling.ErrNotDablooms) || errors.Is(err, scaling.ErrVersion) || isCorruption(err) {
			return fmt.Errorf("the backup %w; nothing was restored", explain(backup, err))
		}
		return explain(path, err)
	}
	res := &restoreJSON{Schema: "dabloomsctl.restore/v1", Backup: backup, Path: path, Bytes: rep.Bytes, Replaced: rep.Replaced}
	if a.json {
		return a.writeJSON(res)
	}
	if rep.Replaced {
		a.logf("restored %s to %s (%s): the processes using it moved to the restored file", backup, path, humanBytes(rep.Bytes))
	} else {
		a.logf("restored %s to %s (%s)", backup, path, humanBytes(rep.Bytes))
	}
	return nil
}
