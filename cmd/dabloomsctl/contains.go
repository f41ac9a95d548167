package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"

	"github.com/dablooms/dablooms/scaling"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// containsOptions are the flags of contains.
type containsOptions struct {
	from     string
	exitCode bool
}

func (o *containsOptions) bindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.from, "from", "", "read keys from this file (\"-\" = stdin): one KEY or KEY<TAB>ID per line")
	fs.BoolVar(&o.exitCode, "exit-code", false, "exit 0 if every key may be present, 1 if any is absent, 2 on an error (for scripts, like grep -q)")
}

func newContainsCmd(a *app) *cobra.Command {
	var o containsOptions
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
answers may then be wrong until it is repaired.

--exit-code makes the exit code the answer, for scripts, as grep does: 0
when every key may be present, 1 when any is certainly absent (nothing is
written to stderr), 2 on any error (a missing or unreadable file, bad
input, an interrupt: a message on stderr says which), so that a broken
store is never taken for "not seen". The answers are printed as usual (add
> /dev/null to hide them).`,
		Example: `  dabloomsctl contains spam.dbl http://a.example/ http://c.example/
  dabloomsctl contains spam.dbl --from urls.txt --json
  if dabloomsctl contains spam.dbl "$url" --exit-code >/dev/null; then echo seen; fi`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runContains(cmd.Context(), args[0], args[1:], &o)
		},
	}
	o.bindFlags(cmd.Flags())
	return cmd
}

// runContains answers for the keys and the lines of --from whether they
// may be in path.
func (a *app) runContains(ctx context.Context, path string, keys []string, o *containsOptions) error {
	if len(keys) == 0 && o.from == "" {
		return usageErrorf("contains needs keys or --from")
	}
	err := a.answer(ctx, path, keys, o)
	if err != nil && o.exitCode && !isAbsent(err) {
		return answerError(err)
	}
	return err
}

// errAbsent is contains --exit-code's answer "a key is certainly absent".
var errAbsent = silentExit(exitFail)

func isAbsent(err error) bool { return err == errAbsent }

// answer prints the answers of contains; with --exit-code it returns
// errAbsent if any key is absent.
func (a *app) answer(ctx context.Context, path string, keys []string, o *containsOptions) error {
	if err := checkInput(o.from); err != nil {
		return err
	}
	f, err := a.openRO(path)
	if err != nil {
		return err
	}
	defer f.Close()
	cond := f.Condition()
	if cond == scaling.Interrupted || cond == scaling.Dirty {
		a.warnf("warning: %s is %s: answers may be wrong until 'dabloomsctl repair'", path, cond)
	}
	out := &containsOut{w: bufio.NewWriter(a.stdout), json: a.json, first: true}
	defer out.w.Flush()
	out.begin(path, cond)
	err = a.forEachItem(ctx, "contains", keys, o.from, func(it item) error {
		out.answer(it.key, f.Contains(it.key))
		return nil
	})
	out.end()
	if err != nil {
		return err
	}
	if err := out.w.Flush(); err != nil {
		return err
	}
	if o.exitCode && out.absent > 0 {
		return errAbsent
	}
	return nil
}

// containsOut writes the answers of contains: a line per key, or one JSON
// document written as the answers come.
type containsOut struct {
	w               *bufio.Writer
	json            bool
	first           bool // no answer written yet
	present, absent uint64
}

func (c *containsOut) begin(path string, cond scaling.Condition) {
	if c.json {
		p, _ := json.Marshal(path)
		fmt.Fprintf(c.w, "{\n  \"schema\": \"dabloomsctl.contains/v1\",\n  \"path\": %s,\n  \"condition\": %q,\n  \"results\": [", p, cond.String())
	}
}

func (c *containsOut) answer(key []byte, ok bool) {
	if ok {
		c.present++
	} else {
		c.absent++
	}
	if c.json {
		k, _ := json.Marshal(string(key))
		sep := ","
		if c.first {
			sep, c.first = "", false
		}
		fmt.Fprintf(c.w, "%s\n    {\"key\": %s, \"present\": %t}", sep, k, ok)
		return
	}
	c.w.Write(key)
	if ok {
		c.w.WriteString("\ttrue\n")
	} else {
		c.w.WriteString("\tfalse\n")
	}
}

// end closes the JSON document, with the counts of the answers.
func (c *containsOut) end() {
	if c.json {
		if !c.first {
			c.w.WriteString("\n  ")
		}
		fmt.Fprintf(c.w, "],\n  \"present\": %d,\n  \"absent\": %d\n}\n", c.present, c.absent)
	}
}
