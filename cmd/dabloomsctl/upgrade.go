package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dablooms/dablooms/recover"
	"github.com/spf13/cobra"
)

// newUpgradeCmd is `dabloomsctl upgrade FILE`: recover.Upgrade.
func newUpgradeCmd(a *app) *cobra.Command {
	var o repairOptions
	cmd := &cobra.Command{
		Use:   "upgrade FILE [--output NEW | --backup PATH | --no-backup] [--dry-run]",
		Short: "Rewrite a file of format 1.0-1.5 as 1.6, with page checksums, the undo block and record counts",
		Long: `upgrade rewrites a file of format 1.0 to 1.5 as format 1.6: every filter
then ends with the checksums of its pages (counters, writers' item counts,
late-add index), which every flush keeps, so that verify can check every
page of the file; the file has the undo block, with which an exclusive
writer (add --exclusive, OpenOptions.Exclusive) changes a key's counters
in one step, and a count word per record, with which a shared handle
counts an add or remove without a locked instruction (the writers' item
counts are folded into the filters' items first). A file of format 1.4
or 1.5 gains only what it lacks of the last two: its metadata is written
again, nothing grows. It first repairs what repair would; a file with a
filter that needs rebuilding is refused (exit 1): run repair
--rebuild-from first. A file of format 1.6 is only repaired. Libraries
before format 1.6 do not open the result.

The file is replaced as repair replaces it: in place, the original is kept
as --backup (default FILE.bak, or FILE.bak.N), or not at all with
--no-backup; with --output NEW the original is left untouched. A file of
format 1.3 is upgraded while other processes keep it open (their adds and
removes wait, their lookups go on, and every handle moves to the new file);
an older one must be closed everywhere first. The file grows by about
0.12 % (at least two pages per filter).

The exit code is 0 if the file ends clean (or unflushed), 3 if not.`,
		Example: `  dabloomsctl upgrade spam.dbl
  dabloomsctl upgrade spam.dbl --output spam.v16.dbl`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runUpgrade(cmd.Context(), args[0], &o)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.output, "output", "o", "", "write the upgraded file here and leave FILE untouched")
	fs.StringVar(&o.backup, "backup", "", "where to keep the original of an upgrade in place (default FILE.bak, or FILE.bak.N if that exists); an existing file there is replaced")
	fs.BoolVar(&o.noBackup, "no-backup", false, "keep no backup of the original (the rename that replaces it is still atomic)")
	fs.BoolVarP(&o.dryRun, "dry-run", "n", false, "report what would be done; change nothing")
	fs.DurationVar(&o.wait, "wait", 10*time.Second, "how long to wait for writers' operations in flight, or, for a file older than format 1.3, for other processes to close it")
	return cmd
}

// runUpgrade upgrades path and reports as repair does.
func (a *app) runUpgrade(ctx context.Context, path string, o *repairOptions) error {
	ro, err := a.repairOptions(path, o)
	if err != nil {
		return err
	}
	res := repairJSON{Schema: "dabloomsctl.upgrade/v1", Path: path, Output: o.output, DryRun: o.dryRun}
	r, err := recover.UpgradeContext(ctx, path, ro)
	if errors.Is(err, recover.ErrUnrepairable) && r != nil && len(r.Filters) > 0 {
		// Not a file beyond repair (explain's reading of the sentinel):
		// one whose filters must be rebuilt first.
		err = &userError{msg: fmt.Sprintf("%s cannot be upgraded yet: %s", path, cliWords(afterSentinel(err, recover.ErrUnrepairable))), err: err}
	}
	if err != nil {
		err = explain(path, err)
		if r == nil {
			return err
		}
	}
	res.State, res.ExitCode, res.Report = r.State.String(), reportExit(r), toReportJSON(r)
	res.Backup = r.Backup
	if err != nil {
		res.Output, res.Backup = "", ""
		res.Error = err.Error()
		res.ExitCode = exitFail
	}
	if a.json {
		if err := a.writeJSON(res); err != nil {
			return err
		}
		return silentExit(res.ExitCode)
	}
	if !a.quiet {
		for _, act := range r.Actions {
			fmt.Fprintf(a.stdout, "action: %s\n", cliWords(act))
		}
		writeFindings(a.stdout, r)
	}
	target := path
	if o.output != "" {
		target = o.output
	}
	label := "upgraded " + target
	switch {
	case err != nil:
		label = "could not upgrade " + path + ", which is"
	case o.dryRun:
		label = "dry run, " + target + " would be"
	case !r.Written:
		label = target
	}
	writeSummary(a.stdout, label, r)
	if res.Backup != "" {
		fmt.Fprintf(a.stdout, "backup of the original: %s\n", res.Backup)
	}
	if err != nil {
		a.warnf("%v", err)
	} else if res.ExitCode == exitUnclean {
		a.warnf("%s is still %s: %s", target, r.State, stateMeaning(r))
	}
	return silentExit(res.ExitCode)
}
