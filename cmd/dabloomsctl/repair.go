package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/dablooms/dablooms/recover"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type repairJSON struct {
	Schema      string     `json:"schema"`
	Path        string     `json:"path"`
	Output      string     `json:"output"`       // "" when repaired in place
	Backup      string     `json:"backup"`       // "" when no backup was written: --output, --dry-run, nothing to repair, an error
	RebuildFrom string     `json:"rebuild_from"` // "" without --rebuild-from
	DryRun      bool       `json:"dry_run"`
	Keys        uint64     `json:"keys"`  // keys read from --rebuild-from and re-added
	Error       string     `json:"error"` // "" unless repair gave up (nothing was written)
	State       string     `json:"state"`
	ExitCode    int        `json:"exit_code"`
	Report      reportJSON `json:"report"`
}

// repairOptions are the flags of repair.
type repairOptions struct {
	output, backup, rebuildFrom string
	dryRun, noBackup            bool
	wait                        time.Duration
}

func (o *repairOptions) bindFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.output, "output", "o", "", "write the repaired file here and leave FILE untouched")
	fs.StringVar(&o.backup, "backup", "", "where to keep the original of an in-place repair (default FILE.bak, or FILE.bak.N if that exists); an existing file there is replaced")
	fs.BoolVar(&o.noBackup, "no-backup", false, "keep no backup of the original of an in-place repair (the rename that replaces it is still atomic)")
	fs.StringVar(&o.rebuildFrom, "rebuild-from", "", "KEY<TAB>ID lines: the source of truth for rebuilding dirty or damaged filters")
	fs.BoolVarP(&o.dryRun, "dry-run", "n", false, "report what would be done; change nothing")
	fs.DurationVar(&o.wait, "wait", 10*time.Second, "how long to wait for writers' operations in flight, or, for a file older than format 1.3, for other processes to close it")
}

// validate checks the flags against each other and that path and
// --rebuild-from exist.
func (o *repairOptions) validate(path string) error {
	if o.output != "" && (o.backup != "" || o.noBackup) {
		return usageErrorf("--backup and --no-backup are for repairs in place; with --output the original is left untouched")
	}
	if o.backup != "" && o.noBackup {
		return usageErrorf("--backup and --no-backup contradict each other")
	}
	if err := checkFile(path); err != nil {
		return err
	}
	if o.output != "" {
		// An existing --output is replaced: only by a file.
		if st, err := os.Stat(o.output); err == nil && !st.Mode().IsRegular() {
			return explain(o.output, recover.ErrNotRegular)
		}
	}
	return checkInput(o.rebuildFrom)
}

func newRepairCmd(a *app) *cobra.Command {
	var o repairOptions
	cmd := &cobra.Command{
		Use:   "repair FILE [--output NEW | --backup PATH | --no-backup] [--rebuild-from PATH] [--dry-run]",
		Short: "Roll back cut operations and rebuild damaged filters",
		Long: `repair brings a file back to a clean state:
  interrupted  the operations that dead writers left in flight are rolled
               back from their slot records (a cut add is undone; a cut
               remove is undone too, so the key stays present)
  dirty        (an OS crash or power loss since the last flush) the filters
               marked dirty cannot be trusted and are rebuilt from
               --rebuild-from; without it they are left as they are, and the
               exit code is 3
  damaged      item counts and hot words are recomputed; filters that cannot
               be fixed are rebuilt from --rebuild-from
  unflushed    the file is flushed
and then verifies the result, printing the findings as verify does.

--rebuild-from PATH is the source of truth: one KEY<TAB>ID line per key that
should be in the filter. For each filter to rebuild, the lines whose id is
in the filter's id range are added again (the file is read once per filter).

In place (no --output), the original is first kept as --backup, or not at
all with --no-backup; a file with nothing to repair is left alone and no
backup is written. With --output NEW the original is left untouched and the
repaired file is written to NEW. --dry-run only reports what would be done.
-q prints only the summary, not each action and finding.

What is kept: each in-place repair that replaces FILE keeps one backup of
the original, as large as FILE: a copy for a file of format 1.3 or later (for an
older one a hard link, which keeps the original's blocks in use). By
default it picks a free name, so repeated repairs add FILE.bak, FILE.bak.2,
FILE.bak.3, ...: to bound them, give a fixed --backup PATH (an existing
file there is replaced: one backup however often you repair), or
--no-backup (none; the rename is still atomic).

In place, a file of format 1.3 or later (every file this version creates) is repaired
while other processes keep it open: repair freezes it (their adds and
removes wait, their lookups go on), waits up to --wait for the operations
in flight, renames the repaired file over it, and every open handle,
readers and writers, moves to the repaired file by itself. A file older
than format 1.3 must be closed everywhere, readers too: repair waits up to
--wait for that, then fails (exit 1). With --output or --dry-run it waits
for the writers still running to close the file.

The exit code is 0 if the file ends clean (or unflushed), 3 if it could not
be made clean.`,
		Example: `  dabloomsctl repair spam.dbl
  dabloomsctl repair spam.dbl --rebuild-from links.tsv
  dabloomsctl repair spam.dbl --output spam.fixed.dbl --dry-run`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runRepair(cmd.Context(), args[0], &o)
		},
	}
	o.bindFlags(cmd.Flags())
	return cmd
}

// repairOptions checks o and makes the library's options of a repair or
// upgrade of path (the backup's free name, the hidden --boot-id).
func (a *app) repairOptions(path string, o *repairOptions) (*recover.RepairOptions, error) {
	if err := o.validate(path); err != nil {
		return nil, err
	}
	backup := o.backup
	if o.output == "" && !o.dryRun && !o.noBackup && backup == "" {
		backup = freeBackupName(path)
	}
	return withBootID(&recover.RepairOptions{Output: o.output, Backup: backup, NoBackup: o.noBackup, Wait: o.wait, DryRun: o.dryRun}, a.bootID), nil
}

// runRepair repairs path (rebuilds it with --rebuild-from) and reports the
// result; the exit code says whether the file ends clean.
func (a *app) runRepair(ctx context.Context, path string, o *repairOptions) error {
	ro, err := a.repairOptions(path, o)
	if err != nil {
		return err
	}
	res := repairJSON{
		Schema: "dabloomsctl.repair/v1", Path: path, Output: o.output,
		RebuildFrom: o.rebuildFrom, DryRun: o.dryRun,
	}
	var size int64 // before the repair: a file truncated is extended
	if st, err := os.Stat(path); err == nil {
		size = st.Size()
	}
	var r *recover.Report
	if o.rebuildFrom != "" {
		r, err = recover.Rebuild(path, a.lineSource(ctx, o.rebuildFrom, &res.Keys), ro)
	} else {
		r, err = recover.Repair(path, ro)
	}
	if err != nil {
		// path was checked: a missing directory is --output's.
		if o.output != "" && errors.Is(err, fs.ErrNotExist) {
			err = explain(o.output, err)
		} else {
			err = explain(path, err)
		}
	}
	if err != nil && r == nil {
		return err
	}
	res.State, res.ExitCode, res.Report = r.State.String(), reportExit(r), toReportJSON(r)
	res.Backup = r.Backup // "" unless the original was really kept there
	if err != nil {
		// Nothing was written: the report is that of the file as it
		// is, and repair could not work at all (exit 1, documented).
		res.Output, res.Backup = "", ""
		res.Error = err.Error()
		res.Keys = 0
		res.ExitCode = exitFail
	}
	if a.json {
		if err := a.writeJSON(res); err != nil {
			return err
		}
	} else {
		a.writeRepair(o, r, &res, size, err)
	}
	return silentExit(res.ExitCode)
}

// writeRepair writes the text report of a repair of a file of size bytes;
// err is the error that stopped it (nothing was written).
func (a *app) writeRepair(o *repairOptions, r *recover.Report, res *repairJSON, size int64, err error) {
	if !a.quiet { // -q: the summary lines only
		for _, act := range r.Actions {
			fmt.Fprintf(a.stdout, "action: %s\n", cliWords(act))
		}
		writeFindings(a.stdout, r)
	}
	target := res.Path
	if o.output != "" {
		target = o.output
	}
	label := "repaired " + target
	switch {
	case err != nil:
		label = "could not repair " + res.Path + ", which is"
	case o.dryRun:
		label = "dry run, " + target + " would be"
	case !r.Written:
		label = target
	}
	writeSummary(a.stdout, label, r)
	if o.rebuildFrom != "" && err == nil {
		verb := "re-added"
		if o.dryRun {
			verb = "would be re-added"
		}
		fmt.Fprintf(a.stdout, "rebuild from %s: %d key(s) %s\n", o.rebuildFrom, res.Keys, verb)
	}
	switch {
	case res.Backup != "":
		fmt.Fprintf(a.stdout, "backup of the original: %s\n", res.Backup)
	case err != nil || o.output != "" || o.dryRun:
	case !r.Written:
		fmt.Fprintf(a.stdout, "nothing to repair: %s was left as it is, and no backup was written\n", target)
	case o.noBackup:
		fmt.Fprintln(a.stdout, "no backup was kept (--no-backup)")
	}
	if err != nil {
		a.warnf("%v", err)
	} else if res.ExitCode == exitUnclean {
		why := stateMeaning(r)
		if m := truncatedMeaning(r, size, target); m != "" {
			// A file cut short is dirty once extended: its cause is the
			// truncation, not a restart.
			why = m
		}
		a.warnf("%s is still %s: %s", target, r.State, why)
	}
}

// freeBackupName returns path.bak, or path.bak.N for the first free N.
func freeBackupName(path string) string {
	name := path + ".bak"
	for i := 2; ; i++ {
		if _, err := os.Lstat(name); os.IsNotExist(err) {
			return name
		}
		name = path + ".bak." + strconv.Itoa(i)
	}
}

// lineSource reads KEY<TAB>ID lines from path and yields those whose id is
// in [first, last]. It counts the keys it yields in *n.
func (a *app) lineSource(ctx context.Context, path string, n *uint64) recover.Source {
	return func(first, last uint64, add func(key []byte, id uint64) error) error {
		label := fmt.Sprintf("rebuild ids %d..%d", first, last)
		if last == math.MaxUint64 {
			label = fmt.Sprintf("rebuild ids %d..", first)
		}
		return a.scanRange(ctx, path, label, "--rebuild-from", first, last, func(key []byte, id uint64) error {
			if err := add(key, id); err != nil {
				return err
			}
			*n++
			return nil
		})
	}
}
