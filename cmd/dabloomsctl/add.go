package main

import "github.com/spf13/cobra"

func newAddCmd(a *app) *cobra.Command {
	return newBulkCmd(a, "add", &cobra.Command{
		Use:   "add FILE [KEY...] [--id N] [--from PATH|-]",
		Short: "Add keys, each with the id of the row it stands for",
		Long: `add adds the keys given on the command line (all with --id) and then the
lines of --from: one KEY, or KEY<TAB>ID, per line (a line without an id
gets --id, default 0). The id is what a later remove passes, and what
repair --rebuild-from uses to rebuild a filter by id range. Empty lines
and lines whose key is only spaces or tabs are skipped (the latter with a
warning); a UTF-8 byte-order mark at the start is dropped; a CR inside a
line (CR-only line ends) is an error; a line is at most 16 MiB.

Bulk input draws a progress bar on stderr when stderr is a terminal (not with
--quiet or --json; --progress always forces it). Ctrl-C (or SIGTERM) stops
between two operations: every add that completed is kept, the file is
flushed and closed, and it is consistent; the exit code is then 1.

--exclusive makes this command the file's only writer until it ends (the
library's OpenOptions.Exclusive): its adds are faster, other writers wait
for it (up to their lock timeout), lookups everywhere go on.

At the end the file is flushed (fsync) unless --no-flush. --checkpoint N
writes "checkpoint N" to stderr after every N keys: the first N keys of the
input are then in the filter, visible to every process. --skip N passes
over the first N keys of the input: it resumes a load killed after
"checkpoint N". The summary on stderr gives the time taken and the rate.`,
		Example: `  dabloomsctl add spam.dbl http://a.example/ http://b.example/ --id 42
  dabloomsctl add spam.dbl --from links.tsv
  dabloomsctl add spam.dbl --from links.tsv --exclusive   # a bulk load
  some-export | dabloomsctl add spam.dbl --from - --checkpoint 10000
  some-export | dabloomsctl add spam.dbl --from - --checkpoint 10000 --skip 730000   # resume`,
	})
}
