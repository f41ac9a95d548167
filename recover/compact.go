package recover

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/dablooms/dablooms/mmapfile"
	"github.com/dablooms/dablooms/scaling"
)

// CompactOptions configure Compact. A nil *CompactOptions means the zero
// value.
type CompactOptions struct {
	// Capacity, if not 0, is the capacity of the compacted filter: Compact
	// then calls the Source once (no counting pass). If the Source yields
	// more keys than that, the new chain grows past one filter as any
	// chain does.
	Capacity uint64
	// Headroom is the room left for Adds after the compaction, as a
	// fraction of the live keys counted (default DefaultCompactHeadroom;
	// a negative value means none). Ignored with Capacity.
	Headroom float64
	// FirstID and LastID bound the ids the Source is asked for. Zero
	// values mean the whole store: [0, header.MaxID]. In a file that has
	// retired filters (scaling.Filter.RetireBefore), set FirstID to the
	// cut last passed to RetireBefore, so that keys the Source still holds
	// below the window do not come back. The file cannot tell: a key added
	// late (docs/FORMAT.md, Late-add index) lives in a filter whose range
	// starts above its id, so the oldest range left is not a safe bound.
	// A key the Source does not yield is not in the compacted file: do
	// not Remove it afterwards (removing a key that is not there takes
	// counts from other keys; scaling's package doc).
	FirstID, LastID uint64
	// Wait is how long to wait for other handles to close a file older
	// than format 1.3 (0 refuses at once with ErrBusy), or, for a newer
	// one, for the growth lock and the writers' operations in flight (at
	// least scaling.DefaultLockTimeout).
	Wait time.Duration

	knobs *testknobs.Knobs // the module's tests (internal/testknobs)
}

// DefaultCompactHeadroom is CompactOptions.Headroom's default: the compacted
// filter holds the live keys plus 10%.
const DefaultCompactHeadroom = 0.10

// MinCompactCapacity is the smallest capacity Compact gives the compacted
// filter when it sizes it from the keys it counted.
const MinCompactCapacity = 1024

// compactChunk is how many keys Compact hands AddBatch at a time:
// scaling.BulkBatch (a 64th of the capacity, from 4096) up to 16M keys,
// at most 80 bytes a key of memory while it runs (the key's slice, id,
// arena share and AddBatch's sort). Compact of 1e9 keys took 156 s
// (docs/PERFORMANCE.md, "A billion keys").
func compactChunk(capacity uint64) int { return min(scaling.BulkBatch(capacity), 1<<24) }

// CompactReport is what Compact did.
type CompactReport struct {
	Path string
	// FiltersBefore and FiltersAfter are the chain's live filters.
	FiltersBefore, FiltersAfter int
	// Counted is the number of keys the counting pass saw (0 with
	// CompactOptions.Capacity); Keys the number added to the new file.
	Counted, Keys uint64
	// Capacity is the capacity of the compacted filter.
	Capacity uint64
	// FirstID and LastID are the id range the Source was asked for.
	FirstID, LastID uint64
	// SizeBefore and SizeAfter are the file's size in bytes.
	SizeBefore, SizeAfter int64
	Duration              time.Duration
}

// ErrCompactSource wraps the error of a Source (or of an add it called)
// that stopped Compact; the file was left as it was.
var ErrCompactSource = errors.New("recover: compact: the source failed")

// Compact rebuilds the chain of the file at path into one right-sized
// filter from the application's source of truth, src. A long chain costs
// every lookup (Contains asks each filter: measured absent-key lookups of 69
// ns with 1 filter, 2,055 ns with 44, 8,377 ns with 64); a compacted file
// answers as a one-filter file does.
//
// Compact calls src twice over the ids [FirstID, LastID] of o (by default
// the whole store): once to count the live keys, once to add them (one call
// with o.Capacity set). The compacted filter's capacity is the count plus
// o.Headroom (10% by default, so that the next Adds do not grow the chain
// at once), and at least MinCompactCapacity. The new file keeps the
// original's seed (so key hashes stay the same), error rate, growth factor,
// tightening ratio and counter layout; its capacity parameter is the
// compacted filter's, so filters appended later grow from it. Every key is
// added with the id src gives it: the ids still route Removes, the one
// filter's range covering them all. Keys of the file that src does not
// yield (removed rows, for instance) are gone, up to the false-positive rate
// of the new filter, which is at most that of the old chain.
//
// Compact holds the file as Repair does for a rewrite in place. A file of
// format 1.3 it freezes (scaling.Freeze): handles stay open, their Adds and
// Removes wait until the compacted file is in place (at most their lock
// timeout) and then go to it, their lookups answer from the old file until
// then, and every handle moves to the compacted file. The Source is called
// while the file is frozen, so it sees every modification that returned. An
// older file it takes exclusively (the growth lock, every writer slot and
// the open lock, which every handle holds shared for its lifetime): it
// refuses with an error wrapping ErrBusy (mmapfile.ErrBusy,
// scaling.ErrBusy) while any handle has it open, unless o.Wait lets it
// wait; Open meanwhile waits for it (at most its lock timeout) and then
// opens the compacted file. The new file is built aside, in the same directory under
// a hidden temporary name (".NAME.compact-XXXXXXXXXXXXXXXX"), with
// scaling.Create and AddBatch, flushed (so durable and clean), checked with
// Verify, and renamed over path; the directory is then synced. The
// original's bytes are never written: a failure before the rename (a Source
// error, a full disk) leaves it as it was and removes the temporary file,
// and a crash at any point leaves either the old file or the new one at
// path. A crash can leave the temporary file (or the one scaling.Create
// made it from, "..NAME.compact-XXXXXXXXXXXXXXXX.new-XXXXXXXXXXXXXXXX")
// behind; nothing opens such a name, and the next Compact of path removes
// them once it holds the file exclusively. The original is not kept: take a
// Backup first if the Source may be incomplete.
//
// The file's counters need not be trustworthy (a dirty or interrupted file
// compacts as well, since nothing of them is kept), but its metadata must
// be readable: ErrUnrepairable otherwise. The error wraps ErrCompactSource
// when src failed. The report is nil when the error is not.
func Compact(path string, src Source, o *CompactOptions) (*CompactReport, error) {
	return CompactContext(context.Background(), path, src, o)
}

// CompactContext is Compact, stopped when ctx is done: the Source's adds
// then fail with ctx's error, the file is left as it was, and the error
// wraps ctx's (a cancellation after the rename is too late to stop it).
func CompactContext(ctx context.Context, path string, src Source, o *CompactOptions) (*CompactReport, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, fmt.Errorf("%w (Compact)", ErrNoSource)
	}
	opt, err := compactOptions(o)
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	hold, err := holdForRewrite(path, opt.Wait)
	if err != nil {
		return nil, err
	}
	defer hold.release()
	f, size := hold.f, hold.size
	removeCompactLeftovers(path)

	src = ctxSource(ctx, src)
	a, err := analyze(withContext(ctx, &fileImage{f: f, size: size}), currentBoot(opt.knobs), nil)
	if err != nil {
		return nil, fmt.Errorf("recover: reading %s: %w", path, err)
	}
	if a.meta == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnrepairable, path)
	}
	rep := &CompactReport{Path: path, FiltersBefore: len(a.filters), SizeBefore: size}
	rep.FirstID, rep.LastID = compactRange(&opt)

	rep.Capacity = opt.Capacity
	if rep.Capacity == 0 {
		err := src(rep.FirstID, rep.LastID, func([]byte, uint64) error { rep.Counted++; return nil })
		if err != nil {
			return nil, fmt.Errorf("%w: counting the keys: %w", ErrCompactSource, err)
		}
		rep.Capacity = compactCapacity(rep.Counted, opt.Headroom)
	}

	tmp, err := buildCompacted(path, f, a.meta.Params, src, rep, &opt)
	if err != nil {
		return nil, err
	}
	if err := installCompacted(ctx, tmp, path, hold); err != nil {
		return nil, err
	}
	if st, err := os.Stat(path); err == nil {
		rep.SizeAfter = st.Size()
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// compactOptions checks o and returns its value (the zero value for nil).
func compactOptions(o *CompactOptions) (CompactOptions, error) {
	var opt CompactOptions
	if o != nil {
		opt = *o
	}
	if math.IsNaN(opt.Headroom) || math.IsInf(opt.Headroom, 0) || opt.Headroom > 1e6 {
		return opt, fmt.Errorf("%w: CompactOptions.Headroom %v", scaling.ErrInvalidOption, opt.Headroom)
	}
	if opt.LastID != 0 && opt.FirstID > opt.LastID {
		return opt, fmt.Errorf("%w: CompactOptions.FirstID %d > LastID %d", scaling.ErrInvalidOption, opt.FirstID, opt.LastID)
	}
	return opt, nil
}

// installCompacted renames the compacted file tmp over path, held by
// hold, unless ctx is done first (the last moment nothing was replaced).
func installCompacted(ctx context.Context, tmp, path string, hold *rewriteHold) error {
	if err := ctx.Err(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("recover: %w", err)
	}
	err := mmapfile.SyncDir(filepath.Dir(path))
	hold.done() // the handles of the old file move to the new one, whatever err
	if err != nil {
		return fmt.Errorf("recover: the compacted file is in place, but: %w", err)
	}
	return nil
}

// compactRange is the id range Compact asks the Source for (see
// CompactOptions.FirstID).
func compactRange(opt *CompactOptions) (first, last uint64) {
	first, last = opt.FirstID, opt.LastID
	if last == 0 {
		last = header.MaxID
	}
	return first, last
}

// compactCapacity sizes the compacted filter for n live keys.
func compactCapacity(n uint64, headroom float64) uint64 {
	switch {
	case headroom == 0:
		headroom = DefaultCompactHeadroom
	case headroom < 0:
		headroom = 0
	}
	// Rounded up, but not for the float error of n·headroom (3000·0.1 is
	// 300.00000000000006).
	extra := math.Ceil(float64(n)*headroom - 1e-6)
	if float64(n)+extra >= float64(header.MaxFileSize) {
		return header.MaxFileSize // scaling.Create says it does not fit
	}
	return max(n+uint64(max(extra, 0)), MinCompactCapacity)
}

// buildCompacted makes the compacted file beside path, adds src's keys,
// flushes and verifies it, and returns its name. On failure it removes it.
func buildCompacted(path string, orig *os.File, p header.Params, src Source, rep *CompactReport, opt *CompactOptions) (_ string, err error) {
	var tok [8]byte
	rand.Read(tok[:])
	name := filepath.Join(filepath.Dir(path), compactPrefix(filepath.Base(path))+hex.EncodeToString(tok[:]))
	nf, err := scaling.Create(name, withKnobs(&scaling.Options{
		Capacity: rep.Capacity, ErrorRate: p.ErrorRate, GrowthFactor: p.GrowthFactor,
		TighteningRatio: p.TighteningRatio, Seed: p.Seed, Layout: counting4.Layout(p.LayoutID),
		Exclusive: true, // nothing else has the file made aside: the faster writes
	}, opt.knobs))
	if err != nil {
		return "", fmt.Errorf("recover: creating the compacted file: %w", err)
	}
	defer func() {
		if nf != nil {
			nf.Close()
		}
		if err != nil {
			os.Remove(name)
		}
	}()
	if st, e := orig.Stat(); e == nil {
		os.Chmod(name, st.Mode().Perm())
	}
	b := newKeyBatcher(nf, name, compactChunk(rep.Capacity), &rep.Keys)
	err = src(rep.FirstID, rep.LastID, b.add)
	switch {
	case b.addErr != nil:
		return "", b.addErr
	case err != nil:
		return "", fmt.Errorf("%w: adding the keys: %w", ErrCompactSource, err)
	}
	if err = b.flush(); err != nil {
		return "", err
	}
	rep.FiltersAfter = len(nf.Stats().Filters)
	if err = nf.Flush(); err != nil {
		return "", fmt.Errorf("recover: compact: flushing %s: %w", name, err)
	}
	err = nf.Close()
	nf = nil
	if err != nil {
		return "", fmt.Errorf("recover: compact: closing %s: %w", name, err)
	}
	vr, err := VerifyWithOptions(name, withKnobs(&VerifyOptions{}, opt.knobs))
	if err == nil {
		err = vr.Err()
	}
	if err != nil {
		return "", fmt.Errorf("recover: compact: the compacted file does not verify: %w", err)
	}
	return name, nil
}

// keyBatcher hands the keys a Source yields to a new file in batches of
// chunk, its keys copied into one arena per batch.
type keyBatcher struct {
	nf     *scaling.Filter
	name   string
	chunk  int
	keys   [][]byte
	ids    []uint64
	arena  []byte
	added  *uint64 // counts the keys added
	addErr error   // an AddBatch failure, told apart from the Source's own
}

func newKeyBatcher(nf *scaling.Filter, name string, chunk int, added *uint64) *keyBatcher {
	return &keyBatcher{nf: nf, name: name, chunk: chunk, added: added,
		keys: make([][]byte, 0, chunk), ids: make([]uint64, 0, chunk), arena: make([]byte, 0, 32*chunk)}
}

// add is the Source's callback.
func (b *keyBatcher) add(key []byte, id uint64) error {
	if len(b.arena)+len(key) > cap(b.arena) && len(b.keys) > 0 {
		// The keys point into arena: hand them over before it moves.
		if b.addErr = b.flush(); b.addErr != nil {
			return b.addErr
		}
	}
	b.arena = append(b.arena, key...)
	b.keys = append(b.keys, b.arena[len(b.arena)-len(key):len(b.arena):len(b.arena)])
	b.ids = append(b.ids, id)
	if len(b.keys) == b.chunk {
		b.addErr = b.flush()
	}
	return b.addErr
}

// flush adds the batch held so far.
func (b *keyBatcher) flush() error {
	if len(b.keys) == 0 {
		return nil
	}
	if err := b.nf.AddBatch(b.keys, b.ids); err != nil {
		return fmt.Errorf("recover: compact: adding to %s: %w", b.name, err)
	}
	*b.added += uint64(len(b.keys))
	b.keys, b.ids, b.arena = b.keys[:0], b.ids[:0], b.arena[:0]
	return nil
}

// compactPrefix is the start of the names of Compact's temporary files for
// a file named base.
func compactPrefix(base string) string { return "." + base + ".compact-" }

// isCompactLeftover reports whether name is a temporary file of a Compact
// of the file named base: ".BASE.compact-" and 16 hex digits, or the name
// scaling.Create made that from, "." before it and ".new-" and 16 hex digits
// after it.
func isCompactLeftover(name, base string) bool {
	hex16 := func(s string) bool {
		if len(s) != 16 {
			return false
		}
		_, err := hex.DecodeString(s)
		return err == nil
	}
	rest, ok := strings.CutPrefix(name, compactPrefix(base))
	if !ok {
		if rest, ok = strings.CutPrefix(name, "."+compactPrefix(base)); !ok {
			return false
		}
		tok, suffix, ok := strings.Cut(rest, ".new-")
		return ok && hex16(tok) && hex16(suffix)
	}
	return hex16(rest)
}

// removeCompactLeftovers removes what a Compact of path that crashed left
// in its directory. The caller holds the file at path exclusively, so no
// Compact of it is running: one makes its temporary files only while it
// holds the file, and removes or renames them before it lets go.
func removeCompactLeftovers(path string) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.Type().IsRegular() && isCompactLeftover(e.Name(), base) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
