package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/dablooms/dablooms/recover"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type compactJSON struct {
	Schema        string  `json:"schema"`
	Path          string  `json:"path"`
	From          string  `json:"from"`
	FiltersBefore int     `json:"filters_before"`
	FiltersAfter  int     `json:"filters_after"`
	Counted       uint64  `json:"counted"` // keys of --from in the id range (0 with --capacity)
	Keys          uint64  `json:"keys"`    // keys added to the compacted file
	Capacity      uint64  `json:"capacity"`
	FirstID       *uint64 `json:"first_id"` // smallest id of the keys added; null if none
	LastID        *uint64 `json:"last_id"`  // largest id of the keys added; null if none
	SizeBefore    int64   `json:"size_before"`
	SizeAfter     int64   `json:"size_after"`
	Seconds       float64 `json:"seconds"`
	Error         string  `json:"error"` // "" unless compact gave up (the file was left as it was)
	ExitCode      int     `json:"exit_code"`
}

// compactOptions are the flags of compact.
type compactOptions struct {
	from     string
	capacity uint64
	headroom float64
	wait     time.Duration
}

func (o *compactOptions) bindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.from, "from", "", "KEY<TAB>ID lines: the source of truth, every key that should be in the filter (required; \"-\" = stdin, with --capacity)")
	fs.Uint64Var(&o.capacity, "capacity", 0, "capacity of the compacted filter (default: the keys of --from plus --headroom; with it --from is read once, and may be stdin)")
	fs.Float64Var(&o.headroom, "headroom", recover.DefaultCompactHeadroom, "room left for new keys, as a fraction of the keys of --from")
	fs.DurationVar(&o.wait, "wait", 10*time.Second, "how long to wait for writers' operations in flight, or, for a file older than format 1.3, for other processes to close it")
}

func newCompactCmd(a *app) *cobra.Command {
	var o compactOptions
	cmd := &cobra.Command{
		Use:   "compact FILE --from KEYS [--headroom 0.1] [--capacity N] | --from - --capacity N",
		Short: "Rebuild a long chain of filters into one from the source of truth",
		Long: `compact rebuilds FILE's chain of filters into one filter, sized for the keys
of --from plus --headroom, so that lookups ask one filter instead of many.

--from KEYS is the source of truth: one KEY<TAB>ID line per key that should
be in the filter (as add --from and repair --rebuild-from read). It is read
twice, once to count the keys and once to add them, unless --capacity gives
the size: then it is read once, and --from - reads the keys from stdin
(without --capacity, stdin is refused: it cannot be read twice). Every key is added with its id, so remove KEY --id ID still finds
it. Keys that are in FILE but not in KEYS are gone afterwards (up to the
false-positive rate). The seed, error rate, growth factor, tightening ratio
and counter layout stay those of FILE. Every id of KEYS is read: for a file
with retired filters, give KEYS only the keys of the window you keep.

The new file is built beside FILE under a hidden temporary name, flushed,
verified and renamed over FILE: an error or a crash leaves FILE as it was
(or compacted), and the next compact removes a temporary file a crash left.
No backup is kept; take one with backup first if KEYS may be incomplete.

A file of format 1.3 or later (every file this version creates) is compacted while
other processes keep it open: compact freezes it (their adds and removes
wait, their lookups answer from the old file), waits up to --wait for the
operations in flight, and every open handle, readers and writers, moves to
the compacted file by itself; their adds made while it ran go to the
compacted file. A file older than format 1.3 must be closed everywhere,
readers too: compact waits up to --wait for that, then fails (exit 1).`,
		Example: `  dabloomsctl compact spam.dbl --from links.tsv
  dabloomsctl compact spam.dbl --from links.tsv --headroom 0.5 --json
  psql -At -F $'\t' -c 'select url, id from links' | dabloomsctl compact spam.dbl --from - --capacity 2000000`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runCompact(cmd.Context(), args[0], &o)
		},
	}
	o.bindFlags(cmd.Flags())
	return cmd
}

// runCompact compacts path from --from and reports what it did.
func (a *app) runCompact(ctx context.Context, path string, o *compactOptions) error {
	switch {
	case o.from == "":
		return usageErrorf("compact needs --from KEYS, the source of truth")
	case o.from == "-" && o.capacity == 0:
		return usageErrorf("compact --from - needs --capacity N: without it compact reads --from twice (to count the keys, then to add them), and stdin can be read only once")
	case math.IsNaN(o.headroom) || math.IsInf(o.headroom, 0) || o.headroom < 0:
		return usageErrorf("--headroom must be a number ≥ 0, not %v", o.headroom)
	}
	if err := checkFile(path); err != nil {
		return err
	}
	if err := checkInput(o.from); err != nil {
		return err
	}
	headroom := o.headroom
	if headroom == 0 {
		headroom = -1 // none (0 is the library's default)
	}
	ids := &idSpan{lo: math.MaxUint64}
	rep, err := recover.Compact(path, a.compactSource(ctx, o.from, ids), withBootID(&recover.CompactOptions{
		Capacity: o.capacity, Headroom: headroom, Wait: o.wait,
	}, a.bootID))
	res := compactJSON{Schema: "dabloomsctl.compact/v1", Path: path, From: o.from}
	if err != nil {
		res.Error, res.ExitCode = err.Error(), exitFail
		if a.json {
			if jerr := a.writeJSON(res); jerr != nil {
				return jerr
			}
		}
		if err = explain(path, err); errors.As(err, new(*userError)) {
			return fmt.Errorf("%w; it was left as it was", err)
		}
		return fmt.Errorf("compact: %w; %s was left as it was", err, path)
	}
	res.FiltersBefore, res.FiltersAfter = rep.FiltersBefore, rep.FiltersAfter
	res.Counted, res.Keys, res.Capacity = rep.Counted, rep.Keys, rep.Capacity
	// rep.FirstID and rep.LastID are the bounds asked of the source (0 and
	// the largest id): the ids the keys had are what the user wants to see.
	res.FirstID, res.LastID = jsonIDs(ids.lo, ids.hi)
	res.SizeBefore, res.SizeAfter = rep.SizeBefore, rep.SizeAfter
	res.Seconds = rep.Duration.Seconds()
	if a.json {
		return a.writeJSON(res)
	}
	fmt.Fprintf(a.stdout, "compacted %s: %d filter(s) before, %d after\n", path, rep.FiltersBefore, rep.FiltersAfter)
	span := "no ids"
	if res.FirstID != nil {
		span = "ids " + idRange(*res.FirstID, *res.LastID)
	}
	fmt.Fprintf(a.stdout, "keys: %d added from %s (%s), capacity %d\n", rep.Keys, inputName(o.from), span, rep.Capacity)
	fmt.Fprintf(a.stdout, "file size: %s before, %s after\n", humanBytes(rep.SizeBefore), humanBytes(rep.SizeAfter))
	a.logf("compact took %v", rep.Duration.Round(time.Millisecond))
	return nil
}

// idSpan is the smallest and largest id of the keys a pass added.
type idSpan struct{ lo, hi uint64 }

// compactSource reads KEY<TAB>ID lines from path and yields those whose id
// is in [first, last]; ids records the span of the ids of the last pass
// (the one that adds: the first pass may only count).
func (a *app) compactSource(ctx context.Context, path string, ids *idSpan) recover.Source {
	pass := 0
	return func(first, last uint64, add func(key []byte, id uint64) error) error {
		pass++
		if path == "-" && pass > 1 {
			return errors.New("compact asked for the keys of stdin a second time; give --from a file")
		}
		*ids = idSpan{lo: math.MaxUint64}
		return a.scanRange(ctx, path, fmt.Sprintf("compact, pass %d", pass), "compact --from", first, last, func(key []byte, id uint64) error {
			ids.lo, ids.hi = min(ids.lo, id), max(ids.hi, id)
			return add(key, id)
		})
	}
}
