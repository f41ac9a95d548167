package main

import (
	"bufio"
	"encoding/json"
	"fmt"

	"github.com/dablooms/dablooms/scaling"
	"github.com/spf13/cobra"
)

func newContainsCmd(a *app) *cobra.Command {
	var from string
	cmd := &cobra.Command{
		Use:   "contains FILE [KEY...] [--from PATH|-]",
		Short: "Ask whether keys may be present",
		Long: `contains prints one line per key: the key, a tab, and "true" (the key may
have been added and not removed) or "false" (it certainly was not, or was
removed). A Bloom filter answers "true" for a small fraction of keys never
added (the false-positive rate, see inspect), and never "false" for a key
that was added and not removed.

Keys come from the command line, then from --from (one KEY or KEY<TAB>ID
per line; the id is ignored). The file is opened read-only and is never
written. If the file is interrupted or dirty a warning goes to stderr: its
answers may then be wrong until it is repaired.`,
		Example: `  dabloomsctl contains spam.dbl http://a.example/ http://c.example/
  dabloomsctl contains spam.dbl --from urls.txt --json`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && from == "" {
				return usageErrorf("contains needs keys or --from")
			}
			if err := checkInput(from); err != nil {
				return err
			}
			f, err := a.openRO(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			cond := f.Condition()
			if cond == scaling.Interrupted || cond == scaling.Dirty {
				a.warnf("warning: %s is %s: answers may be wrong until 'dabloomsctl repair'", args[0], cond)
			}
			w := bufio.NewWriter(a.stdout)
			defer w.Flush()
			var present, absent uint64
			if a.json {
				p, _ := json.Marshal(args[0])
				fmt.Fprintf(w, "{\n  \"schema\": \"dabloomsctl.contains/v1\",\n  \"path\": %s,\n  \"condition\": %q,\n  \"results\": [", p, cond.String())
			}
			first := true
			err = a.forEachItem(cmd.Context(), "contains", args[1:], from, func(it item) error {
				ok := f.Contains(it.key)
				if ok {
					present++
				} else {
					absent++
				}
				if a.json {
					k, _ := json.Marshal(string(it.key))
					sep := ","
					if first {
						sep, first = "", false
					}
					fmt.Fprintf(w, "%s\n    {\"key\": %s, \"present\": %t}", sep, k, ok)
					return nil
				}
				w.Write(it.key)
				if ok {
					w.WriteString("\ttrue\n")
				} else {
					w.WriteString("\tfalse\n")
				}
				return nil
			})
			if a.json {
				if !first {
					w.WriteString("\n  ")
				}
				fmt.Fprintf(w, "],\n  \"present\": %d,\n  \"absent\": %d\n}\n", present, absent)
			}
			if err != nil {
				return err
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "read keys from this file (\"-\" = stdin): one KEY or KEY<TAB>ID per line")
	return cmd
}
