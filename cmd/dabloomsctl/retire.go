package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/scaling"
	"github.com/spf13/cobra"
)

type retireJSON struct {
	Schema       string  `json:"schema"`
	Path         string  `json:"path"`
	Before       uint64  `json:"before"`
	Retired      int     `json:"retired"`       // by this command
	RetiredTotal uint64  `json:"retired_total"` // since the file was created
	Filters      int     `json:"filters"`       // chain length after
	FirstFilter  uint64  `json:"first_filter"`  // number (since creation) of the oldest remaining filter
	FirstID      *uint64 `json:"first_id"`      // ids the remaining filters cover; null if all are empty
	LastID       *uint64 `json:"last_id"`
	Items        uint64  `json:"items"`
	FileSize     int64   `json:"file_size"`
	Flushed      bool    `json:"flushed"`
	Condition    string  `json:"condition"`
	MemSeqnum    uint64  `json:"mem_seqnum"`
	DiskSeqnum   uint64  `json:"disk_seqnum"`
}

func newRetireCmd(a *app) *cobra.Command {
	var before string
	var noFlush bool
	cmd := &cobra.Command{
		Use:   "retire FILE --before ID",
		Short: "Forget the oldest filters: those whose ids all lie below --before",
		Long: `retire drops, oldest first, every filter of the chain whose whole id range
lies below --before (an empty filter counts as below), but never the
newest filter. The keys they held are forgotten: contains answers false for
them from then on, in every process at once. Their disk blocks go back to
the file system, and their directory entries and space are reused by the
filters appended next, so a store that is filled with growing ids (a
timestamp) and retired as it goes is a sliding time window whose file
stops growing.

A key added late (with an id below a newer filter's range) lives in that
newer filter, and stays until it is retired. A file that has retired
filters carries the ring flag of format 1.2: older libraries refuse it.

retire opens the file for writing (it refuses an interrupted or dirty
file: repair it first), waits for the growth lock (--lock-timeout) and for
operations in flight on the retired filters, and flushes at the end unless
--no-flush. It prints how many filters it retired and what remains: the
chain's length, the ids it covers, its items and the file size. Retiring
nothing is not an error.`,
		Example: `  dabloomsctl retire events.dbl --before 1735689600     # ids are Unix seconds
  dabloomsctl retire events.dbl --before "$(date -d '7 days ago' +%s)" --json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !flagChanged(cmd.Flags(), "before") {
				return usageErrorf("retire needs --before ID")
			}
			id, err := parseID(before)
			if err != nil {
				return usageErrorf("--before: %v", err)
			}
			return a.runRetire(args[0], id, noFlush)
		},
	}
	cmd.Flags().StringVar(&before, "before", "", "retire the filters whose ids all lie below this id (a decimal from 0 to 2^63-1)")
	cmd.Flags().BoolVar(&noFlush, "no-flush", false, "do not flush at the end (the retirement is visible to every process but not durable against an OS crash)")
	return cmd
}

// idValue is a flag holding an id: parseID checks it when the command line
// is parsed, before any file is opened.
type idValue uint64

func (v *idValue) String() string { return strconv.FormatUint(uint64(*v), 10) }
func (v *idValue) Type() string   { return "ID" }
func (v *idValue) Set(s string) error {
	id, err := parseID(s)
	if err != nil {
		return err
	}
	*v = idValue(id)
	return nil
}

// parseID parses a decimal id, at most header.MaxID (2^63-1): the top bit
// of an id word is the filter's sealed flag, so no key has a larger id.
func parseID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return 0, fmt.Errorf("id %s is larger than %d (2^63-1), the largest id a key can have", s, uint64(header.MaxID))
		}
		return 0, fmt.Errorf("%q is not an id (a decimal integer from 0 to %d)", s, uint64(header.MaxID))
	}
	if id > header.MaxID {
		return 0, fmt.Errorf("id %d is larger than %d (2^63-1), the largest id a key can have", id, uint64(header.MaxID))
	}
	return id, nil
}

func (a *app) runRetire(path string, before uint64, noFlush bool) error {
	f, err := a.openRW(path)
	if err != nil {
		return err
	}
	defer f.Close() // idempotent: the Close below is the one whose error counts
	n, runErr := f.RetireBefore(before)
	if runErr != nil {
		runErr = fmt.Errorf("retire: %w", explain(path, runErr))
	}
	res := retireJSON{Schema: "dabloomsctl.retire/v1", Path: path, Before: before, Retired: n}
	// Whatever happened, make what was done durable (unless told not to).
	if !noFlush && !errors.Is(runErr, scaling.ErrLockTimeout) { // --lock-timeout bounds the whole command
		if ferr := f.Flush(); ferr != nil {
			runErr = errors.Join(runErr, fmt.Errorf("flush: %w", explain(path, ferr)))
		} else {
			res.Flushed = true
		}
	}
	st := f.Stats()
	res.RetiredTotal, res.Filters, res.Items, res.FileSize = st.Retired, len(st.Filters), st.Count, st.FileSize
	res.FirstFilter = st.Retired
	res.Condition, res.MemSeqnum, res.DiskSeqnum = st.Condition.String(), st.MemSeqnum, st.DiskSeqnum
	res.FirstID, res.LastID = chainIDs(st.Filters)
	if cerr := f.Close(); cerr != nil {
		runErr = errors.Join(runErr, cerr)
	}
	if runErr != nil && n == 0 {
		// Nothing was retired: no document, as for any failed command.
		return runErr
	}
	if a.json {
		if err := a.writeJSON(res); err != nil {
			return errors.Join(runErr, err)
		}
	} else {
		a.logRetire(&res)
	}
	return runErr
}

// chainIDs is the id range the filters cover together: the smallest first
// id and the largest last id of the non-empty ones (nil, nil if none).
func chainIDs(fs []scaling.FilterStats) (*uint64, *uint64) {
	lo, hi := uint64(math.MaxUint64), uint64(0)
	for _, s := range fs {
		if first, last := jsonIDs(s.FirstID, s.LastID); first != nil {
			lo, hi = min(lo, *first), max(hi, *last)
		}
	}
	return jsonIDs(lo, hi)
}

// logRetire writes retire's summary to stderr (unless --quiet).
func (a *app) logRetire(r *retireJSON) {
	flushed := "flushed"
	if !r.Flushed {
		flushed = "not flushed"
	}
	what := fmt.Sprintf("retired %d filter(s) whose ids all lie below %d", r.Retired, r.Before)
	if r.Retired == 0 {
		what = fmt.Sprintf("retired no filter: none but the newest has all its ids below %d", r.Before)
	}
	a.logf("%s; %d retired since the file was created; %s", what, r.RetiredTotal, flushed)
	ids := "no ids (empty)"
	if r.FirstID != nil {
		ids = "ids " + idRange(*r.FirstID, *r.LastID)
	}
	a.logf("remaining: %d filter(s) (numbers %d..%d since creation), %s, %d item(s); file size %s (%d bytes)",
		r.Filters, r.FirstFilter, r.FirstFilter+uint64(r.Filters)-1, ids, r.Items, humanBytes(r.FileSize), r.FileSize)
}
