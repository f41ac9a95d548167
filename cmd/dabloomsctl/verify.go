package main

import (
	"errors"

	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
	"github.com/spf13/cobra"
)

func newVerifyCmd(a *app) *cobra.Command {
	var quick bool
	cmd := &cobra.Command{
		Use:   "verify FILE",
		Short: "Check a file deeply and report every problem",
		Long: `verify reads the whole file without changing it and checks everything the
format lets it check: both metadata copies, the directory, the state word
and seqnums, every writer slot (live or dead, and the operations left in
flight by dead writers), each filter's item count against its counters, and
saturated counters (a run of them is damage: the filter must be rebuilt,
repair --rebuild-from). In a file of format 1.4 or later it also reads every page of
counters, item counts and late-add index whose checksum it can trust (all of
them in a clean file; in another, the pages not changed since the last flush
of the filters not marked dirty) and compares it with the checksum the last
flush took: a page that differs is damage at that filter and page, and the
filter must be rebuilt (repair --rebuild-from).

--quick reads only the metadata, the hot pages and the counters (for their
sums and saturation), not the other pages nor the checksums: for very large
files, it finds less damage.

It prints every finding on its own line ("STATE LOCATION: MESSAGE"), then a
summary line "FILE: STATE (N finding(s)) ...". The states, from best to worst:
  clean        equal to the last flush
  unflushed    changed since the last flush on this boot; trustworthy
  interrupted  a writer died mid-operation; repair rolls it back
  dirty        changed since the last flush before a machine restart;
               the dirty filters must be rebuilt (repair --rebuild-from)
  damaged      wrong values in a sound structure; repair (with
               --rebuild-from for overwritten counters)
  corrupt      broken structure; restore a backup or rebuild into --output
The exit code is 0 for clean and unflushed, 3 for the others.`,
		Example: `  dabloomsctl verify spam.dbl
  dabloomsctl verify spam.dbl --json | jq .state`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFile(args[0]); err != nil {
				return err
			}
			r, err := recover.VerifyWithOptions(args[0], withBootID(&recover.VerifyOptions{Quick: quick}, a.bootID))
			if err != nil {
				if r == nil && isCorruption(err) {
					// Not even a report: the file is corrupt beyond reading.
					r = corruptReport(args[0], err)
				} else if r == nil {
					return explain(args[0], err)
				} else {
					a.warnf("verify: %v", err)
				}
			}
			code := reportExit(r)
			if a.json {
				out := toReportJSON(r)
				out.Schema = "dabloomsctl.verify/v1"
				if err := a.writeJSON(out); err != nil {
					return err
				}
				return silentExit(code)
			}
			writeFindings(a.stdout, r)
			writeSummary(a.stdout, r.Path, r)
			switch code {
			case exitFail:
				a.warnf("%s", unreadable(args[0]))
			case exitUnclean:
				a.warnf("%s is %s: %s", args[0], r.State, stateMeaning(r))
			}
			return silentExit(code)
		},
	}
	cmd.Flags().BoolVar(&quick, "quick", false, "skip the page checksums: check the structure and the counters' sums only")
	return cmd
}

// corruptReport is the report of a file whose reading err stopped: corrupt,
// with err as its one finding.
func corruptReport(path string, err error) *recover.Report {
	f := recover.Finding{State: recover.Corrupt, Filter: -1, Slot: -1, Offset: -1, Message: err.Error()}
	var ce *scaling.CorruptionError
	if errors.As(err, &ce) {
		f.Filter, f.Offset, f.Field, f.Message = ce.Filter, ce.Offset, ce.Field, ce.Reason
	}
	return &recover.Report{Path: path, State: recover.Corrupt, Findings: []recover.Finding{f}}
}
