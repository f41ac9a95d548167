package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dablooms/dablooms/scaling"
	"github.com/spf13/pflag"
)

// bulkOpts are the flags add and remove share.
type bulkOpts struct {
	from       string
	id         uint64
	noFlush    bool
	flushEvery uint64
	checkpoint uint64
}

func (o *bulkOpts) bindFlags(fs *pflag.FlagSet, verb string) {
	fs.StringVar(&o.from, "from", "", "read keys from this file (\"-\" = stdin): one KEY or KEY<TAB>ID per line")
	fs.Uint64Var(&o.id, "id", 0, "id of the command-line keys and of --from lines without an id")
	fs.BoolVar(&o.noFlush, "no-flush", false, "do not flush at the end (the changes are visible to every process but not durable against an OS crash)")
	fs.Uint64Var(&o.flushEvery, "flush-every", 0, "also flush after every N "+verb+"s (0 = only at the end)")
	fs.Uint64Var(&o.checkpoint, "checkpoint", 0, "after every N processed keys write \"checkpoint N\" to stderr (even with --quiet): the first N keys of the input are done")
}

type bulkJSON struct {
	Schema      string `json:"schema"`
	Path        string `json:"path"`
	Op          string `json:"op"`
	Processed   uint64 `json:"processed"`
	Changed     uint64 `json:"changed"`
	NotPresent  uint64 `json:"not_present"`
	Ambiguous   uint64 `json:"ambiguous"`
	Interrupted bool   `json:"interrupted"`
	Flushed     bool   `json:"flushed"`
	MemSeqnum   uint64 `json:"mem_seqnum"`
	DiskSeqnum  uint64 `json:"disk_seqnum"`
	Items       uint64 `json:"items"`
	Filters     int    `json:"filters"`
}

// runBulk adds or removes the keys of the command line and of --from.
func (a *app) runBulk(ctx context.Context, op string, path string, keys []string, o *bulkOpts) error {
	if len(keys) == 0 && o.from == "" {
		return usageErrorf("%s needs keys or --from", op)
	}
	if err := checkInput(o.from); err != nil {
		return err
	}
	f, err := a.openRW(path)
	if err != nil {
		return err
	}
	defer f.Close() // idempotent: the Close below is the one whose error counts
	res := bulkJSON{Schema: "dabloomsctl." + op + "/v1", Path: path, Op: op}
	var missing, ambiguous []string // the first ten of each, for the warnings
	apply := func(it item) error {
		id := o.id
		if it.hasID {
			id = it.id
		}
		var err error
		if op == "add" {
			err = f.Add(it.key, id)
		} else {
			err = f.Remove(it.key, id)
		}
		switch {
		case err == nil:
			res.Changed++
		case op == "remove" && errors.Is(err, scaling.ErrNotPresent):
			res.NotPresent++
			missing = appendFirst(missing, it.key, id)
		case op == "remove" && errors.Is(err, scaling.ErrAmbiguous):
			res.Ambiguous++
			ambiguous = appendFirst(ambiguous, it.key, id)
		default:
			if it.line > 0 {
				return fmt.Errorf("line %d: %s %q: %w", it.line, op, it.key, err)
			}
			return fmt.Errorf("%s %q: %w", op, it.key, err)
		}
		res.Processed++
		if o.checkpoint > 0 && res.Processed%o.checkpoint == 0 {
			fmt.Fprintf(a.stderr, "checkpoint %d\n", res.Processed)
		}
		if o.flushEvery > 0 && res.Changed > 0 && res.Changed%o.flushEvery == 0 && err == nil {
			if err := f.Flush(); err != nil {
				return fmt.Errorf("flush after %d %ss: %w", res.Changed, op, err)
			}
		}
		return nil
	}
	runErr := a.forEachItem(ctx, op, keys, o.from, apply)
	res.Interrupted = errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded)
	// Whatever happened, every operation that returned is complete: make
	// them durable (unless told not to) and release the writer slot.
	if !o.noFlush {
		if ferr := f.Flush(); ferr != nil {
			runErr = errors.Join(runErr, fmt.Errorf("flush: %w", ferr))
		} else {
			res.Flushed = true
		}
	}
	st := f.Stats()
	res.MemSeqnum, res.DiskSeqnum, res.Items, res.Filters = st.MemSeqnum, st.DiskSeqnum, st.Count, len(st.Filters)
	if cerr := f.Close(); cerr != nil {
		runErr = errors.Join(runErr, cerr)
	}
	if a.json {
		if err := a.writeJSON(res); err != nil {
			return err
		}
	} else {
		past := map[string]string{"add": "added", "remove": "removed"}[op]
		flushed := "flushed"
		if !res.Flushed {
			flushed = "not flushed"
		}
		skipped := ""
		if op == "remove" {
			skipped = fmt.Sprintf(" (%d not present, %d ambiguous)", res.NotPresent, res.Ambiguous)
		}
		a.logf("%s %d key(s) of %d processed%s; %s; mem_seqnum %d, %d item(s) in %d filter(s)",
			past, res.Changed, res.Processed, skipped, flushed, res.MemSeqnum, res.Items, res.Filters)
	}
	if res.Interrupted {
		return &exitError{code: exitFail, err: fmt.Errorf("interrupted after %d key(s); every completed %s is kept and the file is consistent", res.Processed, op)}
	}
	if runErr != nil {
		return runErr
	}
	for _, m := range missing {
		a.warnf("not present: %s", m)
	}
	for _, m := range ambiguous {
		a.warnf("ambiguous: %s", m)
	}
	var why []string
	if res.NotPresent > 0 {
		why = append(why, fmt.Sprintf("%d key(s) were not present in a filter for their id", res.NotPresent))
	}
	if res.Ambiguous > 0 {
		why = append(why, fmt.Sprintf("%d key(s) were present in several filters for their id (ambiguous: not removed)", res.Ambiguous))
	}
	if len(why) > 0 {
		return fmt.Errorf("%s; nothing changed for them", strings.Join(why, ", and "))
	}
	return nil
}

// appendFirst appends `"key" (id N)` to list if it holds fewer than ten.
func appendFirst(list []string, key []byte, id uint64) []string {
	if len(list) < 10 {
		list = append(list, fmt.Sprintf("%q (id %d)", key, id))
	}
	return list
}
