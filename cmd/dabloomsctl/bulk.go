package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dablooms/dablooms/scaling"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// bulkOpts are the flags add and remove share.
type bulkOpts struct {
	from       string
	id         uint64
	noFlush    bool
	flushEvery uint64
	checkpoint uint64
	exclusive  bool
	skip       uint64
	idSet      bool // --id was given
}

// newBulkCmd completes cmd, whose text add.go or remove.go gives, as the
// bulk command verb ("add" or "remove"): FILE then keys, and the flags of
// bulkOpts.
func newBulkCmd(a *app, verb string, cmd *cobra.Command) *cobra.Command {
	var o bulkOpts
	cmd.Args = minArgs(1)
	cmd.RunE = func(c *cobra.Command, args []string) error {
		o.idSet = flagChanged(c.Flags(), "id")
		return a.runBulk(c.Context(), verb, args[0], args[1:], &o)
	}
	o.bindFlags(cmd.Flags(), verb)
	return cmd
}

func (o *bulkOpts) bindFlags(fs *pflag.FlagSet, verb string) {
	fs.StringVar(&o.from, "from", "", "read keys from this file (\"-\" = stdin): one KEY or KEY<TAB>ID per line")
	fs.Var((*idValue)(&o.id), "id", "id of the command-line keys and of --from lines without an id (0 to 2^63-1)")
	fs.BoolVar(&o.noFlush, "no-flush", false, "do not flush at the end (the changes are visible to every process but not durable against an OS crash)")
	fs.Uint64Var(&o.flushEvery, "flush-every", 0, "also flush after every N "+verb+"s (0 = only at the end)")
	fs.BoolVar(&o.exclusive, "exclusive", false, "hold the file as its only writer while the command runs: faster "+verb+"s; other writers wait for it (up to their lock timeout), lookups go on")
	fs.Uint64Var(&o.checkpoint, "checkpoint", 0, "after every N processed keys write \"checkpoint N\" to stderr (even with --quiet): the first N keys of the input are done")
	fs.Uint64Var(&o.skip, "skip", 0, "skip the first N keys of the input, as --checkpoint counts them: resumes a load that was killed after \"checkpoint N\"")
}

type bulkJSON struct {
	Schema      string  `json:"schema"`
	Path        string  `json:"path"`
	Op          string  `json:"op"`
	Processed   uint64  `json:"processed"`
	Changed     uint64  `json:"changed"`
	NotPresent  uint64  `json:"not_present"`
	Ambiguous   uint64  `json:"ambiguous"`
	Interrupted bool    `json:"interrupted"`
	Flushed     bool    `json:"flushed"`
	MemSeqnum   uint64  `json:"mem_seqnum"`
	DiskSeqnum  uint64  `json:"disk_seqnum"`
	Items       uint64  `json:"items"`
	Filters     int     `json:"filters"`
	Skipped     uint64  `json:"skipped"` // keys of the input skipped by --skip
	Seconds     float64 `json:"seconds"` // the run's wall time
}

// runBulk adds or removes the keys of the command line and of --from.
func (a *app) runBulk(ctx context.Context, op string, path string, keys []string, o *bulkOpts) error {
	if len(keys) == 0 && o.from == "" {
		return usageErrorf("%s needs keys or --from", op)
	}
	if op == "remove" && len(keys) > 0 && !o.idSet {
		return usageErrorf("remove needs --id: the id the keys were added with picks the filter to decrement")
	}
	if err := checkInput(o.from); err != nil {
		return err
	}
	f, err := scaling.Open(path, withBootID(&scaling.OpenOptions{LockTimeout: a.lockWait(), Exclusive: o.exclusive}, a.bootID))
	if err != nil {
		return explain(path, err)
	}
	defer f.Close() // idempotent: the Close in finish is the one whose error counts
	b := &bulk{a: a, f: f, op: op, o: o, res: bulkJSON{Schema: "dabloomsctl." + op + "/v1", Path: path, Op: op}, batch: new(batch), skipLeft: o.skip, maxBatch: maxBatch, maxBytes: maxBatchBytes, start: time.Now()}
	if fs := f.Stats().Filters; o.exclusive && op == "add" && len(fs) > 0 {
		b.maxBatch = exclusiveBatch(fs[len(fs)-1].Capacity)
	}
	if o.checkpoint == 0 && o.flushEvery == 0 {
		b.startApplier()
	}
	runErr := a.forEachItem(ctx, op, keys, o.from, b.collect)
	// The keys read before the input ended, was cancelled or went wrong
	// are applied (after a failed batch, nothing is left to apply).
	runErr = b.applyRest(runErr)
	b.res.Interrupted = errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded)
	runErr = b.finish(runErr)
	b.res.Seconds = time.Since(b.start).Seconds()
	if b.skipLeft > 0 && runErr == nil && !b.res.Interrupted {
		a.warnf("--skip %d: the input holds only %d key(s); nothing was %s", o.skip, b.res.Skipped, map[string]string{"add": "added", "remove": "removed"}[op])
	}
	if a.json {
		if err := a.writeJSON(b.res); err != nil {
			return err
		}
	} else {
		b.logSummary()
	}
	if b.res.Interrupted {
		return &exitError{code: exitFail, err: fmt.Errorf("interrupted after %d key(s); every completed %s is kept and the file is consistent", b.res.Processed, op)}
	}
	if runErr != nil {
		return runErr
	}
	return b.skipped()
}

// bulk is one run of add or remove: the file, the flags and the tally.
type bulk struct {
	a                  *app
	f                  *scaling.Filter
	op                 string
	o                  *bulkOpts
	res                bulkJSON
	missing, ambiguous []string // the first ten of each, for the warnings
	batch              *batch   // the batch being collected
	pipe               *applier // nil: each batch is applied as it fills
	lockTimedOut       bool     // the run timed out waiting for a lock: not flushed
	skipLeft           uint64   // keys --skip has yet to pass over
	maxBatch           int      // keys per batch at most (maxBatch, exclusiveBatch)
	maxBytes           int      // key bytes per batch: applied once it holds this many (maxBatchBytes)
	start              time.Time
}

// applier applies the batches the reading goroutine fills, in order, on a
// goroutine of its own, so that reading and parsing the next batch
// overlaps the filter's work on this one (two cores: the bulk load's wall
// time is the larger of the two, not their sum). Used without
// --checkpoint and --flush-every, whose batch limits depend on the
// results of the batches before. It owns b.res and the warning lists until
// done is closed.
type applier struct {
	work     chan *batch   // filled batches, in input order
	free     chan *batch   // applied batches, to be filled again
	done     chan struct{} // closed once every batch handed over is applied
	err      error         // the first batch error (read after done)
	failedAt int           // the number of the batch that failed (read after done)
	stopped  atomic.Bool   // a batch failed: the rest are not applied
	sent     int           // batches handed over (the reading goroutine's)
}

// errApplierStopped ends the reading once a batch failed; the batch's own
// error is what the run reports.
var errApplierStopped = errors.New("a batch failed")

func (b *bulk) startApplier() {
	p := &applier{work: make(chan *batch, 1), free: make(chan *batch, 2), done: make(chan struct{})}
	p.free <- new(batch)
	b.pipe = p
	go func() {
		defer close(p.done)
		n := 0
		for q := range p.work {
			if p.err == nil {
				if p.err = b.apply(q); p.err != nil {
					p.failedAt = n
					p.stopped.Store(true)
				}
			}
			n++
			q.reset()
			p.free <- q
		}
	}()
}

// handOver gives the filled batch to the applier and takes an empty one.
func (b *bulk) handOver() error {
	if b.pipe.stopped.Load() {
		return errApplierStopped
	}
	b.pipe.work <- b.batch
	b.pipe.sent++
	b.batch = <-b.pipe.free
	return nil
}

// applyRest applies the keys collected last and, with an applier, waits
// for it. It returns the run's error: the error of the batch that failed,
// if one did, joined before runErr (why the reading stopped), as a run
// without an applier reports them. But if that batch was handed over
// before the reading stopped, the reading went on past it only because
// the applier was behind: a run without one would have stopped at the
// batch and never read on, so its error is the run's alone.
func (b *bulk) applyRest(runErr error) error {
	if b.pipe == nil {
		return joinFirst(b.apply(b.batch), runErr)
	}
	p := b.pipe
	before := p.sent
	if len(b.batch.ids) > 0 && !p.stopped.Load() {
		p.work <- b.batch
		p.sent++
	}
	close(p.work)
	<-p.done
	if p.err != nil && p.failedAt < before {
		return p.err // (runErr may be errApplierStopped: the reading saw it)
	}
	return joinFirst(p.err, runErr)
}

// batch holds the keys collected for one AddBatch or RemoveBatch.
type batch struct {
	buf     []byte // the keys' bytes (scanLines reuses its buffer)
	ends    []int  // end of key i in buf
	keys    [][]byte
	ids     []uint64
	lines   []int
	results []error
}

// maxBatch is how many keys one AddBatch or RemoveBatch takes at most,
// but for an exclusive add (exclusiveBatch).
const maxBatch = 4096

// maxBatchBytes bounds a batch by its keys' bytes as well as by their
// number: a batch is applied once its keys hold this many bytes, so that
// long keys (lines may be up to maxLine) cannot make a batch of maxBatch
// or exclusiveBatch lines take gigabytes.
const maxBatchBytes = 256 << 20

// exclusiveBatch is how many keys one AddBatch takes at most on an
// exclusive handle whose newest filter holds capacity keys:
// scaling.BulkBatch (a 64th of it, from 4096) up to 4M keys. The reading
// and the applying keep two batches, about 100 bytes a line of ~30
// bytes: up to about 1 GB for a store of 256M keys or more. Longer keys
// make shorter batches (maxBatchBytes), so two batches stay within about
// 1 GB (their keys' bytes plus about 64 bytes a key) whatever the keys.
func exclusiveBatch(capacity uint64) int { return min(scaling.BulkBatch(capacity), 1<<22) }

// collect queues one key; the batch is applied when full, or earlier so
// that it ends exactly where a --checkpoint or --flush-every falls.
func (b *bulk) collect(it item) error {
	if b.skipLeft > 0 {
		b.skipLeft--
		b.res.Skipped++
		return nil
	}
	id := b.o.id
	if it.hasID {
		id = it.id
	} else if b.op == "remove" && !b.o.idSet && it.line > 0 {
		return &inputError{name: inputName(b.o.from), line: it.line, msg: "no id: remove needs the id each key was added with (KEY<TAB>ID lines, or --id for lines without one)"}
	}
	q := b.batch
	q.buf = append(q.buf, it.key...)
	q.ends = append(q.ends, len(q.buf))
	q.ids = append(q.ids, id)
	q.lines = append(q.lines, it.line)
	full := len(q.buf) >= b.maxBytes
	switch {
	case b.pipe != nil && (full || len(q.ids) == b.maxBatch):
		return b.handOver()
	case b.pipe == nil && (full || uint64(len(q.ids)) >= b.batchLimit()):
		return b.apply(q)
	}
	return nil
}

// batchLimit is the size at which the batch must be applied (unless its
// keys reach b.maxBytes first): b.maxBatch, or
// the keys left until the next checkpoint or flush (a flush counts changed
// keys, never more than the processed ones, so the batch ends at or before
// it).
func (b *bulk) batchLimit() uint64 {
	limit := uint64(b.maxBatch)
	if n := b.o.checkpoint; n > 0 {
		limit = min(limit, n-(b.o.skip+b.res.Processed)%n)
	}
	if n := b.o.flushEvery; n > 0 {
		limit = min(limit, n-b.res.Changed%n)
	}
	return limit
}

// apply adds or removes the keys of q with one AddBatch or RemoveBatch,
// then counts each key's result in order, and empties q.
func (b *bulk) apply(q *batch) error {
	if len(q.ids) == 0 {
		return nil
	}
	defer q.reset()
	q.keys = q.keys[:0]
	start := 0
	for _, end := range q.ends {
		q.keys = append(q.keys, q.buf[start:end:end])
		start = end
	}
	q.results = slices.Grow(q.results[:0], len(q.keys))[:len(q.keys)]
	clear(q.results)
	var batchErr error
	if b.op == "add" {
		batchErr = b.f.AddBatch(q.keys, q.ids)
	} else {
		_, batchErr = b.f.RemoveBatch(q.keys, q.ids, q.results)
	}
	var be *scaling.BatchError
	switch {
	case errors.As(batchErr, &be):
		// The keys before be.Index are done, the one at it failed, those
		// after it were not tried.
		q.results[be.Index], batchErr = be.Err, nil
		q.keys, q.results = q.keys[:be.Index+1], q.results[:be.Index+1]
	case batchErr != nil:
		q.results = q.results[:0] // no key was tried
	}
	// Without --checkpoint and --flush-every, count does only this for a
	// key that succeeded; the loop then reads no key, id or line.
	plain := b.o.checkpoint == 0 && b.o.flushEvery == 0
	var err error
	for i, r := range q.results {
		if r == nil && plain {
			b.res.Changed++
			b.res.Processed++
			continue
		}
		if err = b.count(q.keys[i], q.ids[i], q.lines[i], r); err != nil {
			break
		}
	}
	return errors.Join(err, batchErr)
}

// reset empties q, keeping its buffers.
func (q *batch) reset() {
	q.buf, q.ends, q.ids, q.lines = q.buf[:0], q.ends[:0], q.ids[:0], q.lines[:0]
}

// count tallies one key's result, and writes the checkpoint and flushes
// that --checkpoint and --flush-every ask for.
func (b *bulk) count(key []byte, id uint64, line int, err error) error {
	it := item{key: key, id: id, line: line}
	switch {
	case err == nil:
		b.res.Changed++
	case b.op == "remove" && errors.Is(err, scaling.ErrNotPresent):
		b.res.NotPresent++
		b.missing = appendFirst(b.missing, it.key, id)
	case b.op == "remove" && errors.Is(err, scaling.ErrAmbiguous):
		b.res.Ambiguous++
		b.ambiguous = appendFirst(b.ambiguous, it.key, id)
	default:
		err = explain(b.res.Path, err)
		if it.line > 0 {
			return fmt.Errorf("%s:%d: %s %q: %w", inputName(b.o.from), it.line, b.op, it.key, err)
		}
		return fmt.Errorf("%s %q: %w", b.op, it.key, err)
	}
	b.res.Processed++
	// Checkpoints count the keys of the input, those --skip passed over
	// included: "checkpoint N" is what a later --skip resumes from.
	if pos := b.o.skip + b.res.Processed; b.o.checkpoint > 0 && pos%b.o.checkpoint == 0 {
		fmt.Fprintf(b.a.stderr, "checkpoint %d\n", pos)
	}
	if b.o.flushEvery > 0 && b.res.Changed > 0 && b.res.Changed%b.o.flushEvery == 0 && err == nil {
		if err := b.f.Flush(); err != nil {
			return fmt.Errorf("flush after %d %ss: %w", b.res.Changed, b.op, err)
		}
	}
	return nil
}

// finish flushes (unless --no-flush), records the file's numbers and
// closes it, joining its errors to runErr, the error of the run.
func (b *bulk) finish(runErr error) error {
	// Whatever happened, every operation that returned is complete: make
	// them durable (unless told not to) and release the writer slot.
	// After a lock timeout the flush would wait for the same lock again:
	// --lock-timeout bounds the whole command, so it is skipped (every
	// completed change is in the page cache, visible to every process).
	b.lockTimedOut = errors.Is(runErr, scaling.ErrLockTimeout)
	if !b.o.noFlush && !b.lockTimedOut {
		if ferr := b.f.Flush(); ferr != nil {
			runErr = errors.Join(runErr, fmt.Errorf("flush: %w", explain(b.res.Path, ferr)))
		} else {
			b.res.Flushed = true
		}
	}
	st := b.f.Stats()
	b.res.MemSeqnum, b.res.DiskSeqnum, b.res.Items, b.res.Filters = st.MemSeqnum, st.DiskSeqnum, st.Count, len(st.Filters)
	if cerr := b.f.Close(); cerr != nil {
		runErr = errors.Join(runErr, explain(b.res.Path, cerr))
	}
	return runErr
}

// logSummary writes the one-line summary to stderr (unless --quiet).
func (b *bulk) logSummary() {
	res := &b.res
	past := map[string]string{"add": "added", "remove": "removed"}[b.op]
	flushed := "flushed"
	switch {
	case b.lockTimedOut && !b.o.noFlush:
		flushed = "not flushed (the lock is still held elsewhere; 'dabloomsctl flush' later makes the changes durable)"
	case !res.Flushed:
		flushed = "not flushed"
	}
	skipped := ""
	if b.op == "remove" {
		skipped = fmt.Sprintf(" (%d not present, %d ambiguous)", res.NotPresent, res.Ambiguous)
	}
	if res.Skipped > 0 {
		skipped += fmt.Sprintf(" after skipping %d", res.Skipped)
	}
	rate := float64(res.Processed) / max(res.Seconds, 1e-9)
	b.a.logf("%s %d key(s) of %d processed%s in %s (%s keys/s); %s; mem_seqnum %d, %d item(s) in %d filter(s)",
		past, res.Changed, res.Processed, skipped, fmtSeconds(res.Seconds), fmtCount(rate), flushed, res.MemSeqnum, res.Items, res.Filters)
}

// skipped warns of the keys remove left alone, and returns an error if
// there were any.
func (b *bulk) skipped() error {
	for _, m := range b.missing {
		b.a.warnf("not present: %s", m)
	}
	for _, m := range b.ambiguous {
		b.a.warnf("ambiguous: %s", m)
	}
	var why []string
	if b.res.NotPresent > 0 {
		why = append(why, fmt.Sprintf("%d key(s) were not present in a filter for their id", b.res.NotPresent))
	}
	if b.res.Ambiguous > 0 {
		why = append(why, fmt.Sprintf("%d key(s) were present in several filters for their id (ambiguous: not removed)", b.res.Ambiguous))
	}
	if len(why) > 0 {
		return fmt.Errorf("%s; nothing changed for them", strings.Join(why, ", and "))
	}
	return nil
}

// joinFirst is errors.Join(first, then), or the one that is not nil.
func joinFirst(first, then error) error {
	if first == nil {
		return then
	}
	return errors.Join(first, then)
}

// appendFirst appends `"key" (id N)` to list if it holds fewer than ten.
func appendFirst(list []string, key []byte, id uint64) []string {
	if len(list) < 10 {
		list = append(list, fmt.Sprintf("%q (id %d)", key, id))
	}
	return list
}
