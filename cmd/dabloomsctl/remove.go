package main

import "github.com/spf13/cobra"

func newRemoveCmd(a *app) *cobra.Command {
	return newBulkCmd(a, "remove", &cobra.Command{
		Use:   "remove FILE [KEY...] --id N [--from PATH|-]",
		Short: "Remove keys, each with the id it was added with",
		Long: `remove removes the keys given on the command line (all with --id) and
then the lines of --from: one KEY, or KEY<TAB>ID, per line. The id must be
the one the key was added with: it picks the filter to decrement. There is
no default id: command-line keys need --id (exit 2 without it), and so do
--from lines without an id (exit 1 at the first such line). A key
that is in no filter whose id range holds its id is left alone and reported
("not present"); so is a key present in several filters whose id ranges
hold its id ("ambiguous": ids went backwards). The exit code is then 1,
after every other key was removed.

Progress, Ctrl-C, flushing, --checkpoint, --skip and --exclusive work as
for add.`,
		Example: `  dabloomsctl remove spam.dbl http://a.example/ --id 42
  dabloomsctl remove spam.dbl --from deleted.tsv`,
	})
}
